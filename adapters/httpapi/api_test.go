package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

const liveKey = "rk_live_S3cretKeyValue"

var start = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

type fixture struct {
	handler http.Handler
	logs    *observer.ObservedLogs
	clock   *conformance.FakeClock
}

type setup struct {
	store     ports.MessageStore
	keys      ports.KeyStore
	readiness func(context.Context) error
	maxBody   int64
	limiter   *httpapi.RateLimiter
	exports   httpapi.ExportLimits
	walks     *app.WalkLimits // nil: app.DefaultWalkLimits
	metrics   *httpapi.Metrics
	readOnly  bool
}

func newFixture(t *testing.T, s setup) fixture {
	t.Helper()
	if s.store == nil {
		s.store = memory.New()
	}
	if s.keys == nil {
		s.keys = keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}})
	}
	clock := conformance.NewFakeClock(start)
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	policy := cfg.Policy()
	walks := app.DefaultWalkLimits()
	if s.walks != nil {
		walks = *s.walks
	}
	core, logs := observer.New(zapcore.DebugLevel)
	h := httpapi.New(
		app.NewIngester(s.store, policy, clock),
		app.NewReaderWith(s.store, policy, clock, walks),
		s.keys,
		httpapi.Options{MaxBodyBytes: s.maxBody, Logger: zap.New(core), Readiness: s.readiness, RateLimiter: s.limiter, Exports: s.exports,
			Metrics: s.metrics, ReadOnly: s.readOnly},
	)
	return fixture{handler: h, logs: logs, clock: clock}
}

type request struct {
	method, target, body string
	header               map[string]string
}

func (f fixture) do(t *testing.T, r request) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

func authed(extra ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + liveKey, "Content-Type": "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func submission(createdAt time.Time) string {
	return fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"POST","path":"/pay","ip_address":"203.0.113.9",
		"request":{"header":{"X-Card":"4111"},"body":"SECRET-REQUEST-BODY"},"response":{"status_code":201,"body":"{}"}}`, createdAt.Unix())
}

type errorJSON struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	Errors  []struct {
		Field, Message string
	} `json:"errors"`
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder, status int) errorJSON {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	var e errorJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Status || e.Message == "" {
		t.Fatalf("error body %q is not {status:false, message}: %v", rec.Body, err)
	}
	checkCommonHeaders(t, rec)
	return e
}

func checkCommonHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	for name, want := range map[string]string{
		"Content-Type":           "application/json; charset=utf-8",
		"Cache-Control":          "no-store",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if rec.Header().Get(httpapi.RequestIDHeader) == "" {
		t.Error("no request id in the reply")
	}
}

// panickingKeys makes every authenticated request panic inside the handler chain.
type panickingKeys struct{}

func (panickingKeys) Authenticate(context.Context, string) (domain.Principal, error) {
	panic("key store bug")
}

func TestPanicBecomesJSON500AndIsLogged(t *testing.T) {
	f := newFixture(t, setup{keys: panickingKeys{}})
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: authed(httpapi.RequestIDHeader, "req-panic-1")})
	decodeError(t, rec, http.StatusInternalServerError)
	panics := f.logs.FilterMessage("panic while serving a request").All()
	if len(panics) != 1 {
		t.Fatalf("%d panic log entries, want 1", len(panics))
	}
	fields := panics[0].ContextMap()
	if fields["panic"] != "key store bug" || fields["request_id"] != "req-panic-1" || !strings.Contains(fmt.Sprint(fields["stack"]), "goroutine") {
		t.Errorf("panic entry lacks the panic, request id or stack: %v", fields)
	}
	access := f.logs.FilterMessage("request").All()
	if len(access) != 1 || access[0].ContextMap()["status"] != int64(http.StatusInternalServerError) {
		t.Errorf("access log %v, want one entry with status 500", access)
	}
	// The server keeps serving.
	if rec := f.do(t, request{method: http.MethodGet, target: "/healthz"}); rec.Code != http.StatusOK {
		t.Errorf("healthz after a panic: %d", rec.Code)
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	f := newFixture(t, setup{})
	secrets := []string{liveKey, "SECRET-REQUEST-BODY", "4111", "SECRET-QUERY", "rk_wrong_SecretGuess"}
	f.do(t, request{method: http.MethodPost, target: "/v1/messages?token=SECRET-QUERY", body: submission(start), header: authed()})
	f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: `{"name":"SECRET-REQUEST-BODY"}`, header: authed()})
	f.do(t, request{method: http.MethodGet, target: "/v1/messages?name=SECRET-QUERY", header: authed()})
	f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: map[string]string{"Authorization": "Bearer rk_wrong_SecretGuess"}})
	f.do(t, request{method: http.MethodGet, target: "/nowhere?SECRET-QUERY", header: authed()})
	entries := f.logs.All()
	if len(entries) < 5 {
		t.Fatalf("%d log entries, want at least one per request", len(entries))
	}
	for _, e := range entries {
		line := e.Message + fmt.Sprint(e.ContextMap())
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("log entry %q contains %q", line, s)
			}
		}
	}
}

func TestAccessLogFields(t *testing.T) {
	f := newFixture(t, setup{})
	rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()})
	if rec.Code != http.StatusOK {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	entries := f.logs.FilterMessage("request").All()
	if len(entries) != 1 {
		t.Fatalf("%d access log entries", len(entries))
	}
	got := entries[0].ContextMap()
	want := map[string]any{"method": "POST", "route": "/v1/messages", "status": int64(200), "account": "acme", "domain": "live",
		"bytes": int64(rec.Body.Len()), "request_id": rec.Header().Get(httpapi.RequestIDHeader)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("access log %s = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got["duration"]; !ok {
		t.Error("access log has no duration")
	}
	// A route with a variable is logged by its template, not the id.
	f.do(t, request{method: http.MethodGet, target: "/v1/messages/msg_AAAAAAAAAAAA", header: authed()})
	if route := f.logs.FilterMessage("request").All()[1].ContextMap()["route"]; route != "/v1/messages/{idOrReference}" {
		t.Errorf("route logged as %v", route)
	}
	// A method is a client-chosen token: an unknown one is logged as OTHER, so a
	// 1 MiB method cannot make a 1 MiB log line.
	f.do(t, request{method: strings.Repeat("M", 4096), target: "/v1/messages", header: authed()})
	if method := f.logs.FilterMessage("request").All()[2].ContextMap()["method"]; method != "OTHER" {
		t.Errorf("an unknown method logged as %.40v", method)
	}
}

func TestRequestID(t *testing.T) {
	f := newFixture(t, setup{})
	for _, tc := range []struct {
		incoming string
		adopted  bool
	}{
		{"abc-123_X.y:z", true},
		{strings.Repeat("a", 128), true},
		{"", false},
		{strings.Repeat("a", 129), false},
		{"has space", false},
		{"quote\"", false},
	} {
		rec := f.do(t, request{method: http.MethodGet, target: "/healthz", header: map[string]string{httpapi.RequestIDHeader: tc.incoming}})
		got := rec.Header().Get(httpapi.RequestIDHeader)
		if tc.adopted != (got == tc.incoming) || got == "" {
			t.Errorf("incoming %q: replied %q (adopt: %v)", tc.incoming, got, tc.adopted)
		}
	}
	a := f.do(t, request{method: http.MethodGet, target: "/healthz"}).Header().Get(httpapi.RequestIDHeader)
	b := f.do(t, request{method: http.MethodGet, target: "/healthz"}).Header().Get(httpapi.RequestIDHeader)
	if a == b {
		t.Errorf("generated request ids repeat: %q", a)
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, setup{})
	for _, value := range []string{"Bearer " + liveKey, "bearer " + liveKey, "BEARER\t" + liveKey, liveKey, "  " + liveKey + "  ", "Bearer   " + liveKey + " "} {
		if rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: map[string]string{"Authorization": value}}); rec.Code != http.StatusOK {
			t.Errorf("Authorization %q: %d %s", value, rec.Code, rec.Body)
		}
	}
	for _, value := range []string{"", "   ", "Bearer", "Bearer ", "Bearer x" + liveKey, "Basic " + liveKey, liveKey + "x"} {
		rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: map[string]string{"Authorization": value}})
		decodeError(t, rec, http.StatusUnauthorized)
		if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="reqlog"` {
			t.Errorf("Authorization %q: WWW-Authenticate %q", value, got)
		}
	}
}

// failingReader fails the test if the body is read: a refusal must come first.
type failingReader struct{ t *testing.T }

func (r failingReader) Read([]byte) (int, error) {
	r.t.Error("the body was read before the request was refused")
	return 0, io.EOF
}

type readOnlyKeys struct{}

func (readOnlyKeys) Authenticate(context.Context, string) (domain.Principal, error) {
	return domain.Principal{Scope: domain.Scope{Account: "acme", Domain: "live"}, ReadOnly: true}, nil
}

func TestRefusedBeforeReadingTheBody(t *testing.T) {
	for _, tc := range []struct {
		name   string
		keys   ports.KeyStore
		header map[string]string
		status int
	}{
		{"no key", nil, map[string]string{"Content-Type": "application/json"}, http.StatusUnauthorized},
		{"read-only", readOnlyKeys{}, authed(), http.StatusForbidden},
		{"wrong content type", nil, authed("Content-Type", "text/plain"), http.StatusUnsupportedMediaType},
		{"no content type", nil, map[string]string{"Authorization": liveKey}, http.StatusUnsupportedMediaType},
		{"not UTF-8", nil, authed("Content-Type", "application/json; charset=latin1"), http.StatusUnsupportedMediaType},
		{"compressed", nil, authed("Content-Encoding", "gzip"), http.StatusUnsupportedMediaType},
		{"bad idempotency key", nil, authed("Idempotency-Key", "has space"), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, setup{keys: tc.keys})
			req := httptest.NewRequest(http.MethodPost, "/v1/messages", failingReader{t})
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			f.handler.ServeHTTP(rec, req)
			decodeError(t, rec, tc.status)
		})
	}
}

func TestBodyLimit(t *testing.T) {
	f := newFixture(t, setup{maxBody: 64})
	big := submission(start) // longer than 64 bytes
	// Declared too large: refused from Content-Length.
	decodeError(t, f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: big, header: authed()}), http.StatusRequestEntityTooLarge)
	// Chunked, so only reading finds out.
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	for k, v := range authed() {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	e := decodeError(t, rec, http.StatusRequestEntityTooLarge)
	if !strings.Contains(e.Message, strconv.Itoa(64)) {
		t.Errorf("413 message %q does not state the limit", e.Message)
	}
}

// flakyStore fails every call with err.
type flakyStore struct {
	ports.MessageStore
	err error
}

func (s flakyStore) Append(context.Context, []domain.Message) error { return s.err }
func (s flakyStore) List(context.Context, domain.Query, time.Time) (domain.Page, error) {
	return domain.Page{}, s.err
}

func (s flakyStore) Stats(context.Context, stats.Query, time.Time) (stats.Stats, error) {
	return stats.Stats{}, s.err
}

func TestStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		err        error
		status     int
		retryAfter bool
	}{
		{fmt.Errorf("mongo: %w", ports.ErrUnavailable), http.StatusServiceUnavailable, true},
		{ports.ErrOverloaded, http.StatusTooManyRequests, true},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, true},
		{errors.New("a bug: unwrapped backend error"), http.StatusInternalServerError, false},
	} {
		f := newFixture(t, setup{store: flakyStore{MessageStore: memory.New(), err: tc.err}})
		for _, r := range []request{
			{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()},
			{method: http.MethodGet, target: "/v1/messages", header: authed()},
		} {
			rec := f.do(t, r)
			decodeError(t, rec, tc.status)
			if got := rec.Header().Get("Retry-After"); (got != "") != tc.retryAfter {
				t.Errorf("%v on %s: Retry-After %q", tc.err, r.method, got)
			}
			if strings.Contains(rec.Body.String(), "mongo") || strings.Contains(rec.Body.String(), "bug") {
				t.Errorf("internal error text leaked: %s", rec.Body)
			}
		}
	}
}

// damagedFile is a store's fault: a file of its own it found damaged.
type damagedFile struct{ name string }

func (d damagedFile) Error() string { return "/var/lib/reqlog/" + d.name + " is corrupt" }
func (d damagedFile) Fault() string { return d.name + " is corrupt" }
func (d damagedFile) Unwrap() error { return ports.ErrUnavailable }

// A store error that names what of the store is damaged (a ports.Fault) is
// a 503 that names it, never its path; /readyz names every one.
func TestStoreFaultsAreNamed(t *testing.T) {
	fault := fmt.Errorf("sqlite: append: %w", damagedFile{"messages-2026-11-28.db"})
	f := newFixture(t, setup{store: flakyStore{MessageStore: memory.New(), err: fault}, readiness: func(context.Context) error {
		return errors.Join(damagedFile{"messages-2026-11-27.db"}, errors.New("disk full"), damagedFile{"messages-2026-11-28.db"})
	}})
	for _, r := range []request{
		{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()},
		{method: http.MethodGet, target: "/v1/messages", header: authed()},
	} {
		rec := f.do(t, r)
		decodeError(t, rec, http.StatusServiceUnavailable)
		if body := rec.Body.String(); !strings.Contains(body, "messages-2026-11-28.db is corrupt") || strings.Contains(body, "/var/lib") {
			t.Errorf("%s %s: %s; want the fault named, without the path", r.method, r.target, body)
		}
	}
	rec := f.do(t, request{method: http.MethodGet, target: "/readyz"})
	decodeError(t, rec, http.StatusServiceUnavailable)
	if body := rec.Body.String(); !strings.Contains(body, "messages-2026-11-27.db is corrupt") || !strings.Contains(body, "messages-2026-11-28.db is corrupt") {
		t.Errorf("/readyz: %s; want both faults named", body)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	down := errors.New("connection refused")
	var storeErr error
	f := newFixture(t, setup{readiness: func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("readiness probe without a deadline")
		}
		return storeErr
	}})
	for _, path := range []string{"/healthz", "/readyz"} {
		rec := f.do(t, request{method: http.MethodGet, target: path})
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), `{"status":true,"message":`) {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
		checkCommonHeaders(t, rec)
	}
	if body := f.do(t, request{method: http.MethodGet, target: "/healthz"}).Body.String(); body != `{"status":true,"message":"ok"}`+"\n" {
		t.Errorf("healthz body %q", body)
	}
	storeErr = down
	rec := f.do(t, request{method: http.MethodGet, target: "/readyz"})
	decodeError(t, rec, http.StatusServiceUnavailable)
	if rec.Header().Get("Retry-After") == "" || strings.Contains(rec.Body.String(), "refused") {
		t.Errorf("not ready: Retry-After %q, body %s", rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := f.do(t, request{method: http.MethodGet, target: "/healthz"}); rec.Code != http.StatusOK {
		t.Errorf("healthz depends on the store: %d", rec.Code)
	}
}

func TestRoutingErrors(t *testing.T) {
	f := newFixture(t, setup{})
	for _, tc := range []struct {
		method, target string
		status         int
		allow          string
	}{
		{http.MethodGet, "/", http.StatusNotFound, ""},
		{http.MethodGet, "/v2/messages", http.StatusNotFound, ""},
		{http.MethodGet, "/v1//messages", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/messages/", http.StatusNotFound, ""},
		{http.MethodDelete, "/v1/messages", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{http.MethodPut, "/v1/messages/msg_AAAAAAAAAAAA", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodHead, "/v1/portal/sessions", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/v1/messages/export", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, "/v1/stats", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/v1/stats/", http.StatusNotFound, ""},
	} {
		rec := f.do(t, request{method: tc.method, target: tc.target, header: authed()})
		decodeError(t, rec, tc.status)
		if got := rec.Header().Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.target, got, tc.allow)
		}
	}
}

func TestSubmitAndRead(t *testing.T) {
	f := newFixture(t, setup{})
	rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: submission(start.Add(-time.Minute)),
		header: authed("Content-Type", "Application/JSON; charset=utf-8")})
	var submitted struct {
		Status bool
		Data   struct{ ID, Reference string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &submitted); rec.Code != http.StatusOK || err != nil || submitted.Data.ID == "" {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	rec = f.do(t, request{method: http.MethodGet, target: "/v1/messages/" + submitted.Data.Reference, header: authed()})
	if rec.Code != http.StatusOK {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	want := `{"status":true,"message":"successfully fetched message","data":{"id":"` + submitted.Data.ID +
		`","reference":"` + submitted.Data.Reference + `","name":"shop","domain":"live","ip_address":"203.0.113.9","status_code":201,"duration_ms":null,` +
		`"request":{"header":{"X-Card":["4111"]},"body":"SECRET-REQUEST-BODY","content_type":"text/plain","size":19},` +
		`"response":{"header":{},"body":"{}","content_type":"application/json","size":2},"path":"/pay","route":null,"method":"POST",` +
		`"created_at":"2025-03-14T11:59:00.000000Z","updated_at":"2025-03-14T12:00:00.000000Z","sample_rate":1},` +
		`"rules":{"version":0,"source":null,"rescrubbed_by":null,"changes":[]}}` + "\n"
	if rec.Body.String() != want {
		t.Errorf("get body\n%s\nwant\n%s", rec.Body, want)
	}
	rec = f.do(t, request{method: http.MethodGet, target: "/v1/messages?limit=1", header: authed()})
	if !strings.Contains(rec.Body.String(), `"pagination":{"limit":1,"has_more":false,"next_cursor":null}`) {
		t.Errorf("list body %s", rec.Body)
	}
	rec = f.do(t, request{method: http.MethodGet, target: "/v1/messages?limit=%zz", header: authed()})
	decodeError(t, rec, http.StatusBadRequest)
}

// Bodies are read into buffers that later requests reuse: requests in flight
// together must each store their own body.
func TestConcurrentSubmissionsKeepTheirBodies(t *testing.T) {
	f := newFixture(t, setup{})
	const clients, each = 8, 25
	references := make([][]string, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := strings.Replace(submission(start), "SECRET-REQUEST-BODY", fmt.Sprintf("body-%d-%d-%s", c, i, strings.Repeat("x", 100*i)), 1)
				rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: body, header: authed()})
				var reply struct{ Data struct{ Reference string } }
				if err := json.Unmarshal(rec.Body.Bytes(), &reply); rec.Code != http.StatusOK || err != nil {
					t.Errorf("submit: %d %s", rec.Code, rec.Body)
					return
				}
				references[c] = append(references[c], reply.Data.Reference)
			}
		}()
	}
	wg.Wait()
	for c, refs := range references {
		for i, ref := range refs {
			rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages/" + ref, header: authed()})
			want := fmt.Sprintf(`"body":"body-%d-%d-%s"`, c, i, strings.Repeat("x", 100*i))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
				t.Fatalf("message %d of client %d: %d %.200s, want %s", i, c, rec.Code, rec.Body, want)
			}
		}
	}
}

// A message is found by its id in the canonical 36-character form, in any letter
// case, or by its reference, exactly. The other spellings uuid.Parse knows (no
// hyphens, braces, urn:uuid:) are not ids this API hands out, so they are 404
// rather than a second name for the same message.
func TestLookupForms(t *testing.T) {
	f := newFixture(t, setup{})
	rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: submission(start.Add(-time.Minute)), header: authed()})
	var submitted struct {
		Data struct{ ID, Reference string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &submitted); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	id, ref := submitted.Data.ID, submitted.Data.Reference
	found := []string{id, strings.ToUpper(id), strings.ToUpper(id[:18]) + id[18:], ref}
	notFound := []string{
		strings.ReplaceAll(id, "-", ""),
		"{" + id + "}",
		"%7B" + id + "%7D",
		"urn:uuid:" + id,
		"%20" + id,
		id[:35],
		strings.Replace(id, "-", "_", 1),
		"MSG_" + ref[len("msg_"):],
		ref[len("msg_"):],
		flipFirstLetter(ref[len("msg_"):]),
	}
	for _, target := range append(found, notFound...) {
		want := http.StatusNotFound
		if slices.Contains(found, target) {
			want = http.StatusOK
		}
		rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages/" + target, header: authed()})
		if rec.Code != want {
			t.Errorf("GET /v1/messages/%s: %d, want %d", target, rec.Code, want)
		}
	}
}

// flipFirstLetter returns "msg_" and s with its first letter's case changed.
func flipFirstLetter(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b[i] = c ^ 0x20
			break
		}
	}
	return "msg_" + string(b)
}

// Handlers built while another serves share nothing mux writes to (it
// upper-cases a route's methods in place): the serving one keeps answering and
// routing by method, and so does each new one. Under -race this also failed
// while every router was given one package-level slice of methods.
func TestHandlersBuiltWhileAnotherServes(t *testing.T) {
	serving := newFixture(t, setup{})
	failures := make(chan string, 200)
	go func() {
		defer close(failures)
		for i := range 200 {
			method := []string{http.MethodGet, http.MethodHead, http.MethodPost}[i%3]
			rec := serving.do(t, request{method: method, target: "/healthz"})
			if want := map[string]int{http.MethodPost: http.StatusMethodNotAllowed}[method]; rec.Code != max(want, http.StatusOK) {
				failures <- fmt.Sprintf("%s /healthz on the serving handler: %d", method, rec.Code)
			}
		}
	}()
	for range 20 {
		built := newFixture(t, setup{})
		if rec := built.do(t, request{method: http.MethodHead, target: "/healthz"}); rec.Code != http.StatusOK {
			t.Errorf("HEAD /healthz on a new handler: %d", rec.Code)
		}
		if rec := built.do(t, request{method: http.MethodPost, target: "/healthz"}); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST /healthz on a new handler: %d, Allow %q, want 405 and GET, HEAD", rec.Code, rec.Header().Get("Allow"))
		}
	}
	for failure := range failures {
		t.Error(failure)
	}
}

// At full load the access lines of successful submissions are sampled; an error's
// line never is, however many successes surround it.
func TestAccessLogSamplesSuccessesNeverErrors(t *testing.T) {
	f := newFixture(t, setup{})
	const successes, failures = 1000, 300
	for i := range successes {
		if rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()}); rec.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", rec.Code, rec.Body)
		}
		if i%(successes/failures) == 0 && i/(successes/failures) < failures {
			f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: `{"name":1}`, header: authed()})
		}
	}
	byStatus := map[int64]int{}
	for _, e := range f.logs.FilterMessage("request").All() {
		byStatus[e.ContextMap()["status"].(int64)]++
	}
	if byStatus[http.StatusBadRequest] != failures {
		t.Errorf("%d access lines of %d refused submissions, want every one", byStatus[http.StatusBadRequest], failures)
	}
	// The sampler's second may end during the loop: at most two firsts and the
	// one-in-a-hundred of the rest, and at least one second's first.
	if n := byStatus[http.StatusOK]; n < 100 || n > 2*100+successes/100 {
		t.Errorf("%d access lines of %d successful submissions, want a sample", n, successes)
	}
}
