package httpapitest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// Serve must run on the suite's policy, clock, keys and body limit, not the
// defaults of the configuration.
func TestServeUsesTheSuitesSettings(t *testing.T) {
	start := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	clock := conformance.NewFakeClock(start)
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 10 * time.Second
	policy.MaskedHeaders = []string{"X-Custom-Secret"}
	policy.RedactedFields = []string{"pin"}
	h := httpapitest.Serve(t, memory.New(), conformance.APIConfig{
		Keys:         []conformance.APIKey{{Account: "acme", Domain: "test", Key: "rk_suite_key"}},
		Policy:       policy,
		Clock:        clock,
		MaxBodyBytes: 1024,
	})
	do := func(method, target, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer rk_suite_key")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	item := `{"name":"shop","created_at":"2025-03-14T11:00:00Z","method":"GET","path":"/","request":{"header":{"X-Custom-Secret":"s","Authorization":"kept"},"body":"{\"pin\":\"1234\",\"password\":\"kept\"}"},"response":{"status_code":200}}`
	if rec := do(http.MethodPost, "/v1/messages", item); rec.Code != http.StatusOK {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	if rec := do(http.MethodPost, "/v1/messages", "["+strings.Repeat(item+",", 10)+item+"]"); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("body over the suite's 1024-byte limit: %d", rec.Code)
	}
	var page struct {
		Messages []struct {
			Domain    string `json:"domain"`
			UpdatedAt string `json:"updated_at"`
			Request   struct {
				Header map[string][]string `json:"header"`
				Body   string              `json:"body"`
			} `json:"request"`
		} `json:"messages"`
	}
	list := func() {
		rec := do(http.MethodGet, "/v1/messages", "")
		if err := json.Unmarshal(rec.Body.Bytes(), &page); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
	}
	clock.Advance(policy.VisibilityDelay - time.Microsecond)
	if list(); len(page.Messages) != 0 {
		t.Fatal("listed before the suite's visibility delay passed")
	}
	clock.Advance(time.Microsecond)
	if list(); len(page.Messages) != 1 {
		t.Fatalf("listed %d messages after the visibility delay", len(page.Messages))
	}
	m := page.Messages[0]
	if m.Domain != "test" || m.UpdatedAt != domain.FormatTime(start) {
		t.Errorf("domain %q, updated_at %q: not the suite's key and clock", m.Domain, m.UpdatedAt)
	}
	if got := m.Request.Header; got["X-Custom-Secret"][0] != domain.Mask || got["Authorization"][0] != "kept" {
		t.Errorf("headers %v: not masked by the suite's policy", got)
	}
	if got, want := m.Request.Body, `{"pin":"`+domain.Mask+`","password":"kept"}`; got != want {
		t.Errorf("body %s: not redacted by the suite's policy, want %s", got, want)
	}
}

// The HTTP suite says when it runs alerting or rule sets on memory stores
// rather than on the adapter's own, and is silent when it runs on them.
func TestFallbacksNameTheStoresServeDoesNotTest(t *testing.T) {
	bare := httpapitest.Fallbacks(memory.New())
	if len(bare) != 2 || !strings.Contains(bare[0], "ports.AlertStore") || !strings.Contains(bare[1], "ports.RuleSetStore") {
		t.Errorf("a message store alone: %q, want the alert store and the rule set store named", bare)
	}
	withAlerts := struct {
		*memory.Store
		*memory.AlertStore
		*memory.RuleSetStore
	}{memory.New(), memory.NewAlertStore(), memory.NewRuleSetStore()}
	if got := httpapitest.Fallbacks(withAlerts); len(got) != 0 {
		t.Errorf("a store with its alert and rule set stores: %q, want none", got)
	}
}
