package record

import (
	"encoding/json"
	"fmt"

	"github.com/reqlog/reqlog/adapters/internal/jsonwire"
	"github.com/reqlog/reqlog/domain"
)

// AppendJSON appends m's record in JSON: exactly what encoding/json writes for
// FromMessage(m) with HTML escaping off (json_test.go checks that), written by
// hand because encoding Elasticsearch's bulk requests was a quarter of the
// service's CPU under load.
func AppendJSON(dst []byte, m domain.Message) []byte {
	return append(AppendJSONMembers(dst, m), '}')
}

// AppendJSONMembers is AppendJSON without the closing brace, for a store that
// adds members of its own (written after these, each with its leading comma).
func AppendJSONMembers(dst []byte, m domain.Message) []byte {
	dst = jsonwire.StringMember(dst, `{"id":`, m.ID)
	dst = jsonwire.StringMember(dst, `,"reference":`, m.Reference)
	dst = jsonwire.StringMember(dst, `,"account":`, m.Account)
	dst = jsonwire.StringMember(dst, `,"domain":`, m.Domain)
	dst = jsonwire.StringMember(dst, `,"name":`, m.Name)
	if m.IPAddress != "" {
		dst = jsonwire.StringMember(dst, `,"ip_address":`, m.IPAddress)
	}
	dst = jsonwire.StringMember(dst, `,"method":`, m.Method)
	dst = jsonwire.StringMember(dst, `,"path":`, m.Path)
	dst = jsonwire.StringMember(dst, `,"route":`, domain.RouteOf(m.Path))
	dst = jsonwire.IntMember(dst, `,"status_code":`, int(int32(m.StatusCode)))
	if m.HasDuration {
		dst = appendMillis(append(dst, `,"duration_ms":`...), DurationMicros(m.Duration.Microseconds()))
	}
	dst = append(dst, `,"request":`...)
	dst = appendContent(dst, m.Request)
	dst = append(dst, `,"response":`...)
	dst = appendContent(dst, m.Response)
	dst = jsonwire.TimeMember(dst, `,"created_at":`, m.CreatedAt)
	dst = jsonwire.TimeMember(dst, `,"updated_at":`, m.UpdatedAt)
	dst = jsonwire.TimeMember(dst, `,"visible_at":`, m.VisibleAt)
	dst = jsonwire.TimeMember(dst, `,"expires_at":`, m.ExpiresAt)
	return dst
}

// appendContent writes headers sorted by name, so documents are deterministic.
func appendContent(dst []byte, c domain.Content) []byte {
	var onStack [32]string // enough for typical headers without a heap allocation
	dst = append(dst, `{"header":[`...)
	for i, name := range jsonwire.SortedNames(onStack[:0], c.Header) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonwire.StringMember(dst, `{"name":`, name)
		dst = append(dst, `,"values":[`...)
		for j, value := range c.Header[name] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonwire.AppendString(dst, value)
		}
		dst = append(dst, "]}"...)
	}
	dst = jsonwire.StringMember(dst, `],"body":`, c.Body)
	dst = jsonwire.StringMember(dst, `,"content_type":`, c.ContentType)
	dst = jsonwire.IntMember(dst, `,"size":`, c.Size)
	return append(dst, '}')
}

// DecodeJSON reads a record written in JSON (an Elasticsearch _source) back
// into a message. Members it does not know are ignored.
func DecodeJSON(data []byte) (domain.Message, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return domain.Message{}, fmt.Errorf("decode stored message: %w", err)
	}
	return r.Message(), nil
}
