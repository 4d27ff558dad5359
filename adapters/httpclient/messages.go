package httpclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Exchange is what Submit sends: one HTTP exchange, validated by the service.
type Exchange = domain.Exchange

// ExchangeRequest and ExchangeResponse are the sides of an Exchange.
type (
	ExchangeRequest  = domain.ExchangeRequest
	ExchangeResponse = domain.ExchangeResponse
)

// Identity is a submitted message's id (a UUID) and reference ("msg_…"), and
// Dropped when an ingest rule of the account kept it out of the store.
type Identity = domain.Identity

// Message is one stored exchange as the service returns it. It encodes to and
// decodes from the API's JSON, duration_ms included.
type Message struct {
	ID         string  `json:"id"`
	Reference  string  `json:"reference"`
	Name       string  `json:"name"`
	Domain     string  `json:"domain"`
	IPAddress  string  `json:"ip_address"`
	StatusCode int     `json:"status_code"`
	Request    Content `json:"request"`
	Response   Content `json:"response"`
	Path       string  `json:"path"`
	// Route is the route template sent with the exchange ("/orders/{id}"),
	// "" when none was (null on the wire).
	Route     string    `json:"-"`
	Method    string    `json:"method"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Duration is how long the server took to answer (duration_ms, to the
	// microsecond); HasDuration is false when the submission did not say (null).
	Duration    time.Duration `json:"-"`
	HasDuration bool          `json:"-"`
	// SampleRate is N for the message an ingest rule's sample kept of N, 1
	// for one stored whole (0 from a service before ingest rules).
	SampleRate int `json:"sample_rate"`
}

// messageJSON is Message with duration_ms as it is on the wire.
type messageJSON struct {
	messageFields
	DurationMS json.RawMessage `json:"duration_ms"`
	Route      *string         `json:"route"`
}

// messageFields has Message's fields but not its methods, so that encoding it
// does not recurse.
type messageFields Message

// MarshalJSON writes duration_ms as a number of milliseconds, or null.
func (m Message) MarshalJSON() ([]byte, error) {
	w := messageJSON{messageFields: messageFields(m), DurationMS: json.RawMessage("null")}
	if m.Route != "" {
		w.Route = &m.Route
	}
	if m.HasDuration {
		w.DurationMS = json.RawMessage(domain.FormatDurationMS(m.Duration))
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads duration_ms; null or absent leaves the duration unknown.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w messageJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = Message(w.messageFields)
	if w.Route != nil {
		m.Route = *w.Route
	}
	if len(w.DurationMS) > 0 && string(w.DurationMS) != "null" {
		d, err := parseMS(string(w.DurationMS)) // a JSON string fails here too
		if err != nil {
			return fmt.Errorf("duration_ms: %w", err)
		}
		m.Duration, m.HasDuration = d, true
	}
	return nil
}

// parseMS reads a number of milliseconds, rounded to the microsecond as the
// service keeps it.
func parseMS(s string) (time.Duration, error) {
	ms, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(math.Round(ms*1000)) * time.Microsecond, nil
}

// Content is one side of a stored exchange.
type Content struct {
	Header      http.Header `json:"header"`
	Body        string      `json:"body"`
	ContentType string      `json:"content_type"`
	// Size is the body's length in bytes as submitted, before redaction.
	Size int `json:"size"`
}

// ListOptions filter and page a listing; zero fields are not sent.
type ListOptions struct {
	Name      string
	Method    string
	IPAddress string
	// StatusCode is exact ("404") or a class ("4xx").
	StatusCode string
	Path       string
	PathPrefix string
	// Route is a route template, matched exactly.
	Route string
	// Search (q) is text to find in the path, the bodies and header values: 1 to
	// 200 characters with a letter or digit, matched case-insensitively.
	Search string
	// MinDuration and MaxDuration bound duration_ms, inclusive, to the
	// microsecond; setting either leaves out messages without a duration.
	MinDuration, MaxDuration *time.Duration
	// From and To bound created_at as [From, To).
	From, To time.Time
	// Limit is the page size, 1 to 100 (0: the service's default of 20).
	Limit int
	// Cursor continues after a previous page (Page.NextCursor).
	Cursor string
}

func (o ListOptions) values() url.Values {
	v := url.Values{}
	set := func(name, value string) {
		if value != "" {
			v.Set(name, value)
		}
	}
	set("name", o.Name)
	set("method", o.Method)
	set("ip_address", o.IPAddress)
	set("status_code", o.StatusCode)
	set("path", o.Path)
	set("path_prefix", o.PathPrefix)
	set("route", o.Route)
	set("q", o.Search)
	if o.MinDuration != nil {
		v.Set("min_duration_ms", domain.FormatDurationMS(*o.MinDuration))
	}
	if o.MaxDuration != nil {
		v.Set("max_duration_ms", domain.FormatDurationMS(*o.MaxDuration))
	}
	set("cursor", o.Cursor)
	if !o.From.IsZero() {
		v.Set("from", o.From.UTC().Format(time.RFC3339Nano))
	}
	if !o.To.IsZero() {
		v.Set("to", o.To.UTC().Format(time.RFC3339Nano))
	}
	if o.Limit != 0 {
		v.Set("limit", strconv.Itoa(o.Limit))
	}
	return v
}

// Page is one page of a listing, newest first.
type Page struct {
	Messages []Message
	HasMore  bool
	// NextCursor continues the listing ("" on the last page).
	NextCursor string
}

const idempotencyKeyHeader = "Idempotency-Key"

var _ ports.ExchangeSubmitter = (*Client)(nil)

// Submit stores exchanges as one all-or-nothing batch and returns their identities
// in input order (none when the service's reply does not carry them). Each call
// sends a fresh Idempotency-Key that its retries reuse, so a retry stores nothing
// twice. Submitting nothing sends nothing.
func (c *Client) Submit(ctx context.Context, exchanges ...Exchange) ([]Identity, error) {
	if len(exchanges) == 0 {
		return nil, nil
	}
	body, err := encodeExchanges(exchanges)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %w", err)
	}
	r := call{method: http.MethodPost, url: c.messages, body: body, header: http.Header{
		"Content-Type":       {"application/json"},
		idempotencyKeyHeader: {rand.Text()},
	}}
	if c.source != "" {
		r.header.Set(sourceHeader, string(c.source))
	}
	if c.bodyCut > 0 {
		r.header.Set(bodyCutHeader, strconv.Itoa(c.bodyCut))
	}
	raw, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var reply struct {
		replyText
		Data json.RawMessage `json:"data"`
	}
	if err := decode(r, raw, &reply, &reply.replyText); err != nil {
		return nil, err
	}
	ids, err := identities(reply.Data)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %s: unreadable identities: %w", r, err)
	}
	if ids != nil && len(ids) != len(exchanges) {
		return nil, fmt.Errorf("httpclient: %s: the service returned %d identities for %d exchanges", r, len(ids), len(exchanges))
	}
	return ids, nil
}

// SubmitExchanges is Submit as a ports.ExchangeSubmitter, for the capture middleware.
func (c *Client) SubmitExchanges(ctx context.Context, exchanges []domain.Exchange) ([]domain.Identity, error) {
	return c.Submit(ctx, exchanges...)
}

// sourceHeader says what captured the exchanges submitted.
const sourceHeader = "X-Reqlog-Source"

// bodyCutHeader asks the service to hold each body to so many bytes after its
// privacy rules.
const bodyCutHeader = "X-Reqlog-Body-Cut"

// identityJSON is an identity in a submit reply: "stored": false when an
// ingest rule dropped the message.
type identityJSON struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Stored    *bool  `json:"stored"`
}

func (j identityJSON) identity() Identity {
	return Identity{ID: j.ID, Reference: j.Reference, Dropped: j.Stored != nil && !*j.Stored}
}

// identities reads "data": an array for a batch, an object for one submission.
func identities(data json.RawMessage) ([]Identity, error) {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		return nil, nil
	case data[0] == '{':
		var id identityJSON
		err := json.Unmarshal(data, &id)
		return []Identity{id.identity()}, err
	default:
		var list []identityJSON
		err := json.Unmarshal(data, &list)
		ids := make([]Identity, len(list))
		for i, j := range list {
			ids[i] = j.identity()
		}
		return ids, err
	}
}

// List returns one page of messages.
func (c *Client) List(ctx context.Context, opts ListOptions) (*Page, error) {
	u := *c.messages
	u.RawQuery = opts.values().Encode()
	r := call{method: http.MethodGet, url: &u}
	raw, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var reply struct {
		replyText
		Messages   []Message `json:"messages"`
		Pagination struct {
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		} `json:"pagination"`
	}
	if err := decode(r, raw, &reply, &reply.replyText); err != nil {
		return nil, err
	}
	page := &Page{Messages: reply.Messages, HasMore: reply.Pagination.HasMore}
	if page.Messages == nil {
		page.Messages = []Message{}
	}
	if reply.Pagination.NextCursor != nil {
		page.NextCursor = *reply.Pagination.NextCursor
	}
	return page, nil
}

// All iterates over every message that opts selects, newest first, following the
// cursor from page to page (opts.Limit is the page size). A failure is yielded once
// as the error of the last pair; breaking out of the loop stops the requests.
func (c *Client) All(ctx context.Context, opts ListOptions) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			page, err := c.List(ctx, opts)
			if err != nil {
				yield(Message{}, err)
				return
			}
			for _, m := range page.Messages {
				if !yield(m, nil) {
					return
				}
			}
			if !page.HasMore || page.NextCursor == "" {
				return
			}
			opts.Cursor = page.NextCursor
		}
	}
}

// Get returns the message with this id or reference; an unknown one, or one not
// visible yet, is an error matching ports.ErrNotFound.
func (c *Client) Get(ctx context.Context, idOrReference string) (Message, error) {
	if idOrReference == "" {
		return Message{}, fmt.Errorf("httpclient: get: empty id or reference: %w", ports.ErrNotFound)
	}
	u := *c.messages
	u.Path += "/" + idOrReference
	u.RawPath = c.messages.EscapedPath() + "/" + url.PathEscape(idOrReference)
	r := call{method: http.MethodGet, url: &u}
	raw, err := c.do(ctx, r)
	if err != nil {
		return Message{}, err
	}
	var reply struct {
		replyText
		Data *Message `json:"data"`
	}
	if err := decode(r, raw, &reply, &reply.replyText); err != nil {
		return Message{}, err
	}
	if reply.Data == nil {
		return Message{}, fmt.Errorf("httpclient: %s: the reply has no message", r)
	}
	return *reply.Data, nil
}

// decode reads a 2xx reply into v and checks its status flag.
func decode(r call, raw []byte, v any, text *replyText) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("httpclient: %s: unreadable reply: %w", r, err)
	}
	return text.check(r.String())
}
