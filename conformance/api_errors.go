package conformance

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// apiBadCase is a POST that must be refused.
type apiBadCase struct {
	name   string
	body   any      // as for post
	header []string // headers besides Authorization; nil: Content-Type application/json
	status int
	field  string // the one field at fault; "" when the fault is not a field's
}

// apiBadSubmissions are the refused POSTs of a service with a batch limit of 5 and
// a body limit of 64 KiB, at now.
func apiBadSubmissions(now time.Time, retention time.Duration) []apiBadCase {
	at := now.Add(-time.Minute)
	item := func(edits map[string]any) map[string]any { return apiItem(at, edits) }
	bad := func(name, field string, value any) apiBadCase {
		return apiBadCase{name: name, body: item(map[string]any{field: value}), status: http.StatusBadRequest, field: field}
	}
	const req = http.StatusBadRequest
	return []apiBadCase{
		bad("name missing", "name", apiAbsent),
		bad("name null", "name", nil),
		bad("name a number", "name", 42),
		bad("name empty", "name", ""),
		bad("name only whitespace", "name", " \t "),
		bad("name of 201 characters", "name", strings.Repeat("n", 201)),
		bad("created_at missing", "created_at", apiAbsent),
		bad("created_at negative", "created_at", -5),
		bad("created_at zero", "created_at", 0),
		bad("created_at a string not RFC 3339", "created_at", "yesterday"),
		bad("created_at a date only", "created_at", "2025-03-14"),
		bad("created_at a numeric string", "created_at", "1741953000"),
		bad("created_at over 24h in the future", "created_at", now.Add(24*time.Hour+time.Second).Unix()),
		bad("created_at older than retention", "created_at", now.Add(-retention-time.Second).Unix()),
		bad("created_at a boolean", "created_at", true),
		bad("created_at an object", "created_at", map[string]any{}),
		bad("method missing", "method", apiAbsent),
		bad("method a number", "method", 7),
		bad("method with a space", "method", "GE T"),
		bad("method of 33 characters", "method", strings.Repeat("M", 33)),
		bad("method empty", "method", ""),
		bad("path missing", "path", apiAbsent),
		bad("path an array", "path", []any{"/"}),
		bad("path without leading slash", "path", "v1/orders"),
		bad("path of 4097 characters", "path", "/"+strings.Repeat("p", 4096)),
		bad("ip_address invalid", "ip_address", "999.1.1.1"),
		bad("ip_address not an address", "ip_address", "localhost"),
		bad("ip_address a number", "ip_address", 1234),
		bad("request missing", "request", apiAbsent),
		bad("request a string", "request", "GET /"),
		bad("request an array", "request", []any{}),
		bad("response missing", "response", apiAbsent),
		bad("response a number", "response", 200),
		bad("response.status_code missing", "response.status_code", apiAbsent),
		bad("response.status_code 99", "response.status_code", 99),
		bad("response.status_code 600", "response.status_code", 600),
		bad("response.status_code a string", "response.status_code", "200"),
		bad("response.status_code 200.5", "response.status_code", 200.5),
		bad("response.status_code null", "response.status_code", nil),
		bad("request.body a number", "request.body", 5),
		bad("response.body an object", "response.body", map[string]any{"a": 1}),
		bad("request.header a string", "request.header", "Accept: */*"),
		bad("request.header an array", "request.header", []any{"Accept"}),
		{name: "header value null", body: item(map[string]any{"request.header": apiRaw(`{"x-trace": null}`)}), status: req, field: "request.header.X-Trace"},
		{name: "header value an object", body: item(map[string]any{"response.header": apiRaw(`{"X-Trace": {"a": "b"}}`)}), status: req, field: "response.header.X-Trace"},
		{name: "header array holding null", body: item(map[string]any{"request.header": apiRaw(`{"X-Trace": ["a", null]}`)}), status: req, field: "request.header.X-Trace"},
		{name: "header array holding an array", body: item(map[string]any{"request.header": apiRaw(`{"X-Trace": [["a"]]}`)}), status: req, field: "request.header.X-Trace"},
		{name: "invalid header name", body: item(map[string]any{"request.header": apiRaw(`{"Bad Header": "x"}`)}), status: req, field: "request.header"},
		{name: "batch with one bad item", body: []any{item(nil), item(map[string]any{"method": "GE T"}), item(nil)}, status: req, field: "[1].method"},
		{name: "batch item not an object", body: []any{item(nil), 5}, status: req, field: "[1]"},
		{name: "envelope item without name or app", body: map[string]any{"messages": []any{item(map[string]any{"name": apiAbsent})}}, status: req, field: "[0].name"},
		{name: "envelope item with a bad top-level status_code", body: map[string]any{"messages": []any{item(nil),
			item(map[string]any{"response.status_code": apiAbsent, "status_code": 700})}}, status: req, field: "[1].status_code"},
		{name: "envelope messages not an array", body: map[string]any{"messages": map[string]any{}}, status: req, field: "messages"},
		{name: "envelope messages empty", body: map[string]any{"messages": []any{}}, status: req},
		{name: "empty array", body: []any{}, status: req},
		{name: "top-level number", body: apiRaw(`42`), status: req},
		{name: "top-level string", body: apiRaw(`"hello"`), status: req},
		{name: "top-level null", body: apiRaw(`null`), status: req},
		{name: "malformed JSON", body: apiRaw(`{"name": "shop",`), status: req},
		{name: "two JSON values", body: apiRaw(`{} {}`), status: req},
		{name: "empty body", body: apiRaw(``), status: req},
		{name: "batch over the limit", body: []any{item(nil), item(nil), item(nil), item(nil), item(nil), item(nil)}, status: http.StatusRequestEntityTooLarge},
		{name: "body over the limit", body: item(map[string]any{"request.body": strings.Repeat("x", 70<<10)}), status: http.StatusRequestEntityTooLarge},
		{name: "Content-Type text/plain", body: item(nil), header: []string{"Content-Type", "text/plain"}, status: http.StatusUnsupportedMediaType},
		{name: "Content-Type form", body: item(nil), header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: http.StatusUnsupportedMediaType},
		{name: "Content-Type missing", body: item(nil), header: []string{}, status: http.StatusUnsupportedMediaType},
	}
}

func apiTestBadSubmissions(t *testing.T, s apiSuite) {
	e := s.start(t, func(cfg *APIConfig) {
		cfg.Policy.MaxBatch = 5
		cfg.MaxBodyBytes = 64 << 10
	})
	for _, c := range apiBadSubmissions(e.clock.Now(), e.cfg.Policy.Retention) {
		t.Run(c.name, func(t *testing.T) {
			header := c.header
			if header == nil {
				header = []string{"Content-Type", apiJSON}
			}
			r := e.do(t, http.MethodPost, "/v1/messages", apiBody(t, c.body), append(apiBearer(apiAcmeLive), header...)...)
			if c.field == "" {
				r.wantError(t, c.status)
			} else {
				r.wantError(t, c.status, c.field)
			}
		})
	}
	// All or nothing: not one item of any refused request was stored.
	e.wantStoredExactly(t, apiAcmeLive)
}

func apiTestBadQueryParameters(t *testing.T, s apiSuite) {
	e := s.start(t)
	cases := []struct{ query, field string }{
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=abc", "limit"},
		{"limit=-1", "limit"},
		{"limit=1.5", "limit"},
		{"limit=", "limit"},
		{"cursor=not-a-cursor", "cursor"},
		{"cursor=aGVsbG8", "cursor"}, // base64 of "hello"
		{"status_code=45x", "status_code"},
		{"status_code=600", "status_code"},
		{"status_code=99", "status_code"},
		{"status_code=4xxx", "status_code"},
		{"status_code=6xx", "status_code"},
		{"status_code=abc", "status_code"},
		{"from=yesterday", "from"},
		{"from=2025-13-01T00:00:00Z", "from"},
		{"to=nope", "to"},
		{"from=2025-03-14T12:00:00Z&to=2025-03-14T11:00:00Z", "to"},
		{"ip_address=1.2.3", "ip_address"},
		{"ip_address=not-an-ip", "ip_address"},
		{"method=GE%20T", "method"},
		{"path=v1/orders", "path"},
		{"path_prefix=v1", "path_prefix"},
		{"path_prefix=/%C3", "path_prefix"}, // half of "ü": not UTF-8
		{"path=/u%FF8", "path"},
		{"name=shop%FF", "name"},
		{"to=0001-01-01T00:00:00Z", "to"},
		{"from=1700000000000", "from"}, // milliseconds where seconds are due
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			e.get(t, apiAcmeLive, "/v1/messages?"+c.query).wantError(t, http.StatusBadRequest, c.field)
		})
	}
}

func apiTestBadInputNeverBreaksServer(t *testing.T, s apiSuite) {
	e := s.start(t)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	bodies := []struct {
		name string
		body any
	}{
		{"deeply nested array", apiRaw(deep)},
		{"deeply nested header", apiRaw(`{"name": "a", "request": {"header": {"X": ` + deep + `}}}`)},
		{"invalid UTF-8", []byte("{\"name\": \"\xff\xfe\", \"created_at\": 1}")},
		{"lone surrogate in name", apiRaw(`{"name": "\ud800"}`)},
		{"NUL in strings", apiItem(e.clock.Now(), map[string]any{"name": "a\u0000b", "path": "/a\u0000b"})},
		{"created_at 1e400", apiItem(e.clock.Now(), map[string]any{"created_at": apiRaw(`1e400`)})},
		{"created_at of 23 digits", apiItem(e.clock.Now(), map[string]any{"created_at": apiRaw(`99999999999999999999999`)})},
		{"created_at 1e-7", apiItem(e.clock.Now(), map[string]any{"created_at": apiRaw(`1e-7`)})},
		{"created_at year 10000", apiItem(e.clock.Now(), map[string]any{"created_at": "10000-01-01T00:00:00Z"})},
		{"status_code 1e400", apiItem(e.clock.Now(), map[string]any{"response.status_code": apiRaw(`1e400`)})},
		{"status_code of 30 digits", apiItem(e.clock.Now(), map[string]any{"response.status_code": apiRaw(`200000000000000000000000000000`)})},
		{"header value 1e400", apiItem(e.clock.Now(), map[string]any{"request.header": apiRaw(`{"X-N": 1e400}`)})},
		{"ten thousand header values", apiItem(e.clock.Now(), map[string]any{"request.header": map[string]any{"X-Many": slices.Repeat([]any{"v"}, 10000)}})},
		{"envelope of scalars", apiRaw(`{"messages": [1, "a", null, true]}`)},
		{"binary garbage", []byte{0x00, 0x01, 0xff, 0x7b, 0x22}},
		{"duplicate keys of mixed types", apiRaw(`{"name": "a", "name": 5, "created_at": 1, "created_at": "x"}`)},
		{"envelope holding an envelope", map[string]any{"messages": []any{map[string]any{"messages": []any{}}}}},
		{"array holding arrays", []any{[]any{apiItem(e.clock.Now(), nil)}}},
		{"name as an object with secrets", apiItem(e.clock.Now(), map[string]any{"name": map[string]any{"authorization": "x"}})},
	}
	for _, c := range bodies {
		t.Run(c.name, func(t *testing.T) {
			apiWantNoServerError(t, e.post(t, apiAcmeLive, c.body))
		})
	}
	for _, target := range []string{
		"/v1/messages?limit=99999999999999999999",
		"/v1/messages?from=1e400",
		"/v1/messages?from=-1",
		"/v1/messages?to=99999999999999999999",
		"/v1/messages?cursor=%00",
		"/v1/messages?cursor=" + strings.Repeat("A", 10000),
		"/v1/messages?status_code=%00",
		"/v1/messages?name=%FF%FE",
		"/v1/messages?limit=1&limit=2",
		"/v1/messages/%00",
		"/v1/messages/..%2F..%2Fetc",
		"/v1/messages/" + strings.Repeat("a", 5000),
	} {
		t.Run("GET "+target[:min(len(target), 60)], func(t *testing.T) {
			apiWantNoServerError(t, e.get(t, apiAcmeLive, target))
		})
	}
	// Still answering.
	stored := e.ingestOne(t, apiAcmeLive, apiItem(e.clock.Now().Add(-time.Minute), nil))
	e.reveal(t, apiAcmeLive, stored.ID)
}

// apiWantNoServerError fails on a 5xx or a reply that is not JSON.
func apiWantNoServerError(t *testing.T, r apiReply) {
	t.Helper()
	if r.status >= 500 {
		t.Errorf("bad input gave a server error: %s", r)
	}
	if r.jsonErr != nil {
		t.Errorf("the reply is not JSON (%v): %s", r.jsonErr, r)
	}
}

func apiTestUnknownRoutes(t *testing.T, s apiSuite) {
	e := s.start(t)
	stored := e.ingestOne(t, apiAcmeLive, apiItem(e.clock.Now().Add(-time.Minute), nil))
	e.reveal(t, apiAcmeLive, stored.ID)
	for _, c := range []struct{ method, target string }{
		{http.MethodGet, "/v2/messages"},
		{http.MethodPost, "/v2/messages"},
		{http.MethodGet, "/v1/nope"},
		{http.MethodGet, "/v1"},
		{http.MethodGet, "/"},
		{http.MethodGet, "/v1/messagesx"},
		{http.MethodGet, "/v1/messages/" + stored.ID + "/more"},
		{http.MethodGet, "/v1/messages/0190a6d4-5c3e-7b2a-9f1e-3c4d5e6f7a8b"}, // well-formed, never stored
		{http.MethodGet, "/v1/messages/msg_AAAAAAAAAAAA"},
		{http.MethodGet, "/v1/messages/not-an-id"},
	} {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			e.do(t, c.method, c.target, nil, append(apiBearer(apiAcmeLive), "Content-Type", apiJSON)...).wantError(t, http.StatusNotFound)
		})
	}
}

func apiTestMethodNotAllowed(t *testing.T, s apiSuite) {
	e := s.start(t)
	item := "/v1/messages/0190a6d4-5c3e-7b2a-9f1e-3c4d5e6f7a8b"
	for _, c := range []struct {
		method, target string
		allowed        []string
	}{
		{http.MethodDelete, "/v1/messages", []string{"GET", "POST"}},
		{http.MethodPut, "/v1/messages", []string{"GET", "POST"}},
		{http.MethodPatch, "/v1/messages", []string{"GET", "POST"}},
		{http.MethodDelete, item, []string{"GET"}},
		{http.MethodPut, item, []string{"GET"}},
		{http.MethodPost, item, []string{"GET"}},
	} {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			r := e.do(t, c.method, c.target, []byte(`{}`), append(apiBearer(apiAcmeLive), "Content-Type", apiJSON)...)
			r.wantError(t, http.StatusMethodNotAllowed)
			var allow []string
			for _, value := range r.header.Values("Allow") {
				for _, method := range strings.Split(value, ",") {
					allow = append(allow, strings.TrimSpace(method))
				}
			}
			for _, method := range c.allowed {
				if !slices.Contains(allow, method) {
					t.Errorf("Allow is %q, want it to list %s", allow, method)
				}
			}
			if slices.Contains(allow, c.method) {
				t.Errorf("Allow is %q, which lists the refused %s", allow, c.method)
			}
		})
	}
}

func apiTestSizeLimits(t *testing.T, s apiSuite) {
	const maxBatch, maxBody = 5, 64 << 10
	e := s.start(t, func(cfg *APIConfig) {
		cfg.Policy.MaxBatch = maxBatch
		cfg.MaxBodyBytes = maxBody
	})
	at := e.clock.Now().Add(-time.Minute)
	full := e.ingestBatch(t, apiAcmeLive, slices.Repeat([]any{apiItem(at, nil)}, maxBatch), maxBatch)
	e.post(t, apiAcmeLive, slices.Repeat([]any{apiItem(at, nil)}, maxBatch+1)).wantError(t, http.StatusRequestEntityTooLarge)

	// A body of exactly the limit is accepted, one byte more is not.
	padded := func(size int) map[string]any {
		item := apiItem(at, nil)
		apiSet(item, "request.body", strings.Repeat("x", size-len(apiBody(t, item))))
		return item
	}
	if got := len(apiBody(t, padded(maxBody))); got != maxBody {
		t.Fatalf("padded body is %d bytes, want %d", got, maxBody)
	}
	exact := e.ingestOne(t, apiAcmeLive, padded(maxBody))
	e.post(t, apiAcmeLive, padded(maxBody+1)).wantError(t, http.StatusRequestEntityTooLarge)

	e.wantStoredExactly(t, apiAcmeLive, append(apiIDs(full), exact.ID)...)
}
