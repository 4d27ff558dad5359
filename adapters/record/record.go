// Package record is a message as the document stores keep it: one struct that
// MongoDB encodes through its bson tags and Elasticsearch through its json tags,
// and the conversions to and from domain.Message, so that a stored field is
// added in one place. It is public for document stores in other repositories;
// a stored name never changes, since stored documents must still read.
//
// Each store keeps the names and formats it always had, so documents stored
// before a field was added still read:
//
//   - MongoDB: camelCase names; times as int64 Unix microseconds (a BSON date
//     keeps only milliseconds); headers under request.headers; expireAt repeats
//     expiresAt as a BSON date for the TTL index.
//   - Elasticsearch: snake_case names; times as strings with six fractional
//     digits (indexed as date_nanos); headers under request.header; ip_address
//     left out when empty ("" is not a value of type ip).
//
// Both store headers as a list of {name, values} sorted by name (names may hold
// '.' and '$', which both stores read as paths in keys). A list that names a
// header twice (never written by reqlog; possible in a document written by
// hand) reads as one header with the values of every entry, in order: nothing
// stored is lost.
//
// Fields added with the explorer, absent from older documents:
//   - duration, absent when the message has none (an older document has
//     none): MongoDB's durationMicros is whole microseconds (int64);
//     Elasticsearch's duration_ms is milliseconds with up to three decimals
//     (a double, what its range queries and percentiles read).
//   - request.size, response.size: the body's length as submitted. An older
//     document reads the length of its stored body, the best estimate left
//     (they differ only where redaction changed the body).
//   - route (route): the path without its query string, what the statistics
//     rank as top paths. An older document has none; readers needing it
//     compute stats.PathOf(path).
//
// Added with ingest rules, absent from older documents and from the
// messages they did not touch (omitted, not stored as 0 or false):
//   - sampleRate (sample_rate): the rate of a message a sample rule kept.
//   - tally (tally): true on what an ingest rule dropped, a document without
//     headers nor bodies that the statistics count and no read returns.
//
// Added with retention classes, MongoDB's alone (Elasticsearch's documents
// leave them out), absent from older documents and from the messages no
// retention rule holds:
//   - retentionRule: the rule whose class the message is of
//     (domain.Message.RetentionRule), which the purge applies now.
//   - bodiesExpireAt: when its bodies expire, Unix microseconds.
//
// Added with route templates, absent from older documents and from messages
// sent without one (omitted, not stored empty):
//   - routeTemplate (route_template): the template the server matched, which
//     the API calls route. The name route was taken by the path without its
//     query string above.
package record

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/domain/stats"
)

// Stored names of the fields queries use, beside the struct tags below
// (record_test.go checks they agree).
const (
	BSONRoute    = "route"
	JSONRoute    = "route"
	BSONDuration = "durationMicros"
	JSONDuration = "duration_ms"
	// The route template (domain.Message.Route).
	BSONRouteTemplate = "routeTemplate"
	JSONRouteTemplate = "route_template"
	// The retention class's rule (domain.Message.RetentionRule).
	JSONRetentionRule = "retention_rule"
	// The bodies' expiry (domain.Message.BodiesExpireAt).
	BSONBodiesExpireAt = "bodiesExpireAt"
	JSONBodiesExpireAt = "bodies_expire_at"
)

// Record is a message as stored. Its json encoding is what AppendJSON writes.
type Record struct {
	ID        string `bson:"_id" json:"id"`
	Reference string `bson:"reference" json:"reference"`
	Account   string `bson:"account" json:"account"`
	Domain    string `bson:"domain" json:"domain"`
	Name      string `bson:"name" json:"name"`
	IPAddress string `bson:"ipAddress" json:"ip_address,omitempty"`
	Method    string `bson:"method" json:"method"`
	Path      string `bson:"path" json:"path"`
	Route     string `bson:"route" json:"route"`
	// Template is the route template, "" when the message has none.
	Template   string `bson:"routeTemplate,omitempty" json:"route_template,omitempty"`
	StatusCode int32  `bson:"statusCode" json:"status_code"`
	// Duration is nil when the message has none.
	Duration  *DurationMicros `bson:"durationMicros,omitempty" json:"duration_ms,omitempty"`
	Request   Content         `bson:"request" json:"request"`
	Response  Content         `bson:"response" json:"response"`
	CreatedAt Micros          `bson:"createdAt" json:"created_at"`
	UpdatedAt Micros          `bson:"updatedAt" json:"updated_at"`
	VisibleAt Micros          `bson:"visibleAt" json:"visible_at"`
	ExpiresAt Micros          `bson:"expiresAt" json:"expires_at"`
	// SampleRate is a sampled message's rate, 0 (omitted) for the others.
	SampleRate int32 `bson:"sampleRate,omitempty" json:"sample_rate,omitempty"`
	// Tally marks what an ingest rule dropped: counted, never read.
	Tally bool `bson:"tally,omitempty" json:"tally,omitempty"`
	// RetentionRule and BodiesExpireAt are the message's retention class and
	// its bodies' expiry (0: with the message).
	RetentionRule  string    `bson:"retentionRule,omitempty" json:"retention_rule,omitempty"`
	BodiesExpireAt Micros    `bson:"bodiesExpireAt,omitempty" json:"bodies_expire_at,omitempty"`
	ExpireAt       time.Time `bson:"expireAt" json:"-"` // MongoDB's TTL index only
	// Rules is the message's rules record, nil when it records nothing (and
	// in documents stored before messages kept one).
	Rules *Rules `bson:"rules,omitempty" json:"rules,omitempty"`
	// Subjects are the subject index's keyed hashes (domain.Message.Subjects),
	// absent without any; Message leaves them out.
	Subjects []string `bson:"subjects,omitempty" json:"subjects,omitempty"`
}

// Rules is a message's rules record (domain.RulesRecord), which no query
// reads.
type Rules struct {
	Version    int64    `bson:"version,omitempty" json:"version,omitempty"`
	Source     string   `bson:"source,omitempty" json:"source,omitempty"`
	Rescrubbed int64    `bson:"rescrubbed,omitempty" json:"rescrubbed,omitempty"`
	Changes    []Change `bson:"changes,omitempty" json:"changes,omitempty"`
	Submitted  string   `bson:"submitted,omitempty" json:"submitted,omitempty"`
}

// Change is one rule's change of a field.
type Change struct {
	Rule  string `bson:"rule" json:"rule"`
	Field string `bson:"field" json:"field"`
}

// RulesOf is r as stored, nil when it records nothing.
func RulesOf(r domain.RulesRecord) *Rules {
	if r.IsZero() {
		return nil
	}
	out := &Rules{Version: r.Version, Source: r.Source, Rescrubbed: r.Rescrubbed, Submitted: r.Submitted}
	for _, c := range r.Changes {
		out.Changes = append(out.Changes, Change(c))
	}
	return out
}

// Record is the stored rules record as the domain's.
func (r *Rules) Record() domain.RulesRecord {
	if r == nil {
		return domain.RulesRecord{}
	}
	out := domain.RulesRecord{Version: r.Version, Source: r.Source, Rescrubbed: r.Rescrubbed, Submitted: r.Submitted}
	for _, c := range r.Changes {
		out.Changes = append(out.Changes, domain.RuleChange(c))
	}
	return out
}

// Content is one side of the exchange.
type Content struct {
	Headers     []Header `bson:"headers" json:"header"`
	Body        string   `bson:"body" json:"body"`
	ContentType string   `bson:"contentType" json:"content_type"`
	// Size is nil in documents stored before it was added.
	Size *int `bson:"size,omitempty" json:"size,omitempty"`
}

// Header is one header field.
type Header struct {
	Name   string   `bson:"name" json:"name"`
	Values []string `bson:"values" json:"values"`
}

// Micros is an instant in Unix microseconds: an int64 in BSON, a string in
// domain.TimeLayout in JSON.
type Micros int64

// MicrosOf is t in whole microseconds.
func MicrosOf(t time.Time) Micros { return Micros(t.UnixMicro()) }

// Time is the instant in UTC.
func (us Micros) Time() time.Time { return time.UnixMicro(int64(us)).UTC() }

// MarshalJSON writes the instant as domain.FormatTime does.
func (us Micros) MarshalJSON() ([]byte, error) {
	return jsonbytes.AppendTime(nil, us.Time(), domain.TimeLayout), nil
}

// UnmarshalJSON reads an RFC 3339 string.
func (us *Micros) UnmarshalJSON(data []byte) error {
	s, err := strconv.Unquote(string(data))
	if err != nil {
		return fmt.Errorf("record: a time must be a JSON string, got %s", data)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	*us = MicrosOf(t)
	return nil
}

// DurationMicros is a duration in whole microseconds: an int64 in BSON,
// milliseconds in JSON (a number with up to three decimals).
type DurationMicros int64

// MarshalJSON writes milliseconds as encoding/json writes a float64 (always
// without an exponent in the range of durations).
func (us DurationMicros) MarshalJSON() ([]byte, error) { return appendMillis(nil, us), nil }

func appendMillis(dst []byte, us DurationMicros) []byte {
	return strconv.AppendFloat(dst, float64(us)/1000, 'f', -1, 64)
}

// UnmarshalJSON reads milliseconds, exact to the microsecond.
func (us *DurationMicros) UnmarshalJSON(data []byte) error {
	ms, err := strconv.ParseFloat(string(data), 64)
	if err != nil {
		return fmt.Errorf("record: a duration must be a JSON number of milliseconds, got %s", data)
	}
	*us = DurationMicros(math.Round(ms * 1000))
	return nil
}

// FromMessage is m as stored.
func FromMessage(m domain.Message) Record {
	r := Record{
		ID:         m.ID,
		Reference:  m.Reference,
		Account:    m.Account,
		Domain:     m.Domain,
		Name:       m.Name,
		IPAddress:  m.IPAddress,
		Method:     m.Method,
		Path:       m.Path,
		Route:      stats.PathOf(m.Path),
		Template:   m.Route,
		StatusCode: int32(m.StatusCode),
		Request:    fromContent(m.Request),
		Response:   fromContent(m.Response),
		CreatedAt:  MicrosOf(m.CreatedAt),
		UpdatedAt:  MicrosOf(m.UpdatedAt),
		VisibleAt:  MicrosOf(m.VisibleAt),
		ExpiresAt:  MicrosOf(m.ExpiresAt),
		SampleRate: int32(m.SampleRate),
		Tally:      m.Tally,
		// Rounded up, so a TTL monitor never deletes before ExpiresAt.
		ExpireAt: roundUp(m.ExpiresAt, time.Millisecond),
		Rules:    RulesOf(m.Rules),
		Subjects: m.Subjects,

		RetentionRule: m.RetentionRule,
	}
	if !m.BodiesExpireAt.IsZero() {
		r.BodiesExpireAt = MicrosOf(m.BodiesExpireAt)
	}
	if m.HasDuration {
		us := DurationMicros(m.Duration.Microseconds())
		r.Duration = &us
	}
	return r
}

// roundUp rounds t up to a multiple of unit.
func roundUp(t time.Time, unit time.Duration) time.Time {
	down := t.Truncate(unit)
	if down.Before(t) {
		return down.Add(unit)
	}
	return down
}

// fromContent stores headers sorted by name (a map has no order of its own);
// each header's values keep their order.
func fromContent(c domain.Content) Content {
	names := make([]string, 0, len(c.Header))
	for name := range c.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	headers := make([]Header, len(names))
	for i, name := range names {
		// A non-nil slice, so a header without values is stored as [] and not null.
		headers[i] = Header{Name: name, Values: append([]string{}, c.Header[name]...)}
	}
	size := c.Size
	return Content{Headers: headers, Body: c.Body, ContentType: c.ContentType, Size: &size}
}

// Message is the stored message. It shares r's header value slices.
func (r Record) Message() domain.Message {
	m := domain.Message{
		ID:         r.ID,
		Reference:  r.Reference,
		Account:    r.Account,
		Domain:     r.Domain,
		Name:       r.Name,
		IPAddress:  r.IPAddress,
		Method:     r.Method,
		Path:       r.Path,
		Route:      r.Template,
		StatusCode: int(r.StatusCode),
		Request:    r.Request.content(),
		Response:   r.Response.content(),
		CreatedAt:  r.CreatedAt.Time(),
		UpdatedAt:  r.UpdatedAt.Time(),
		VisibleAt:  r.VisibleAt.Time(),
		ExpiresAt:  r.ExpiresAt.Time(),
		SampleRate: int(r.SampleRate),
		Tally:      r.Tally,
		Rules:      r.Rules.Record(),

		RetentionRule: r.RetentionRule,
	}
	if r.BodiesExpireAt != 0 {
		m.BodiesExpireAt = r.BodiesExpireAt.Time()
	}
	if r.Duration != nil {
		m.Duration, m.HasDuration = time.Duration(*r.Duration)*time.Microsecond, true
	}
	if r.Tally {
		m = m.AsTally() // no content, as appended
	}
	return m
}

// content takes c's value slices, without a copy: a decoded record is read
// once. A name listed twice gets a new slice of both entries' values.
func (c Content) content() domain.Content {
	h := make(domain.Header, len(c.Headers))
	for _, field := range c.Headers {
		values, seen := h[field.Name]
		switch {
		case seen:
			h[field.Name] = append(values[:len(values):len(values)], field.Values...)
		case field.Values == nil:
			h[field.Name] = []string{} // a header without values reads back as [] and not null
		default:
			h[field.Name] = field.Values
		}
	}
	size := len(c.Body) // older documents: the stored body's length
	if c.Size != nil {
		size = *c.Size
	}
	return domain.Content{Header: h, Body: c.Body, ContentType: c.ContentType, Size: size}
}
