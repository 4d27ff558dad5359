package record

import (
	"encoding/json"
	"fmt"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/domain/stats"
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
	dst = jsonbytes.StringMember(dst, `{"id":`, m.ID)
	dst = jsonbytes.StringMember(dst, `,"reference":`, m.Reference)
	dst = jsonbytes.StringMember(dst, `,"account":`, m.Account)
	dst = jsonbytes.StringMember(dst, `,"domain":`, m.Domain)
	dst = jsonbytes.StringMember(dst, `,"name":`, m.Name)
	if m.IPAddress != "" {
		dst = jsonbytes.StringMember(dst, `,"ip_address":`, m.IPAddress)
	}
	dst = jsonbytes.StringMember(dst, `,"method":`, m.Method)
	dst = jsonbytes.StringMember(dst, `,"path":`, m.Path)
	dst = jsonbytes.StringMember(dst, `,"route":`, stats.PathOf(m.Path))
	if m.Route != "" {
		dst = jsonbytes.StringMember(dst, `,"route_template":`, m.Route)
	}
	dst = jsonbytes.IntMember(dst, `,"status_code":`, int(int32(m.StatusCode)))
	if m.HasDuration {
		dst = appendMillis(append(dst, `,"duration_ms":`...), DurationMicros(m.Duration.Microseconds()))
	}
	dst = append(dst, `,"request":`...)
	dst = appendContent(dst, m.Request)
	dst = append(dst, `,"response":`...)
	dst = appendContent(dst, m.Response)
	dst = jsonbytes.TimeMember(dst, `,"created_at":`, m.CreatedAt, domain.TimeLayout)
	dst = jsonbytes.TimeMember(dst, `,"updated_at":`, m.UpdatedAt, domain.TimeLayout)
	dst = jsonbytes.TimeMember(dst, `,"visible_at":`, m.VisibleAt, domain.TimeLayout)
	dst = jsonbytes.TimeMember(dst, `,"expires_at":`, m.ExpiresAt, domain.TimeLayout)
	if m.SampleRate != 0 {
		dst = jsonbytes.IntMember(dst, `,"sample_rate":`, int(int32(m.SampleRate)))
	}
	if m.Tally {
		dst = append(dst, `,"tally":true`...)
	}
	if m.RetentionRule != "" {
		dst = jsonbytes.StringMember(dst, `,"retention_rule":`, m.RetentionRule)
	}
	if !m.BodiesExpireAt.IsZero() {
		dst = jsonbytes.TimeMember(dst, `,"bodies_expire_at":`, m.BodiesExpireAt, domain.TimeLayout)
	}
	if !m.Rules.IsZero() {
		dst = AppendRules(append(dst, `,"rules":`...), m.Rules)
	}
	if len(m.Subjects) > 0 {
		dst = append(dst, `,"subjects":[`...)
		for i, h := range m.Subjects {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonbytes.AppendString(dst, h)
		}
		dst = append(dst, ']')
	}
	return dst
}

// AppendRules writes a rules record as Rules's json tags do.
func AppendRules(dst []byte, r domain.RulesRecord) []byte {
	dst = append(dst, '{')
	sep := ""
	if r.Version != 0 {
		dst = jsonbytes.IntMember(dst, `"version":`, int(r.Version))
		sep = ","
	}
	if r.Source != "" {
		dst = jsonbytes.StringMember(dst, sep+`"source":`, r.Source)
		sep = ","
	}
	if r.Rescrubbed != 0 {
		dst = jsonbytes.IntMember(dst, sep+`"rescrubbed":`, int(r.Rescrubbed))
		sep = ","
	}
	if r.Submitted != "" {
		dst = jsonbytes.StringMember(dst, sep+`"submitted":`, r.Submitted)
		sep = ","
	}
	if len(r.Changes) > 0 {
		dst = append(dst, sep+`"changes":[`...)
		for i, c := range r.Changes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonbytes.StringMember(dst, `{"rule":`, c.Rule)
			dst = jsonbytes.StringMember(dst, `,"field":`, c.Field)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendContent writes headers sorted by name, so documents are deterministic.
func appendContent(dst []byte, c domain.Content) []byte {
	dst = appendHeaders(append(dst, `{"header":`...), c.Header)
	dst = jsonbytes.StringMember(dst, `,"body":`, c.Body)
	dst = jsonbytes.StringMember(dst, `,"content_type":`, c.ContentType)
	dst = jsonbytes.IntMember(dst, `,"size":`, c.Size)
	return append(dst, '}')
}

// AppendScrubbed writes a side's headers and body alone, what a rewrite
// of the message changes of it: {"header":[...],"body":...}.
func AppendScrubbed(dst []byte, c domain.Content) []byte {
	dst = appendHeaders(append(dst, `{"header":`...), c.Header)
	return append(jsonbytes.StringMember(dst, `,"body":`, c.Body), '}')
}

// appendHeaders writes a header list sorted by name.
func appendHeaders(dst []byte, h domain.Header) []byte {
	var onStack [32]string // enough for typical headers without a heap allocation
	dst = append(dst, '[')
	for i, name := range jsonbytes.SortedKeys(onStack[:0], h) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonbytes.StringMember(dst, `{"name":`, name)
		dst = append(dst, `,"values":[`...)
		for j, value := range h[name] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonbytes.AppendString(dst, value)
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']')
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
