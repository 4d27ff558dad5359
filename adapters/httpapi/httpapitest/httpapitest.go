// Package httpapitest wires the whole service for the HTTP conformance suite:
//
//	conformance.RunAPITests(t, newStore, httpapitest.Serve)
//
// It builds the same fx graph as cmd/reqlogd (app, keyring, portal, alerting
// and the API handler) on the given store, so the suite tests the real wiring.
package httpapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapifx"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/keyring/keyringfx"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/portal/portalfx"
	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/adapters/webhook/webhookfx"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/app/appfx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

var _ conformance.ServeFunc = Serve

// AlertPoll is how often the service's alert loops look at the clock.
const AlertPoll = 20 * time.Millisecond

// portalSecret signs portal sessions; a fixed one spares every test the warning
// about a random secret.
const portalSecret = "httpapitest-portal-secret-0123456789abcdef"

// rulesHashKey keys the hash action of the accounts' rule sets.
const rulesHashKey = "httpapitest-rules-hash-key"

// Serve returns the API handler of a service with cfg's keys, policy, clock and
// body limit on store. The service stops when the test ends, before the store's own
// cleanup runs (the store maker registered that earlier).
//
// Alerting runs on store when it is a ports.AlertStore too, rule sets when it
// is a ports.RuleSetStore, each otherwise on a memory store of its own, and the
// test's log says so (Fallbacks). Its loops look at the clock every AlertPoll, so that a test moving the fake clock on sees the next evaluation
// soon after; webhooks may reach loopback addresses (the suite's receiver).
func Serve(t *testing.T, store ports.MessageStore, cfg conformance.APIConfig) http.Handler {
	t.Helper()
	keys := keyring.Config{Keys: make([]app.APIKey, len(cfg.Keys))}
	for i, k := range cfg.Keys {
		key, err := app.NewAPIKey(k.Account, k.Domain, k.Key)
		if err != nil {
			t.Fatalf("httpapitest: key %d: %v", i, err)
		}
		keys.Keys[i] = key
	}
	site := portal.DefaultConfig()
	site.Secret = []byte(portalSecret)
	api := httpapi.DefaultConfig()
	if cfg.MaxBodyBytes > 0 {
		api.MaxBodyBytes = cfg.MaxBodyBytes
	}
	policy := cfg.Policy
	if policy.Sniff == nil {
		policy.Sniff = http.DetectContentType
	}
	if err := policy.Validate(); err != nil {
		t.Fatalf("httpapitest: policy: %v", err)
	}

	alerting := app.DefaultAlertConfig()
	alerting.Poll = AlertPoll
	// Said, not silent: a new adapter's alert cases would otherwise pass
	// without its own code.
	for _, fallback := range Fallbacks(store) {
		t.Log("httpapitest: " + fallback)
	}
	alerts, ok := store.(ports.AlertStore)
	if !ok {
		alerts = memory.NewAlertStore()
	}
	ruleSets, ok := store.(ports.RuleSetStore)
	if !ok {
		ruleSets = memory.NewRuleSetStore()
	}
	journal, ok := store.(ports.ErasureJournal)
	if !ok {
		journal = memory.NewErasureJournal()
	}
	core := app.DefaultConfig()
	core.Rules.HashKey, core.Rules.Poll = []byte(rulesHashKey), AlertPoll
	var handler http.Handler
	opts := []fx.Option{
		fx.NopLogger,
		appfx.Module,
		keyringfx.Module,
		portalfx.Module,
		webhookfx.Module,
		httpapifx.HandlerModule,
		fx.Supply(core, keys, site, api, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
			alerting, webhook.Config{AllowPrivate: true, Timeout: 5 * time.Second}),
		fx.Provide(func() ports.MessageStore { return store }, func() ports.AlertStore { return alerts },
			func() ports.RuleSetStore { return ruleSets }, func() ports.ErasureJournal { return journal }),
		fx.Replace(policy),
		fx.Populate(&handler),
	}
	if cfg.Clock != nil {
		opts = append(opts, fx.Replace(fx.Annotate(cfg.Clock, fx.As(new(ports.Clock)))))
	}
	svc := fxtest.New(t, opts...)
	svc.RequireStart()
	t.Cleanup(svc.RequireStop)
	return handler
}

// Fallbacks says which of the service's stores Serve runs on memory stores
// rather than on store: none when store is a ports.AlertStore and a
// ports.RuleSetStore too. An adapter's test that means to check its own alert
// and rule set stores through the HTTP suite can require none.
func Fallbacks(store ports.MessageStore) []string {
	const hint = " (embed the adapter's store in the one the maker returns, as adapters/sqlite's alertingStoreMaker does)"
	var fallbacks []string
	if _, ok := store.(ports.AlertStore); !ok {
		fallbacks = append(fallbacks, fmt.Sprintf("the alert routes run on a memory alert store: %T is not a ports.AlertStore%s", store, hint))
	}
	if _, ok := store.(ports.RuleSetStore); !ok {
		fallbacks = append(fallbacks, fmt.Sprintf("the rule set routes run on a memory rule set store: %T is not a ports.RuleSetStore%s", store, hint))
	}
	return fallbacks
}

// Submit POSTs body to /v1/messages on handler with key and returns the status
// and the reply's message, for adapters' tests of how a store's refusal reaches
// a client.
func Submit(t *testing.T, handler http.Handler, key, body string) (status int, message string) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	var reply struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
		t.Fatalf("reply %d %.200s: %v", rec.Code, rec.Body, err)
	}
	return rec.Code, reply.Message
}
