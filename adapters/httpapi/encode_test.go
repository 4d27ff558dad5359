package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// The reference encoding: the reply structs the API encoded with encoding/json
// before encode.go; the hand-written encoder must produce the same bytes.

type listReply struct {
	Status     bool           `json:"status"`
	Message    string         `json:"message"`
	Messages   []messageJSON  `json:"messages"`
	Pagination paginationJSON `json:"pagination"`
}

type paginationJSON struct {
	Limit      int     `json:"limit"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

type messageJSON struct {
	ID         string      `json:"id"`
	Reference  string      `json:"reference"`
	Name       string      `json:"name"`
	Domain     string      `json:"domain"`
	IPAddress  string      `json:"ip_address"`
	StatusCode int         `json:"status_code"`
	DurationMS *float64    `json:"duration_ms"`
	Request    contentJSON `json:"request"`
	Response   contentJSON `json:"response"`
	Path       string      `json:"path"`
	Route      *string     `json:"route"`
	Method     string      `json:"method"`
	CreatedAt  string      `json:"created_at"`
	UpdatedAt  string      `json:"updated_at"`
	SampleRate int         `json:"sample_rate"`
}

type contentJSON struct {
	Header      map[string][]string `json:"header"`
	Body        string              `json:"body"`
	ContentType string              `json:"content_type"`
	Size        int                 `json:"size"`
}

func toMessageJSON(m domain.Message) messageJSON {
	var duration *float64
	if ms, ok := m.DurationMS(); ok {
		duration = &ms
	}
	var route *string
	if m.Route != "" {
		route = &m.Route
	}
	return messageJSON{DurationMS: duration, Route: route,
		ID: m.ID, Reference: m.Reference, Name: m.Name, Domain: m.Domain, IPAddress: m.IPAddress,
		StatusCode: m.StatusCode, Request: toContentJSON(m.Request), Response: toContentJSON(m.Response),
		Path: m.Path, Method: m.Method,
		CreatedAt: domain.FormatTime(m.CreatedAt), UpdatedAt: domain.FormatTime(m.UpdatedAt), SampleRate: max(m.SampleRate, 1),
	}
}

func toContentJSON(c domain.Content) contentJSON {
	header := make(map[string][]string, len(c.Header))
	for name, values := range c.Header {
		if values == nil {
			values = []string{}
		}
		header[name] = values
	}
	return contentJSON{Header: header, Body: c.Body, ContentType: c.ContentType, Size: c.Size}
}

func referenceListReply(page domain.Page, limit int) listReply {
	body := listReply{Status: true, Message: msgListed, Messages: make([]messageJSON, len(page.Messages)),
		Pagination: paginationJSON{Limit: limit, HasMore: page.HasMore}}
	for i, m := range page.Messages {
		body.Messages[i] = toMessageJSON(m)
	}
	if next := page.Next(); next != nil {
		cursor := next.Encode()
		body.Pagination.NextCursor = &cursor
	}
	return body
}

// fetchedReplyJSON is a single message's reply: the message, and its rules
// record beside it.
type fetchedReplyJSON struct {
	Status  bool            `json:"status"`
	Message string          `json:"message"`
	Data    messageJSON     `json:"data"`
	Rules   rulesRecordJSON `json:"rules"`
}

type rulesRecordJSON struct {
	Version      int64               `json:"version"`
	Source       *string             `json:"source"`
	RescrubbedBy *int64              `json:"rescrubbed_by"`
	Changes      []domain.RuleChange `json:"changes"`
}

func referenceFetchedReply(m domain.Message) fetchedReplyJSON {
	r := rulesRecordJSON{Version: m.Rules.Version, Changes: orEmpty(m.Rules.Changes)}
	if m.Rules.Source != "" {
		r.Source = &m.Rules.Source
	}
	if m.Rules.Rescrubbed != 0 {
		r.RescrubbedBy = &m.Rules.Rescrubbed
	}
	return fetchedReplyJSON{Status: true, Message: msgFetched, Data: toMessageJSON(m), Rules: r}
}

// encodeReference encodes v exactly as writeJSON does.
func encodeReference(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return buf.Bytes()
}

func assertSameBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	at := 0
	for at < len(got) && at < len(want) && got[at] == want[at] {
		at++
	}
	t.Fatalf("%s differs from encoding/json at byte %d:\n got: %q\nwant: %q", what, at, excerpt(got, at), excerpt(want, at))
}

func excerpt(b []byte, at int) []byte { return b[max(at-40, 0):min(at+40, len(b))] }

// trickyStrings need every escaping rule of encoding/json.
var trickyStrings = func() []string {
	var controls strings.Builder
	for b := range 0x20 {
		controls.WriteByte(byte(b))
	}
	return []string{
		"", "plain", `quote " and backslash \`, controls.String(), "\x7f DEL", "<script>&amp;</script>",
		"line\u2028separator\u2029paragraph", "\u2027\u202a neighbours", "emoji 🚀 and é ü 中文",
		"bad \xff byte", "\xc3", "\xe2\x80", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 too big",
		"\xc0\xaf overlong", `{"json":"body","n":[1,2,3]}`, "\ufffd literal replacement",
		"tab\tnewline\ncr\rbackspace\bformfeed\f",
	}
}()

// trickyDurations are whole microseconds with every number of decimals, up to
// domain.MaxDuration.
var trickyDurations = []time.Duration{0, time.Microsecond, 999 * time.Microsecond, time.Millisecond,
	41200 * time.Microsecond, 380 * time.Millisecond, 1210500 * time.Microsecond, 12345678 * time.Microsecond,
	domain.MaxDuration - time.Microsecond, domain.MaxDuration}

func trickyMessage(i int, s string) domain.Message {
	at := time.Date(2025, 3, 14, 12, 0, 0, 123456789, time.FixedZone("east", 3600)).Add(time.Duration(i) * time.Minute)
	return domain.Message{
		ID: s, Reference: "msg_" + s, Account: "acme", Domain: domain.DomainLive, Name: s, IPAddress: s,
		Method: s, Path: "/p/" + s, StatusCode: 100 + i,
		Request: domain.Content{
			Header: domain.Header{"Z-Last": {s}, s: {s, "second"}, "A-First": nil, "M-Empty": {}, "b-lower": {"x"}},
			Body:   s, ContentType: s, Size: len(s),
		},
		Response: domain.Content{Header: nil, Body: strings.Repeat(s, 3), ContentType: "application/json", Size: 1000 * i},
		Duration: trickyDurations[i%len(trickyDurations)], HasDuration: i%5 != 4,
		CreatedAt: at, UpdatedAt: at.Add(time.Second),
		VisibleAt: at, ExpiresAt: at.Add(time.Hour),
	}
}

func trickyMessages() []domain.Message {
	msgs := []domain.Message{{}} // zero times, nil headers, empty strings
	for i, s := range trickyStrings {
		msgs = append(msgs, trickyMessage(i, s))
	}
	many := domain.Header{}
	for i := range 100 { // more names than appendHeader keeps on the stack
		many[strings.Repeat("k", 100-i)] = []string{strings.Repeat("v", i)}
	}
	msgs = append(msgs, domain.Message{ID: "many", Request: domain.Content{Header: many}, Response: domain.Content{Header: domain.Header{}},
		CreatedAt: time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(12345, 12, 31, 23, 59, 59, 999999000, time.UTC)})
	return msgs
}

func TestAppendFetchedReplyMatchesEncodingJSON(t *testing.T) {
	for _, m := range trickyMessages() {
		assertSameBytes(t, "message "+m.ID, appendFetchedReply(nil, m), encodeReference(t, referenceFetchedReply(m)))
	}
}

func TestAppendListReplyMatchesEncodingJSON(t *testing.T) {
	msgs := trickyMessages()
	pages := map[string]domain.Page{
		"nil messages":    {},
		"empty messages":  {Messages: []domain.Message{}},
		"last page":       {Messages: msgs},
		"more to come":    {Messages: msgs, HasMore: true},
		"one, more":       {Messages: msgs[1:2], HasMore: true},
		"empty with more": {HasMore: true}, // no cursor without a last message
	}
	for name, page := range pages {
		for _, limit := range []int{0, 1, domain.DefaultLimit, domain.MaxLimit} {
			assertSameBytes(t, name, appendListReply(nil, page, limit), encodeReference(t, referenceListReply(page, limit)))
		}
	}
}

// Encoding a message allocates nothing once the buffer is large enough: the
// header names are sorted on the stack.
func TestAppendMessageAllocations(t *testing.T) {
	m := trickyMessage(0, "value")
	buf := appendMessage(nil, m)
	allocs := testing.AllocsPerRun(100, func() { buf = appendMessage(buf[:0], m) })
	if allocs != 0 {
		t.Fatalf("appendMessage into a large enough buffer allocated %v times, want 0", allocs)
	}
}

// The handler serves pages and single messages with the encoder, reusing pooled
// buffers between replies of different sizes.
func TestListAndGetServeTheReferenceEncoding(t *testing.T) {
	store := memory.New()
	now := time.Now()
	var stored []domain.Message
	for i, s := range trickyStrings {
		m := trickyMessage(i, s)
		id, err := domain.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		m.ID, m.Reference = id.ID, id.Reference
		m.CreatedAt, m.UpdatedAt = domain.Micro(now.Add(-time.Duration(i)*time.Minute)), domain.Micro(now)
		m.VisibleAt, m.ExpiresAt = m.UpdatedAt.Add(-time.Hour), now.Add(time.Hour)
		stored = append(stored, m)
	}
	if err := store.Append(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	policy := domain.DefaultPolicy()
	clock := app.SystemClock{}
	reader := app.NewReader(store, policy, clock)
	keys := keyring.New([]keyring.Entry{{Account: "acme", Domain: domain.DomainLive, Digest: keyring.Digest("key")}})
	handler := New(app.NewIngester(store, policy, clock), reader, keys, Options{})
	principal := domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}

	serve := func(target string) []byte {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer key")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Fatalf("GET %s: Content-Type %q", target, ct)
		}
		return rec.Body.Bytes()
	}
	for _, limit := range []int{len(stored), 3, 1} {
		q := domain.Query{Limit: limit}
		page, err := reader.List(context.Background(), principal, q)
		if err != nil {
			t.Fatal(err)
		}
		if limit < len(stored) && !page.HasMore {
			t.Fatalf("limit %d: want a page with more to come", limit)
		}
		want := encodeReference(t, referenceListReply(page, limit))
		assertSameBytes(t, "page", serve("/v1/messages?limit="+strconv.Itoa(limit)), want)
	}
	for _, m := range stored[:3] {
		got, err := reader.Get(context.Background(), principal, m.Reference)
		if err != nil {
			t.Fatal(err)
		}
		assertSameBytes(t, "message", serve("/v1/messages/"+m.Reference), encodeReference(t, referenceFetchedReply(got)))
	}
}

func FuzzAppendMessage(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, s, "Name-"+s, s, 200+i, int64(i)*1e12)
	}
	f.Add("", "", "", "", 0, int64(0))
	f.Add("\xff", "\u2028", "\x00", "<&>", -1, int64(-62135596800000000))
	f.Fuzz(func(t *testing.T, text, body, headerName, headerValue string, status int, createdMicro int64) {
		created := time.UnixMicro(createdMicro)
		m := domain.Message{
			ID: text, Reference: text, Name: headerName, Domain: text, IPAddress: headerValue, Method: text, Path: body, Route: headerValue,
			StatusCode: status,
			Request: domain.Content{Header: domain.Header{headerName: {headerValue, text}, headerValue: nil, text: {}},
				Body: body, ContentType: text},
			Response:  domain.Content{Header: domain.Header{headerValue: {body}}, Body: body + text, ContentType: headerValue},
			CreatedAt: created, UpdatedAt: created.Add(time.Duration(status)),
			// Any whole number of microseconds up to domain.MaxDuration.
			Duration:    time.Duration(uint64(createdMicro)%uint64(domain.MaxDuration/time.Microsecond+1)) * time.Microsecond,
			HasDuration: status%3 != 0,
			Rules: domain.RulesRecord{Version: int64(status), Source: headerValue, Rescrubbed: createdMicro,
				Changes: []domain.RuleChange{{Rule: text, Field: body}, {Rule: headerName, Field: ""}}},
		}
		assertSameBytes(t, "message", appendFetchedReply(nil, m), encodeReference(t, referenceFetchedReply(m)))
		page := domain.Page{Messages: []domain.Message{m, m}, HasMore: status%2 == 0}
		assertSameBytes(t, "page", appendListReply(nil, page, status), encodeReference(t, referenceListReply(page, status)))
	})
}

type identityJSON struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Stored    *bool  `json:"stored,omitempty"` // false alone, for a dropped message
}

func TestAppendIngestReplyMatchesEncodingJSON(t *testing.T) {
	var ids []domain.Identity
	for i, s := range trickyStrings {
		ids = append(ids, domain.Identity{ID: s, Reference: trickyStrings[(i+1)%len(trickyStrings)], Dropped: i%3 == 1})
	}
	notStored := false
	for _, result := range []app.SubmitResult{
		{Identities: ids[:1]}, {Identities: ids[1:2]}, {Identities: ids[:1], Multiple: true}, {Identities: ids, Multiple: true}, {Multiple: true},
	} {
		var data any
		refs := make([]identityJSON, len(result.Identities))
		for i, id := range result.Identities {
			refs[i] = identityJSON{ID: id.ID, Reference: id.Reference}
			if id.Dropped {
				refs[i].Stored = &notStored
			}
		}
		data = refs
		if !result.Multiple && len(refs) == 1 {
			data = refs[0]
		}
		assertSameBytes(t, fmt.Sprintf("%d identities, multiple %v", len(refs), result.Multiple),
			appendIngestReply(nil, result), encodeReference(t, reply{Status: true, Message: msgIngested, Data: data}))
	}
}

// A listing of JSON bodies, dense with escapes, is encoded into a buffer sized
// once (replySize), not grown by doubling: the estimate holds the reply, and
// is not far above it. (Counted in bytes rather than allocations, which the
// race detector adds to.)
func TestAppendListReplyGrowsItsBufferOnce(t *testing.T) {
	body := `{"items":[` + strings.Repeat(`{"sku":"SKU-00042","name":"standard \"warehouse\" item","qty":3},`, 60) + `{}]}`
	header := domain.Header{}
	for i := range 20 {
		header[fmt.Sprintf("X-Header-%02d", i)] = []string{strings.Repeat("v", 30)}
	}
	var msgs []domain.Message
	for i := range domain.MaxLimit {
		m := trickyMessage(i, "value")
		m.Request, m.Response = domain.Content{Header: header, Body: body[:i*len(body)/domain.MaxLimit]}, domain.Content{Header: header, Body: body}
		msgs = append(msgs, m)
	}
	for _, page := range []domain.Page{{Messages: msgs[:1]}, {Messages: msgs[:domain.DefaultLimit]}, {Messages: msgs}} {
		reply, estimate := appendListReply(nil, page, domain.MaxLimit), replySize(page.Messages...)
		if len(reply) > estimate || estimate > 2*len(reply) {
			t.Errorf("a page of %d messages: %d bytes, estimated %d: want an estimate at least the reply and at most twice it",
				len(page.Messages), len(reply), estimate)
		}
	}
}
