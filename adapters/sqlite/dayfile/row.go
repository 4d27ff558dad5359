package dayfile

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// A message is one row of messages: its fields as columns, times and
// durations in microseconds, headers as JSON objects of name -> values,
// headers and bodies compressed in content since schema version 7
// (content.go).

// MessageColumns are the columns a message is read from, in
// File.ScanMessage's order.
const MessageColumns = `id, reference, account, domain, name, ip_address, method, path, status, duration,
	created, updated, visible, expires, request_header, request_body, request_type, request_size,
	response_header, response_body, response_type, response_size, route, rules, content, sample_rate, bodies_expires`

// insertMessage inserts a row: rowValues' values.
const insertMessage = `INSERT INTO messages(` + MessageColumns + `, subject_tokens)
	VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING`

// microsOrZero is t in Unix microseconds, 0 for the zero time.
func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// nullTokens is a row's subject_tokens: NULL for none.
func nullTokens(tokens []byte) any {
	if len(tokens) == 0 {
		return nil
	}
	return string(tokens)
}

// nullRoute is a route template as its column holds it: NULL for none.
func nullRoute(route string) any {
	if route == "" {
		return nil
	}
	return route
}

// rowValues are m's column values in MessageColumns' order, its headers
// and bodies as textColumns writes them, then its subject_tokens (nil for
// none).
func rowValues(m domain.Message, p *packer, subjectTokens []byte) ([]any, error) {
	texts, err := textColumns(m, p)
	if err != nil {
		return nil, err
	}
	var duration any
	if m.HasDuration {
		duration = m.Duration.Microseconds()
	}
	return []any{m.ID, m.Reference, m.Account, m.Domain, m.Name, m.IPAddress, m.Method, m.Path,
		m.StatusCode, duration, m.CreatedAt.UnixMicro(), m.UpdatedAt.UnixMicro(), m.VisibleAt.UnixMicro(),
		m.ExpiresAt.UnixMicro(), texts.requestHeader, texts.requestBody, m.Request.ContentType, m.Request.Size,
		texts.responseHeader, texts.responseBody, m.Response.ContentType, m.Response.Size, nullRoute(m.Route), rulesValue(m.Rules),
		texts.content, m.SampleRate, microsOrZero(m.BodiesExpireAt), nullTokens(subjectTokens)}, nil
}

// storedTexts are the values of a message's columns request_header,
// request_body, response_header, response_body and content.
type storedTexts struct {
	requestHeader, requestBody, responseHeader, responseBody, content any
}

// textColumns are m's headers and bodies as a row stores them: compressed
// by p into content, the four text columns ”, when that is smaller; as
// text, content NULL, when not or when p is nil (Layout.Plain). A value p
// packed is valid until its next use. Append and a re-scrub's Rewrite
// both write them so.
func textColumns(m domain.Message, p *packer) (storedTexts, error) {
	reqHeader, err := json.Marshal(m.Request.Header)
	if err != nil {
		return storedTexts{}, fmt.Errorf("message %s: request headers: %w", m.ID, err)
	}
	respHeader, err := json.Marshal(m.Response.Header)
	if err != nil {
		return storedTexts{}, fmt.Errorf("message %s: response headers: %w", m.ID, err)
	}
	if p != nil {
		if content := p.pack(reqHeader, m.Request.Body, respHeader, m.Response.Body); content != nil {
			return storedTexts{"", "", "", "", content}, nil
		}
	}
	return storedTexts{string(reqHeader), m.Request.Body, string(respHeader), m.Response.Body, nil}, nil
}

// storedRules is a rules record as its column holds it (JSON), NULL when it
// records nothing.
type storedRules struct {
	Version    int64      `json:"v,omitempty"`
	Source     string     `json:"s,omitempty"`
	Rescrubbed int64      `json:"r,omitempty"`
	Changes    [][]string `json:"c,omitempty"` // [rule, field]
	Submitted  string     `json:"d,omitempty"`
}

func rulesValue(r domain.RulesRecord) any {
	if r.IsZero() {
		return nil
	}
	s := storedRules{Version: r.Version, Source: r.Source, Rescrubbed: r.Rescrubbed, Submitted: r.Submitted}
	for _, c := range r.Changes {
		s.Changes = append(s.Changes, []string{c.Rule, c.Field})
	}
	raw, _ := json.Marshal(s) // strings and numbers always encode
	return string(raw)
}

func decodeRules(raw []byte) (domain.RulesRecord, error) {
	if raw == nil {
		return domain.RulesRecord{}, nil
	}
	var s storedRules
	if err := json.Unmarshal(raw, &s); err != nil {
		return domain.RulesRecord{}, err
	}
	r := domain.RulesRecord{Version: s.Version, Source: s.Source, Rescrubbed: s.Rescrubbed, Submitted: s.Submitted}
	for _, c := range s.Changes {
		if len(c) != 2 {
			return domain.RulesRecord{}, fmt.Errorf("a change of %d members, not [rule, field]", len(c))
		}
		r.Changes = append(r.Changes, domain.RuleChange{Rule: c[0], Field: c[1]})
	}
	return r, nil
}

// Scanner is *sql.Row or *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// scanMessage reads a row of MessageColumns, then of extra's columns
// into extra, its content inflated with the dictionary dict finds
// (File.ScanMessage).
func scanMessage(row Scanner, dict func(id uint64) *dictCodec, extra ...any) (domain.Message, error) {
	var (
		m                                     domain.Message
		duration                              sql.NullInt64
		route                                 sql.NullString
		created, updated, visible, expires    int64
		bodiesExpire                          int64
		reqHeader, respHeader, rules, content []byte
	)
	err := row.Scan(append([]any{&m.ID, &m.Reference, &m.Account, &m.Domain, &m.Name, &m.IPAddress, &m.Method, &m.Path,
		&m.StatusCode, &duration, &created, &updated, &visible, &expires,
		&reqHeader, &m.Request.Body, &m.Request.ContentType, &m.Request.Size,
		&respHeader, &m.Response.Body, &m.Response.ContentType, &m.Response.Size, &route, &rules, &content, &m.SampleRate, &bodiesExpire}, extra...)...)
	if err != nil {
		return domain.Message{}, err
	}
	if content != nil {
		t, err := unpack(content, dict)
		if err != nil {
			return domain.Message{}, fmt.Errorf("message %s: stored headers and bodies: %w", m.ID, err)
		}
		reqHeader, respHeader = t.requestHeader, t.responseHeader
		m.Request.Body, m.Response.Body = string(t.requestBody), string(t.responseBody)
	}
	if m.Request.Header, err = decodeHeader(reqHeader); err != nil {
		return domain.Message{}, fmt.Errorf("message %s: request headers: %w", m.ID, err)
	}
	if m.Response.Header, err = decodeHeader(respHeader); err != nil {
		return domain.Message{}, fmt.Errorf("message %s: response headers: %w", m.ID, err)
	}
	if m.Rules, err = decodeRules(rules); err != nil {
		return domain.Message{}, fmt.Errorf("message %s: rules record: %w", m.ID, err)
	}
	m.Route = route.String
	m.CreatedAt, m.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	m.VisibleAt, m.ExpiresAt = time.UnixMicro(visible).UTC(), time.UnixMicro(expires).UTC()
	if bodiesExpire != 0 {
		m.BodiesExpireAt = time.UnixMicro(bodiesExpire).UTC()
	}
	if duration.Valid {
		m.Duration, m.HasDuration = time.Duration(duration.Int64)*time.Microsecond, true
	}
	return m, nil
}

// decodeHeader reads a stored header object (json.Marshal's of a
// domain.Header); a header without values reads back as [] (never nil), as it
// was submitted. It walks the object with jsonbytes rather than
// encoding/json's reflection: reading a page of messages spent half its CPU
// in json.Unmarshal (BenchmarkListPages).
func decodeHeader(raw []byte) (domain.Header, error) {
	raw = bytes.TrimSpace(raw)
	if jsonbytes.KindOf(raw) != jsonbytes.Object || !jsonbytes.IsValid(raw) {
		return nil, errors.New("not a JSON object")
	}
	h := domain.Header{}
	for key, value := range jsonbytes.Members(raw, nil) {
		values := []string{}
		switch jsonbytes.KindOf(value) {
		case jsonbytes.Null:
		case jsonbytes.Array:
			for v := range jsonbytes.Elements(value, nil) {
				if jsonbytes.KindOf(v) != jsonbytes.String {
					return nil, fmt.Errorf("header %s: a value that is not a string", key)
				}
				values = append(values, jsonbytes.Unquote(v))
			}
		default:
			return nil, fmt.Errorf("header %s: not an array of strings", key)
		}
		h[jsonbytes.Unquote(key)] = values
	}
	return h, nil
}
