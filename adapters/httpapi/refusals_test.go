package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// A 401 says why: an unknown API key, an expired portal session, or a portal
// token that is not valid; never more (no claim, account or part of the token).
func TestUnauthorizedSaysWhy(t *testing.T) {
	clock := conformance.NewFakeClock(start)
	signer, err := portal.NewSigner([]byte(strings.Repeat("s", portal.MinSecretBytes)), clock)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := portal.NewSigner([]byte(strings.Repeat("f", portal.MinSecretBytes)), clock)
	if err != nil {
		t.Fatal(err)
	}
	keys := portal.NewKeyStore(keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}}), signer)
	f := newFixture(t, setup{keys: keys})
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	session, _, err := signer.Issue(scope, "shop", start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	forged, _, err := forger.Issue(scope, "shop", start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	call := func(credential string) *errorJSON {
		rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: map[string]string{"Authorization": "Bearer " + credential}})
		if rec.Code == http.StatusOK {
			return nil
		}
		e := decodeError(t, rec, http.StatusUnauthorized)
		for _, part := range strings.Split(credential, ".") {
			if len(part) >= 8 && strings.Contains(rec.Body.String(), part) {
				t.Errorf("the refusal %s repeats part of the credential", rec.Body)
			}
		}
		if strings.Contains(rec.Body.String(), "acme") || len(e.Errors) > 0 {
			t.Errorf("the refusal %s says more than why", rec.Body)
		}
		return &e
	}
	if e := call(session); e != nil {
		t.Fatalf("a fresh session is refused: %s", e.Message)
	}
	wants := map[string]string{
		"forged":         "the portal session token is not valid",
		"garbled":        "the portal session token is not valid",
		"unknown key":    "the API key is not valid",
		"expired":        "the portal session has expired: open a new portal link",
		"forged, later":  "the portal session token is not valid",
		"garbled, later": "the portal session token is not valid",
	}
	for name, credential := range map[string]string{"forged": forged, "garbled": session[:len(session)-3] + "abc", "unknown key": "rk_live_nope"} {
		if e := call(credential); e == nil || e.Message != wants[name] {
			t.Errorf("%s: %+v, want %q", name, e, wants[name])
		}
	}
	clock.Advance(time.Minute)
	for name, credential := range map[string]string{"expired": session, "forged, later": forged, "garbled, later": session[:len(session)-3] + "abc"} {
		if e := call(credential); e == nil || e.Message != wants[name] {
			t.Errorf("%s: %+v, want %q", name, e, wants[name])
		}
	}
}

// stallingStore holds every read and write until its caller's context ends,
// then fails as a store does with the context's error; entered says when a call
// is held.
type stallingStore struct {
	ports.MessageStore
	entered chan struct{}
}

func (s stallingStore) stall(ctx context.Context) error {
	s.entered <- struct{}{}
	<-ctx.Done()
	return fmt.Errorf("stalling store: %w", ctx.Err())
}

func (s stallingStore) Append(ctx context.Context, _ []domain.Message) error { return s.stall(ctx) }
func (s stallingStore) List(ctx context.Context, _ domain.Query, _ time.Time) (domain.Page, error) {
	return domain.Page{}, s.stall(ctx)
}

func (s stallingStore) Stats(ctx context.Context, _ stats.Query, _ time.Time) (stats.Stats, error) {
	return stats.Stats{}, s.stall(ctx)
}

// A client that disconnects while the store works is counted under 499, never
// 5xx, and logged at debug as a client that went away, not as a failed request.
func TestClientThatLeftIsCountedAs499(t *testing.T) {
	store := stallingStore{MessageStore: memory.New(), entered: make(chan struct{})}
	f := newFixture(t, setup{store: store, readiness: store.stall})
	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	routes := []struct{ method, route, target, body string }{
		{http.MethodGet, "/readyz", "/readyz", ""},
		{http.MethodPost, "/v1/messages", "/v1/messages", submission(start)},
		{http.MethodGet, "/v1/messages", "/v1/messages?q=x", ""},
		{http.MethodGet, "/v1/stats", "/v1/stats", ""},
		{http.MethodGet, "/v1/messages/export", "/v1/messages/export?format=csv", ""},
	}
	for _, r := range routes {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, r.method, srv.URL+r.target, strings.NewReader(r.body))
		for k, v := range authed() {
			req.Header.Set(k, v)
		}
		done := make(chan error, 1)
		go func() {
			resp, err := srv.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		<-store.entered // the handler waits on the store
		cancel()        // and the client goes away
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("%s %s: the client got %v, want its own cancellation", r.method, r.target, err)
		}
	}
	for _, r := range routes {
		awaitCounter(t, f.handler, 1, "reqlog_http_requests_total", "method", r.method, "route", r.route, "code", "499")
	}
	families := scrape(t, f.handler)
	for _, m := range families["reqlog_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "code" && l.GetValue()[0] == '5' {
				t.Errorf("a 5xx was counted: %v", m)
			}
		}
	}
	if n := f.logs.FilterMessage("the client went away before its reply").FilterLevelExact(zapcore.DebugLevel).Len(); n != len(routes) {
		t.Errorf("%d debug lines for a client that went away, want %d: %v", n, len(routes), f.logs.All())
	}
	for _, e := range f.logs.All() {
		if e.Level >= zapcore.WarnLevel {
			t.Errorf("logged at %s: %s %v", e.Level, e.Message, e.ContextMap())
		}
		if e.Message == "request" && e.ContextMap()["status"] != int64(499) && e.ContextMap()["route"] != "/metrics" {
			t.Errorf("access line %v, want status 499", e.ContextMap())
		}
	}
}

// Work the server itself canceled, while its client still waits, is still a
// 503: only a client's own leaving is a 499.
func TestCanceledWorkOfAWaitingClientIs503(t *testing.T) {
	f := newFixture(t, setup{store: flakyStore{MessageStore: memory.New(), err: fmt.Errorf("stopping: %w", context.Canceled)}})
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: authed()})
	decodeError(t, rec, http.StatusServiceUnavailable)
	if rec.Header().Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %v", rec.Header())
	}
}

// A client that hangs up in the middle of its POST body is counted under 499,
// like any client that left, not as a 400 it will never read.
func TestClientThatHangsUpMidBodyIsCountedAs499(t *testing.T) {
	f := newFixture(t, setup{})
	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := submission(start)
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: reqlog\r\nContent-Type: application/json\r\n"+
		"Authorization: %s\r\nContent-Length: %d\r\n\r\n%s", authed()["Authorization"], len(body)+100, body)
	conn.Close() // a hundred bytes short
	awaitCounter(t, f.handler, 1, "reqlog_http_requests_total", "method", http.MethodPost, "route", "/v1/messages", "code", "499")
	if n := f.logs.FilterMessage("the client went away before its reply").Len(); n != 1 {
		t.Errorf("%d lines for the client that went away, want 1: %v", n, f.logs.All())
	}
}
