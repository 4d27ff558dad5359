package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapifx"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/keyring/keyringfx"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/app/appfx"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// spyStore is the memory store, recording every message exactly as the service
// hands it over for storage.
type spyStore struct {
	*memory.Store
	mu       sync.Mutex
	appended []domain.Message
}

func (s *spyStore) Append(ctx context.Context, msgs []domain.Message) error {
	s.mu.Lock()
	for _, m := range msgs {
		s.appended = append(s.appended, m.Clone())
	}
	s.mu.Unlock()
	return s.Store.Append(ctx, msgs)
}

// Secrets submitted in every place that must never reach the store or the logs;
// visible values ride along to prove the scans look at the right data.
const (
	secretAPIKey = "rk_live_KeySecretQ7w2"
	secretBody   = `{"user":"VISIBLE-user","password":"SECRET-pw","profile":{"API-Key":"SECRET-ak",` +
		`"cards":[{"card_number":"SECRET-card","cvv":739182}],"token":{"value":"SECRET-nested"}}}`
	secretForm  = "username=VISIBLE-form&password=SECRET-formpw&client_secret=SECRET-cs"
	secretReply = `{"access_token":"SECRET-at","token_type":"VISIBLE-bearer","refresh_token":"SECRET-rt"}`
)

var (
	secretValues  = []string{secretAPIKey, "SECRET-", "739182"}
	visibleValues = []string{"VISIBLE-user", "VISIBLE-form", "VISIBLE-bearer", "VISIBLE-header", domain.Mask}
)

func secretExchanges() string {
	item := func(reqHeader, reqBody, respHeader, respBody string) string {
		b, _ := json.Marshal(map[string]any{
			"name": "shop", "created_at": time.Now().Unix(), "method": "POST", "path": "/login",
			"request":  map[string]any{"header": json.RawMessage(reqHeader), "body": reqBody},
			"response": map[string]any{"status_code": 200, "header": json.RawMessage(respHeader), "body": respBody},
		})
		return string(b)
	}
	return "[" + strings.Join([]string{
		item(`{"Authorization":"Bearer SECRET-auth","Cookie":["sid=SECRET-cookie"],"Proxy-Authorization":"Basic SECRET-proxy",
			"x-api-key":"SECRET-xkey","Content-Type":"application/json","X-Visible":"VISIBLE-header"}`, secretBody,
			`{"Set-Cookie":"sid=SECRET-setcookie","Content-Type":"application/json; charset=utf-8"}`, secretReply),
		item(`{"Content-Type":"application/x-www-form-urlencoded"}`, secretForm, `{}`, `{"Secret":"SECRET-derived"}`),
		item(`{}`, `{"cvc":"SECRET-cvc"}`, `{"Content-Type":"application/problem+json"}`, `{"detail":{"ssn":"SECRET-ssn"}}`),
		// forms without their Content-Type: redacted by their shape
		item(`{}`, "user=VISIBLE-form&password=SECRET-bareform", `{"Content-Type":"text/plain"}`, "token=SECRET-plainform"),
		// JSON sent as a form (curl -d), JSON after a byte order mark, a name
		// encoding/json folds to password, a header CGI reads as X-Api-Key
		item(`{"Content-Type":"application/x-www-form-urlencoded; charset=UTF-8","X_Api_Key":"SECRET-underscore"}`,
			`{"user":"VISIBLE-user","password":"SECRET-formjson"}`, `{}`, "\uFEFF"+`{"token":"SECRET-bom"}`),
		item(`{}`, `{"paſſword":"SECRET-longs"}`, `{}`, `{}`),
	}, ",") + "]"
}

// TestSecretsReachNeitherStoreNorLogs runs the real service graph (fx, keyring, use
// cases, HTTP server) on a spying memory store with every log line observed.
func TestSecretsReachNeitherStoreNorLogs(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	store := &spyStore{Store: memory.New()}
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	key, err := app.NewAPIKey("acme", "live", secretAPIKey)
	if err != nil {
		t.Fatal(err)
	}
	var server *httpapi.Server
	svc := fxtest.New(t,
		fx.WithLogger(func() fxevent.Logger { return &fxevent.ZapLogger{Logger: logger.Named("fx")} }),
		fx.Supply(cfg, keyring.Config{Keys: []app.APIKey{key}}, logger, httpapi.Config{Addr: "127.0.0.1:0"}),
		fx.Provide(func() ports.MessageStore { return store }),
		appfx.Module, keyringfx.Module, httpapifx.Module,
		fx.Populate(&server),
	)
	svc.RequireStart()
	base := "http://" + server.Addr().String()

	call := func(method, target, key, body string) (int, string) {
		resp, reply := callAPI(t, method, base+target, key, body)
		return resp.StatusCode, string(reply)
	}
	if status, reply := call(http.MethodPost, "/v1/messages", secretAPIKey, secretExchanges()); status != http.StatusOK {
		t.Fatalf("submit: %d %s", status, reply)
	}
	// Refused requests carry secrets too.
	call(http.MethodPost, "/v1/messages", secretAPIKey, `{"name":{"password":"SECRET-invalid"},"request":"SECRET-bad"}`)
	call(http.MethodGet, "/v1/messages?cursor=SECRET-cursor", secretAPIKey, "")
	call(http.MethodGet, "/v1/messages", "rk_live_SECRET-wrong-key", "")
	status, listing := call(http.MethodGet, "/v1/messages", secretAPIKey, "")
	if status != http.StatusOK {
		t.Fatalf("list: %d %s", status, listing)
	}
	svc.RequireStop()

	stored, err := json.Marshal(store.appended)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Count(secretExchanges(), `"request"`); len(store.appended) != want {
		t.Fatalf("the store received %d messages, want %d", len(store.appended), want)
	}
	var logged strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&logged, "%s %s %s %s %v\n", e.LoggerName, e.Message, e.Caller, e.Stack, e.ContextMap())
	}
	if logs.FilterMessage("request").Len() < 5 {
		t.Fatalf("%d access log lines for 5 requests:\n%s", logs.FilterMessage("request").Len(), logged.String())
	}
	for where, text := range map[string]string{"stored messages": string(stored), "logs": logged.String(), "the listing": listing} {
		for _, secret := range secretValues {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s hold %q: ...%s...", where, secret, text[max(0, i-80):min(len(text), i+80)])
			}
		}
	}
	for _, visible := range visibleValues {
		if !strings.Contains(string(stored), visible) {
			t.Errorf("stored messages lack %q, so the scan above proves nothing", visible)
		}
	}
}
