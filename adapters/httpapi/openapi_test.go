package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gorilla/mux"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpapi.OpenAPIDocumentForTest)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi.json is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	return doc
}

// The document lists exactly the routes of the router, with the same methods,
// except HEAD. The router answers HEAD wherever it answers GET and nowhere else,
// which this test checks; the document says so once in its description instead of
// repeating every GET as a body-less HEAD operation (RFC 9110 defines HEAD by GET,
// and client generators would emit a useless method per path).
func TestOpenAPIListsExactlyTheRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	r := mux.NewRouter()
	httpapi.RegisterRoutesForTest(r)
	var routed, gets, heads []string
	err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			return fmt.Errorf("route %s: %w", path, err)
		}
		for _, m := range methods {
			switch m {
			case http.MethodHead:
				heads = append(heads, path)
				continue
			case http.MethodGet:
				gets = append(gets, path)
			}
			routed = append(routed, m+" "+path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gets)
	slices.Sort(heads)
	if !slices.Equal(gets, heads) {
		t.Errorf("GET is routed on\n  %s\nHEAD on\n  %s\nwant the same paths", strings.Join(gets, "\n  "), strings.Join(heads, "\n  "))
	}
	if !strings.Contains(doc.Info.Description, "`HEAD`") {
		t.Error("the document's description does not say that HEAD is answered wherever GET is")
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(routed)
	slices.Sort(documented)
	if !slices.Equal(routed, documented) {
		t.Errorf("the router has\n  %s\nthe document has\n  %s", strings.Join(routed, "\n  "), strings.Join(documented, "\n  "))
	}
}

const (
	openAPIReadOnlyKey = "rk_live_ReadOnlyExample"
	openAPIMaxBody     = 1 << 20
)

// oneReadOnlyKey turns one key into a read-only principal; the keyring has none.
type oneReadOnlyKey struct{ ports.KeyStore }

func (k oneReadOnlyKey) Authenticate(ctx context.Context, key string) (domain.Principal, error) {
	if key == openAPIReadOnlyKey {
		return domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}, ReadOnly: true}, nil
	}
	return k.KeyStore.Authenticate(ctx, key)
}

// downStore is a flakyStore whose lookups fail too.
type downStore struct{ flakyStore }

func (s downStore) Get(context.Context, domain.Scope, string, time.Time) (domain.Message, error) {
	return domain.Message{}, s.err
}

// openAPIServer serves the API on store on a real listener (delay 0, a 1 MiB
// body limit, the clock at start).
func openAPIServer(t *testing.T, store ports.MessageStore, readiness func(context.Context) error) *httptest.Server {
	t.Helper()
	keys := oneReadOnlyKey{keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}})}
	f := newFixture(t, setup{store: store, keys: keys, readiness: readiness, maxBody: openAPIMaxBody})
	srv := httptest.NewServer(f.handler)
	t.Cleanup(srv.Close)
	return srv
}

// openAPICase is one request, the status it must get and whether the document
// itself accepts the request.
type openAPICase struct {
	name         string
	method       string
	target       string
	body         string
	header       []string // name, value pairs; Authorization and Content-Type are set unless given
	status       int
	requestValid bool
	replyOnly    bool // the document cannot express why the request is refused: check only the reply
}

// openAPIChecker sends requests and checks them and their replies against the
// document.
type openAPIChecker struct {
	doc    *openapi3.T
	router routers.Router
	srv    *httptest.Server
}

// registerTextDecoders lets the validator read the portal's page and assets, as
// it reads text/plain.
var registerTextDecoders = sync.OnceFunc(func() {
	for _, mediaType := range []string{"text/html", "text/javascript", "text/css", "application/x-ndjson", "text/csv"} {
		openapi3filter.RegisterBodyDecoder(mediaType, openapi3filter.PlainBodyDecoder)
	}
})

func newOpenAPIChecker(t *testing.T, srv *httptest.Server) openAPIChecker {
	t.Helper()
	registerTextDecoders()
	doc := loadOpenAPI(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return openAPIChecker{doc: doc, router: router, srv: srv}
}

func (c openAPIChecker) request(t *testing.T, tc openAPICase) *http.Request {
	t.Helper()
	req, err := http.NewRequest(tc.method, c.srv.URL+tc.target, strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+liveKey)
	if tc.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(tc.header); i += 2 {
		if tc.header[i+1] == "" {
			req.Header.Del(tc.header[i])
		} else {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
	}
	return req
}

// send does req and reads the whole reply.
func send(t *testing.T, srv *httptest.Server, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the reply: %v", req.Method, req.URL, err)
	}
	return resp, raw
}

// check sends tc and returns the reply's body.
func (c openAPIChecker) check(t *testing.T, tc openAPICase) []byte {
	t.Helper()
	resp, raw := send(t, c.srv, c.request(t, tc))
	if resp.StatusCode != tc.status {
		t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.target, resp.StatusCode, tc.status, raw)
	}

	req := c.request(t, tc) // a fresh body for the validator
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s is not in the document: %v", tc.method, tc.target, err)
	}
	ctx := context.Background()
	options := &openapi3filter.Options{
		MultiError:            true,
		IncludeResponseStatus: true,
		// The document can only tell that a key is sent, not whether it is known.
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			if in.RequestValidationInput.Request.Header.Get("Authorization") == "" {
				return errors.New("no Authorization header")
			}
			return nil
		},
	}
	input := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options}
	if err := openapi3filter.ValidateRequest(ctx, input); !tc.replyOnly && (err == nil) != tc.requestValid {
		t.Errorf("%s %s: the document's verdict on the request (%v) is not the service's (%d)", tc.method, tc.target, err, tc.status)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: resp.StatusCode, Header: resp.Header, Options: options}
	out.SetBodyBytes(raw)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("%s %s: the reply breaks the document: %v\n%s", tc.method, tc.target, err, raw)
	}
	return raw
}

// checkUndocumented sends a request the document does not list and checks its
// reply against the document's Error schema.
func (c openAPIChecker) checkUndocumented(t *testing.T, tc openAPICase, wantRouteErr error, wantHeader string) {
	t.Helper()
	req := c.request(t, tc)
	if _, _, err := c.router.FindRoute(req); !errors.Is(err, wantRouteErr) {
		t.Errorf("%s %s: the document's router says %v, want %v", tc.method, tc.target, err, wantRouteErr)
	}
	resp, raw := send(t, c.srv, req)
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s %s: reply is not JSON: %v", tc.method, tc.target, err)
	}
	if resp.StatusCode != tc.status || resp.Header.Get(wantHeader) == "" || resp.Header.Get(httpapi.RequestIDHeader) == "" {
		t.Errorf("%s %s: status %d with %s %q, want %d with both it and %s", tc.method, tc.target,
			resp.StatusCode, wantHeader, resp.Header.Get(wantHeader), tc.status, httpapi.RequestIDHeader)
	}
	schema := c.doc.Components.Schemas["Error"].Value
	if err := c.doc.ValidateSchemaJSON(schema, body, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("%s %s: the reply is not the document's Error: %v", tc.method, tc.target, err)
	}
}

func openAPIItem(at time.Time, edits ...string) string {
	item := fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"post","path":"/pay?x=1","ip_address":"2001:DB8::1",`+
		`"request":{"header":{"content-type":"application/json","X-Count":3,"Accept":["a","b"]},"body":"{}"},`+
		`"response":{"status_code":201,"header":{"Set-Cookie":"s=1"},"body":""}}`, at.Unix())
	for i := 0; i+1 < len(edits); i += 2 {
		item = strings.Replace(item, edits[i], edits[i+1], 1)
	}
	return item
}

// Real replies of the running service, for the conformance suite's kinds of
// request, against the document: requests it accepts and refuses, replies of every
// documented status.
func TestRepliesMatchOpenAPI(t *testing.T) {
	srv := openAPIServer(t, memory.New(), nil)
	c := newOpenAPIChecker(t, srv)
	now := start.Add(-time.Minute)
	item := openAPIItem(now)

	single := c.check(t, openAPICase{name: "single", method: http.MethodPost, target: "/v1/messages", body: item, status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: "[" + item + "," + openAPIItem(now, `"shop"`, `"  portal  "`) + "]", status: 200, requestValid: true})
	envelope := `{"messages":[` + openAPIItem(now, `"name":"shop"`, `"app":"sdk"`, `"response":{"status_code":201,`, `"status_code":404,"response":{`) +
		`,` + openAPIItem(now, `"ip_address":"2001:DB8::1",`, `"ip_address":null,`) + `]}`
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: envelope, status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: openAPIItem(now, `"created_at":`+fmt.Sprint(now.Unix()), `"created_at":"`+now.UTC().Format(time.RFC3339Nano)+`"`),
		header: []string{"Idempotency-Key", "order-42"}, status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: openAPIItem(now, `"method":"post",`, `"method":"post","duration_ms":12.5,`),
		status: 200, requestValid: true})

	var stored struct {
		Data struct{ ID, Reference string }
	}
	mustUnmarshal(t, single, &stored)
	id, reference := stored.Data.ID, stored.Data.Reference
	var page struct {
		Pagination struct {
			NextCursor string `json:"next_cursor"`
		}
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodGet, target: "/v1/messages?limit=2", status: 200, requestValid: true}), &page)
	cursor := page.Pagination.NextCursor
	if cursor == "" {
		t.Fatalf("no next_cursor after 2 of 5 messages: %+v", page)
	}
	for _, target := range []string{
		"/v1/messages",
		"/v1/messages?cursor=" + cursor,
		"/v1/messages?" + url.Values{"name": {"shop"}, "method": {"post"}, "ip_address": {"2001:db8::1"}, "status_code": {"2xx"},
			"path": {"/pay?x=1"}, "path_prefix": {"/p"}, "from": {fmt.Sprint(now.Add(-time.Hour).Unix())}, "to": {now.Add(time.Hour).Format(time.RFC3339)}}.Encode(),
		"/v1/messages?q=pay&min_duration_ms=0&max_duration_ms=12.5",
		"/v1/messages/" + id,
		"/v1/messages/" + strings.ToUpper(id),
		"/v1/stats",
		"/v1/stats?" + url.Values{"from": {now.Add(-time.Hour).Format(time.RFC3339)}, "to": {fmt.Sprint(now.Add(time.Hour).Unix())},
			"interval": {"5m"}, "name": {"shop"}, "status_code": {"2xx"}, "q": {"pay"}}.Encode(),
		"/v1/messages/export",
		"/v1/messages/export?format=csv&limit=2&path_prefix=/pay",
		"/v1/messages/export?format=ndjson&min_duration_ms=1",
		"/v1/messages/" + reference,
		"/healthz",
		"/readyz",
		"/metrics",
		"/v1/openapi.json",
	} {
		c.check(t, openAPICase{method: http.MethodGet, target: target, status: 200, requestValid: true})
	}

	for _, tc := range []openAPICase{
		{name: "no key", method: http.MethodGet, target: "/v1/messages", header: []string{"Authorization", ""}, status: 401},
		{name: "unknown key", method: http.MethodGet, target: "/v1/messages", header: []string{"Authorization", "Bearer nope"}, status: 401, requestValid: true},
		{name: "unknown id", method: http.MethodGet, target: "/v1/messages/msg_AAAAAAAAAAAA", status: 404, requestValid: true},
		{name: "not an id", method: http.MethodGet, target: "/v1/messages/x", status: 404, requestValid: true},
		{name: "read-only key", method: http.MethodPost, target: "/v1/messages", body: item, header: []string{"Authorization", openAPIReadOnlyKey}, status: 403, requestValid: true},
		{name: "missing field", method: http.MethodPost, target: "/v1/messages", body: openAPIItem(now, `"method":"post",`, ``), status: 400},
		{name: "bad status", method: http.MethodPost, target: "/v1/messages", body: openAPIItem(now, `201`, `600`), status: 400},
		{name: "bad batch item", method: http.MethodPost, target: "/v1/messages", body: "[" + item + `,"x"]`, status: 400},
		{name: "empty batch", method: http.MethodPost, target: "/v1/messages", body: `{"messages":[]}`, status: 400},
		{name: "not JSON", method: http.MethodPost, target: "/v1/messages", body: `{"name":`, status: 400},
		{name: "bad header name", method: http.MethodPost, target: "/v1/messages", body: openAPIItem(now, `"X-Count"`, `"X Count"`), status: 400},
		{name: "bad Idempotency-Key", method: http.MethodPost, target: "/v1/messages", body: item, header: []string{"Idempotency-Key", "a b"}, status: 400},
		{name: "bad limit", method: http.MethodGet, target: "/v1/messages?limit=101", status: 400},
		{name: "bad status filter", method: http.MethodGet, target: "/v1/messages?status_code=6xx", status: 400},
		{name: "bad cursor", method: http.MethodGet, target: "/v1/messages?cursor=%25%25", status: 400},
		{name: "bad from", method: http.MethodGet, target: "/v1/messages?from=yesterday", status: 400},
		{name: "blank name", method: http.MethodGet, target: "/v1/messages?name=%20", status: 400},
		{name: "q too long", method: http.MethodGet, target: "/v1/messages?q=" + strings.Repeat("a", 201), status: 400},
		{name: "q without a word", method: http.MethodGet, target: "/v1/messages?q=%21%21", status: 400, replyOnly: true},
		{name: "negative duration", method: http.MethodGet, target: "/v1/messages?min_duration_ms=-1", status: 400},
		{name: "min above max", method: http.MethodGet, target: "/v1/messages?min_duration_ms=5&max_duration_ms=4", status: 400, replyOnly: true},
		{name: "unknown interval", method: http.MethodGet, target: "/v1/stats?interval=2m", status: 400},
		{name: "too many buckets", method: http.MethodGet, target: "/v1/stats?interval=1m&from=" + fmt.Sprint(now.Add(-48*time.Hour).Unix()), status: 400, replyOnly: true},
		{name: "unknown format", method: http.MethodGet, target: "/v1/messages/export?format=xml", status: 400},
		{name: "export limit too high", method: http.MethodGet, target: "/v1/messages/export?limit=100001", status: 400},
		{name: "not JSON content", method: http.MethodPost, target: "/v1/messages", body: item, header: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "not UTF-8", method: http.MethodPost, target: "/v1/messages", body: item, header: []string{"Content-Type", "application/json; charset=latin1"}, status: 415, replyOnly: true},
		{name: "compressed", method: http.MethodPost, target: "/v1/messages", body: item, header: []string{"Content-Encoding", "br"}, status: 415, replyOnly: true},
		{name: "too many bytes", method: http.MethodPost, target: "/v1/messages", body: openAPIItem(now, `"body":"{}"`, `"body":"`+strings.Repeat("x", openAPIMaxBody)+`"`), status: 413, requestValid: true},
		{name: "too many items", method: http.MethodPost, target: "/v1/messages", body: "[" + strings.Repeat(item+",", 1000) + item + "]", status: 413},
	} {
		t.Run(tc.name, func(t *testing.T) { c.check(t, tc) })
	}

	c.checkUndocumented(t, openAPICase{method: http.MethodDelete, target: "/v1/messages", status: 405}, routers.ErrMethodNotAllowed, "Allow")
	c.checkUndocumented(t, openAPICase{method: http.MethodGet, target: "/v2/messages", status: 404}, routers.ErrPathNotFound, "Content-Type")
}

// The 503 and 429 replies of a store that is down or shedding load.
func TestFailureRepliesMatchOpenAPI(t *testing.T) {
	item := openAPIItem(start)
	for _, tc := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("dial: %w", ports.ErrUnavailable), http.StatusServiceUnavailable},
		{fmt.Errorf("busy: %w", ports.ErrOverloaded), http.StatusTooManyRequests},
	} {
		store := downStore{flakyStore{MessageStore: memory.New(), err: tc.err}}
		srv := openAPIServer(t, store, func(context.Context) error { return tc.err })
		c := newOpenAPIChecker(t, srv)
		for _, r := range []openAPICase{
			{method: http.MethodPost, target: "/v1/messages", body: item},
			{method: http.MethodGet, target: "/v1/messages"},
			{method: http.MethodGet, target: "/v1/messages/msg_AAAAAAAAAAAA"},
			{method: http.MethodGet, target: "/v1/stats"},
			{method: http.MethodGet, target: "/v1/messages/export"},
		} {
			r.status, r.requestValid = tc.status, true
			c.check(t, r)
		}
	}
	srv := openAPIServer(t, memory.New(), func(context.Context) error { return ports.ErrUnavailable })
	newOpenAPIChecker(t, srv).check(t, openAPICase{method: http.MethodGet, target: "/readyz", status: 503, requestValid: true})
}

// portalServer serves the API with the customer portal on, on the default policy
// and a fake clock at start.
func portalServer(t *testing.T) (*httptest.Server, *conformance.FakeClock) {
	t.Helper()
	clock := conformance.NewFakeClock(start)
	p, err := portal.New(portal.Config{Secret: portal.RandomSecret()}, clock)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	policy := app.DefaultConfig().Policy()
	keys := p.KeyStore(keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}}))
	srv := httptest.NewServer(httpapi.New(app.NewIngester(store, policy, clock), app.NewReader(store, policy, clock), keys,
		httpapi.Options{Portal: p}))
	t.Cleanup(srv.Close)
	return srv, clock
}

// The customer portal's endpoints, on and off.
func TestPortalRepliesMatchOpenAPI(t *testing.T) {
	srv, _ := portalServer(t)
	c := newOpenAPIChecker(t, srv)

	var session struct{ Data struct{ Token string } }
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: "/v1/portal/sessions", body: `{"name":"shop","expires_in":600}`,
		status: 200, requestValid: true}), &session)
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/dashboard_access", body: `{"app":"shop"}`, status: 200, requestValid: true})
	for _, tc := range []openAPICase{
		{method: http.MethodGet, target: "/portal", status: 200, requestValid: true},
		{method: http.MethodGet, target: "/portal/app.js", status: 200, requestValid: true},
		{method: http.MethodGet, target: "/portal/app.css", status: 200, requestValid: true},
		{method: http.MethodGet, target: "/portal/secrets.txt", status: 404, requestValid: true},
		{method: http.MethodGet, target: "/v1/messages", header: []string{"Authorization", "Bearer " + session.Data.Token}, status: 200, requestValid: true},
		{method: http.MethodPost, target: "/v1/portal/sessions", body: `{"name":"shop"}`, header: []string{"Authorization", "Bearer " + session.Data.Token}, status: 403, requestValid: true},
		{method: http.MethodPost, target: "/v1/portal/sessions", body: `{"name":"shop","expires_in":1}`, status: 400},
		{method: http.MethodPost, target: "/v1/portal/sessions", body: `{"expires_in":600}`, status: 200, requestValid: true},
		{method: http.MethodPost, target: "/v1/portal/sessions", body: `{"name":""}`, status: 400},
		{method: http.MethodPost, target: "/v1/dashboard_access", body: `{"app":"shop"}`, header: []string{"Content-Type", "text/plain"}, status: 415},
	} {
		c.check(t, tc)
	}

	off := newOpenAPIChecker(t, openAPIServer(t, memory.New(), nil))
	for _, tc := range []openAPICase{
		{method: http.MethodPost, target: "/v1/portal/sessions", body: `{"name":"shop"}`, status: 404, requestValid: true},
		{method: http.MethodPost, target: "/v1/dashboard_access", body: `{"name":"shop"}`, status: 404, requestValid: true},
		{method: http.MethodGet, target: "/portal", status: 404, requestValid: true},
		{method: http.MethodGet, target: "/portal/app.js", status: 404, requestValid: true},
	} {
		off.check(t, tc)
	}
}

// The served document is the embedded one, without a key.
func TestServesOpenAPIDocument(t *testing.T) {
	srv := openAPIServer(t, memory.New(), nil)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/openapi.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := send(t, srv, req)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
		!bytes.Equal(raw, httpapi.OpenAPIDocumentForTest) {
		t.Errorf("GET /v1/openapi.json: %d %q, %d bytes; want 200 JSON, the %d embedded bytes",
			resp.StatusCode, resp.Header.Get("Content-Type"), len(raw), len(httpapi.OpenAPIDocumentForTest))
	}
}

func mustUnmarshal(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}
