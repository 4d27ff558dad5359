package portal_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapifx"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/keyring/keyringfx"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/portal/portalfx"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/app/appfx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// API keys of the service under test: two domains of one account, and another
// account.
const (
	acmeLive   = "rk_acme_live_9f2Lq"
	acmeTest   = "rk_acme_test_Wm37d"
	globexLive = "rk_globex_live_Q81z"
	secret     = "an-example-portal-secret-of-40-bytes-ok"
)

// service is reqlog wired as reqlogd wires it (app, keyring, portal, API) on a
// memory store, served on a real listener.
type service struct {
	URL   string
	clock *conformance.FakeClock
	logs  *observer.ObservedLogs
}

// startService starts a service; edit changes the portal's configuration.
func startService(t *testing.T, edit func(*portal.Config)) *service {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	site := portal.DefaultConfig()
	site.Secret = []byte(secret)
	api := httpapi.DefaultConfig()
	api.RateLimit = 0
	var keys keyring.Config
	for _, k := range []struct{ account, domain, key string }{
		{"acme", domain.DomainLive, acmeLive},
		{"acme", domain.DomainTest, acmeTest},
		{"globex", domain.DomainLive, globexLive},
	} {
		key, err := app.NewAPIKey(k.account, k.domain, k.key)
		if err != nil {
			t.Fatal(err)
		}
		keys.Keys = append(keys.Keys, key)
	}
	if edit != nil {
		edit(&site)
	}
	clock := conformance.NewFakeClock(time.Now())
	core, logs := observer.New(zapcore.DebugLevel)
	var handler http.Handler
	svc := fxtest.New(t,
		fx.NopLogger,
		appfx.Module,
		keyringfx.Module,
		portalfx.Module,
		httpapifx.HandlerModule,
		fx.Supply(cfg, keys, site, api, zap.New(core)),
		fx.Provide(func() ports.MessageStore { return memory.New() }),
		fx.Replace(fx.Annotate(ports.Clock(clock), fx.As(new(ports.Clock)))),
		fx.Populate(&handler),
	)
	svc.RequireStart()
	t.Cleanup(svc.RequireStop)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &service{URL: srv.URL, clock: clock, logs: logs}
}

// reply is a decoded JSON reply.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// call sends a request with credential (if any) and a JSON body (if any).
func (s *service) call(t *testing.T, method, path, credential, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: reply is not JSON: %v\n%s", method, path, err, raw)
		}
	}
	return r
}

// want fails unless the reply has status.
func (r reply) want(t *testing.T, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// fields returns the fields named in an error reply.
func (r reply) fields() []string {
	var names []string
	errs, _ := r.body["errors"].([]any)
	for _, e := range errs {
		if m, ok := e.(map[string]any); ok {
			names = append(names, m["field"].(string))
		}
	}
	return names
}

// submit stores one message of application with key and returns its id.
func (s *service) submit(t *testing.T, key, application, path string, status int) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"name": application, "created_at": s.clock.Now().Unix(), "method": "GET", "path": path,
		"request":  map[string]any{"header": map[string]any{"Authorization": "Bearer customer-secret"}},
		"response": map[string]any{"status_code": status, "body": `{"ok":true}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := s.call(t, http.MethodPost, "/v1/messages", key, string(body)).want(t, http.StatusOK)
	return r.body["data"].(map[string]any)["id"].(string)
}

// session creates a portal session with key and returns its data.
func (s *service) session(t *testing.T, key, body string) map[string]any {
	t.Helper()
	r := s.call(t, http.MethodPost, "/v1/portal/sessions", key, body).want(t, http.StatusOK)
	return r.body["data"].(map[string]any)
}

// listedIDs lists every message the credential may read, following the cursor.
func (s *service) listedIDs(t *testing.T, credential, query string) []string {
	t.Helper()
	var ids []string
	path := "/v1/messages?limit=2&" + query
	for {
		r := s.call(t, http.MethodGet, path, credential, "").want(t, http.StatusOK)
		for _, m := range r.body["messages"].([]any) {
			ids = append(ids, m.(map[string]any)["id"].(string))
		}
		next, _ := r.body["pagination"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			return ids
		}
		path = "/v1/messages?limit=2&cursor=" + next + "&" + query
	}
}

// logged reports whether any log entry mentions s, in its message or fields.
func logged(logs *observer.ObservedLogs, s string) bool {
	for _, e := range logs.All() {
		var line bytes.Buffer
		line.WriteString(e.Message)
		for k, v := range e.ContextMap() {
			line.WriteString(" " + k + "=" + toString(v))
		}
		if strings.Contains(line.String(), s) {
			return true
		}
	}
	return false
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
