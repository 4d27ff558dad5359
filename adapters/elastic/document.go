package elastic

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/adapters/internal/jsonwire"
	"github.com/reqlog/reqlog/domain"
)

// document is a message as stored, read back from _source: the fields of
// mappings.json. Times are the API's strings (UTC, six fractional digits), exact
// at the microsecond the domain keeps, and indexed as date_nanos.
type document struct {
	ID         string `json:"id"`
	Reference  string `json:"reference"`
	Account    string `json:"account"`
	Domain     string `json:"domain"`
	Name       string `json:"name"`
	IPAddress  string `json:"ip_address,omitempty"` // "" is no address, not a value of type ip
	Method     string `json:"method"`
	Path       string `json:"path"`
	Route      string `json:"route"` // the path without its query string, for top paths
	StatusCode int    `json:"status_code"`
	// DurationMS is absent when the message has none: such messages fall out
	// of every duration range and percentile.
	DurationMS *float64 `json:"duration_ms,omitempty"`
	Request    content  `json:"request"`
	Response   content  `json:"response"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
	VisibleAt  string   `json:"visible_at"`
	ExpiresAt  string   `json:"expires_at"`
	// The full-text field "text" follows, indexed but left out of _source
	// (searchedTexts), so it is never read back.
}

// content is one side of the exchange, kept in _source only (enabled: false).
type content struct {
	// Header is a list rather than an object: header names such as "X.Y" or
	// "$x" would otherwise be read as object paths by Elasticsearch.
	Header      []headerField `json:"header"`
	Body        string        `json:"body"`
	ContentType string        `json:"content_type"`
	Size        int           `json:"size"`
}

type headerField struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// The range of date_nanos: a time outside it cannot be stored.
var (
	minStorableTime = time.Unix(0, 0).UTC()
	maxStorableTime = time.Unix(0, 1<<63-1).UTC().Truncate(time.Microsecond)
)

// appendDocument appends m as stored: exactly what encoding/json writes for the
// document struct (document_test.go checks that), written by hand because
// encoding a bulk request was a quarter of the service's CPU under load.
// Headers are written sorted by name, so documents are deterministic.
func appendDocument(dst []byte, m domain.Message) []byte {
	dst = jsonwire.StringMember(dst, `{"id":`, m.ID)
	dst = jsonwire.StringMember(dst, `,"reference":`, m.Reference)
	dst = jsonwire.StringMember(dst, `,"account":`, m.Account)
	dst = jsonwire.StringMember(dst, `,"domain":`, m.Domain)
	dst = jsonwire.StringMember(dst, `,"name":`, m.Name)
	if m.IPAddress != "" { // "" is no address, not a value of type ip
		dst = jsonwire.StringMember(dst, `,"ip_address":`, m.IPAddress)
	}
	dst = jsonwire.StringMember(dst, `,"method":`, m.Method)
	dst = jsonwire.StringMember(dst, `,"path":`, m.Path)
	dst = jsonwire.StringMember(dst, `,"route":`, domain.RouteOf(m.Path))
	dst = jsonwire.IntMember(dst, `,"status_code":`, m.StatusCode)
	if ms, ok := m.DurationMS(); ok {
		dst = append(dst, `,"duration_ms":`...)
		dst = strconv.AppendFloat(dst, ms, 'f', -1, 64) // as encoding/json writes it
	}
	dst = append(dst, `,"request":`...)
	dst = appendContent(dst, m.Request)
	dst = append(dst, `,"response":`...)
	dst = appendContent(dst, m.Response)
	dst = jsonwire.TimeMember(dst, `,"created_at":`, m.CreatedAt)
	dst = jsonwire.TimeMember(dst, `,"updated_at":`, m.UpdatedAt)
	dst = jsonwire.TimeMember(dst, `,"visible_at":`, m.VisibleAt)
	dst = jsonwire.TimeMember(dst, `,"expires_at":`, m.ExpiresAt)
	dst = append(dst, `,"text":[`...)
	first := true
	searchedTexts(m, func(text string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonwire.AppendString(dst, text)
	})
	return append(dst, "]}"...)
}

// searchedTexts calls yield with each value of the full-text field: the texts
// q searches (domain.SearchedTexts: path, bodies, header values), each cut to
// its first domain.SearchedBodyBytes, empty texts left out, headers in name
// order so documents are deterministic. They are separate values of one
// array, so a phrase never spans two of them (position_increment_gap).
func searchedTexts(m domain.Message, yield func(string)) {
	for _, text := range []string{m.Path, m.Request.Body, m.Response.Body} {
		if text != "" {
			yield(headOf(text, domain.SearchedBodyBytes))
		}
	}
	var onStack [32]string
	for _, h := range []domain.Header{m.Request.Header, m.Response.Header} {
		for _, name := range jsonwire.SortedNames(onStack[:0], h) {
			for _, v := range h[name] {
				if v != "" {
					yield(headOf(v, domain.SearchedBodyBytes))
				}
			}
		}
	}
}

// headOf is the longest prefix of s of at most n bytes that does not split a
// UTF-8 sequence.
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

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

// maxKeywordBytes is the longest term Lucene indexes: a longer keyword value
// fails its document. The domain's limits keep every field far below it.
const maxKeywordBytes = 32766

// checkStorable refuses what the mappings cannot hold, before anything is sent.
func checkStorable(m domain.Message) error {
	if m.ID == "" {
		return fmt.Errorf("has no id")
	}
	for _, kw := range []struct{ name, value string }{
		{"id", m.ID}, {"reference", m.Reference}, {"account", m.Account}, {"domain", m.Domain},
		{"name", m.Name}, {"method", m.Method}, {"path", m.Path}, {"ip_address", m.IPAddress},
	} {
		if len(kw.value) > maxKeywordBytes {
			return fmt.Errorf("id %s: %s takes %d bytes, more than the %d an Elasticsearch keyword holds: %w",
				m.ID, kw.name, len(kw.value), maxKeywordBytes, domain.ErrTooLarge)
		}
	}
	for _, ts := range []struct {
		name string
		t    time.Time
	}{{"CreatedAt", m.CreatedAt}, {"UpdatedAt", m.UpdatedAt}, {"VisibleAt", m.VisibleAt}, {"ExpiresAt", m.ExpiresAt}} {
		if ts.t.Before(minStorableTime) || ts.t.After(maxStorableTime) {
			return fmt.Errorf("%s %s is outside the storable range %s to %s", ts.name,
				domain.FormatTime(ts.t), domain.FormatTime(minStorableTime), domain.FormatTime(maxStorableTime))
		}
	}
	return nil
}

// messageOf is the message d stores, d as read from a hit's _source.
func messageOf(d *document) (domain.Message, error) {
	m := domain.Message{
		ID:         d.ID,
		Reference:  d.Reference,
		Account:    d.Account,
		Domain:     d.Domain,
		Name:       d.Name,
		IPAddress:  d.IPAddress,
		Method:     d.Method,
		Path:       d.Path,
		StatusCode: d.StatusCode,
		Request:    fromContent(d.Request),
		Response:   fromContent(d.Response),
	}
	if d.DurationMS != nil {
		// Exact: the stored number has at most three decimals.
		m.Duration = time.Duration(math.Round(*d.DurationMS*1000)) * time.Microsecond
		m.HasDuration = true
	}
	for _, ts := range []struct {
		raw string
		t   *time.Time
	}{{d.CreatedAt, &m.CreatedAt}, {d.UpdatedAt, &m.UpdatedAt}, {d.VisibleAt, &m.VisibleAt}, {d.ExpiresAt, &m.ExpiresAt}} {
		t, err := time.Parse(time.RFC3339Nano, ts.raw)
		if err != nil {
			return domain.Message{}, fmt.Errorf("decode stored message %s: %w", d.ID, err)
		}
		*ts.t = t.UTC()
	}
	return m, nil
}

// fromContent takes c's slices, which the decoder made for it alone.
func fromContent(c content) domain.Content {
	h := make(domain.Header, len(c.Header))
	for _, f := range c.Header {
		if f.Values == nil {
			f.Values = []string{} // stored as [], read as an empty list as before
		}
		h[f.Name] = f.Values
	}
	return domain.Content{Header: h, Body: c.Body, ContentType: c.ContentType, Size: c.Size}
}

// queryTime renders an instant for queries with all nine fractional digits, so
// that bounds compare exactly as the memory store compares time.Time values.
func queryTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}
