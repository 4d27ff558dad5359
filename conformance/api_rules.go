package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The rule set part of the HTTP suite (RunAPITests): /v1/rules, black-box,
// and what a rule set does to what is stored.

// putRules replaces key's account's rule set, expecting version, saying why.
func (e *apiEnv) putRules(t *testing.T, key APIKey, doc string, version int64, reason string) apiReply {
	t.Helper()
	return e.do(t, http.MethodPut, "/v1/rules", []byte(doc), append(apiBearer(key), "Content-Type", apiJSON,
		"If-Match", fmt.Sprintf(`"%d"`, version), "X-Reqlog-Reason", reason)...)
}

// The rule set is the account's: either domain's key reads and replaces it,
// against its version; another account has its own; a stale version, a bad
// set or a portal session changes nothing; the history says who, why and
// what changed.
func apiTestRuleSets(t *testing.T, s apiSuite) {
	e := s.start(t)
	r := e.get(t, apiAcmeLive, "/v1/rules")
	r.wantOK(t, "", "data")
	if v := apiMust[json.Number](t, r.body, "data.version").String(); v != "0" || r.header.Get("ETag") != `"0"` {
		t.Fatalf("no rule set yet: version %s, ETag %q: %s", v, r.header.Get("ETag"), r)
	}
	first := `{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "remove"}}]}`
	r = e.putRules(t, apiAcmeLive, first, 0, "drop reset tokens")
	r.wantOK(t, "", "data")
	if r.header.Get("ETag") != `"1"` {
		t.Errorf("saved version 1, ETag %q", r.header.Get("ETag"))
	}
	second := `{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "mask"}}]}`
	e.putRules(t, apiAcmeTest, second, 1, "mask rather than remove").wantOK(t, "", "data") // the test domain's key: one set per account
	e.putRules(t, apiAcmeLive, first, 1, "an editor's stale copy").wantError(t, http.StatusPreconditionFailed)
	e.putRules(t, apiAcmeLive, `{"privacy": [{"id": "p", "select": ["**"], "match": {"detector": "dna"}, "action": {"type": "mask"}}]}`,
		2, "bad").wantError(t, http.StatusBadRequest, "privacy[0].match.detector")
	e.do(t, http.MethodPut, "/v1/rules", []byte(second), append(apiBearer(apiAcmeLive), "Content-Type", apiJSON, "X-Reqlog-Reason", "x")...).
		wantError(t, http.StatusPreconditionRequired)
	portal := e.portalSession(t, apiAcmeLive)
	e.putRules(t, portal, first, 2, "from the portal").wantError(t, http.StatusForbidden)
	e.get(t, portal, "/v1/rules").wantError(t, http.StatusForbidden)

	r = e.get(t, apiAcmeLive, "/v1/rules")
	r.wantOK(t, "", "data")
	if v, action := apiMust[json.Number](t, r.body, "data.version").String(), apiMust[string](t, r.body, "data.rules.privacy.0.action.type"); v != "2" || action != "mask" {
		t.Errorf("after the refusals: version %s with action %s, want version 2's mask: %s", v, action, r)
	}
	if v := apiMust[json.Number](t, e.get(t, apiGlobexLive, "/v1/rules").body, "data.version").String(); v != "0" {
		t.Errorf("another account sees version %s, want its own 0", v)
	}
	h := e.get(t, apiAcmeLive, "/v1/rules/history")
	h.wantOK(t, "", "data", "pagination")
	if n := len(apiMust[[]any](t, h.body, "data")); n != 2 ||
		apiMust[string](t, h.body, "data.0.reason") != "mask rather than remove" || apiMust[string](t, h.body, "data.0.diff.changed.0") != "token" ||
		apiMust[string](t, h.body, "data.1.diff.added.0") != "token" || !strings.HasPrefix(apiMust[string](t, h.body, "data.0.key_id"), "key_") {
		t.Errorf("history: %s", h)
	}

	// Version 2 rules acme's writes at once, and no one else's.
	item := apiItem(e.clock.Now().Add(-time.Second), map[string]any{"path": "/v1/reset?token=s3cret-value&page=2"})
	acme := e.ingestOne(t, apiAcmeLive, item)
	globex := e.ingestOne(t, apiGlobexLive, item)
	if got := apiMust[string](t, e.reveal(t, apiAcmeLive, acme.ID)[0], "path"); strings.Contains(got, "s3cret") || !strings.HasSuffix(got, "&page=2") {
		t.Errorf("acme stored path %q, want the token masked", got)
	}
	if got := apiMust[string](t, e.awaitListed(t, apiGlobexLive, globex.ID)[0], "path"); !strings.Contains(got, "s3cret-value") {
		t.Errorf("globex stored path %q, want it as sent: acme's rules are acme's", got)
	}
}

// A message an ingest rule drops is answered with its identity, marked
// "stored": false, and nothing else changes: the others are stored, the
// dropped one is not.
func apiTestDroppedMessages(t *testing.T, s apiSuite) {
	e := s.start(t)
	e.putRules(t, apiAcmeLive, `{"ingest": [{"id": "probes", "scope": {"paths": ["/healthz"]}, "action": "drop"}]}`, 0, "noise").wantOK(t, "", "data")
	at := e.clock.Now().Add(-time.Second)
	r := e.post(t, apiAcmeLive, []any{apiItem(at, nil), apiItem(at, map[string]any{"path": "/healthz"}), apiItem(at, map[string]any{"path": "/healthz", "response.status_code": 503})})
	r.wantOK(t, apiIngestedText, "data")
	apiWantKeys(t, r.body, "data.0", "id", "reference")
	apiWantKeys(t, r.body, "data.1", "id", "reference", "stored")
	apiWantKeys(t, r.body, "data.2", "id", "reference") // errors are kept unless a rule names them
	if stored := apiMust[bool](t, r.body, "data.1.stored"); stored {
		t.Errorf("the health check's identity says stored: %s", r)
	}
	dropped := apiMust[string](t, r.body, "data.1.id")
	e.wantStoredExactly(t, apiAcmeLive, apiMust[string](t, r.body, "data.0.id"), apiMust[string](t, r.body, "data.2.id"))
	e.wantAbsent(t, apiAcmeLive, dropped)

	single := e.post(t, apiAcmeLive, apiItem(at, map[string]any{"path": "/healthz"}))
	single.wantOK(t, apiIngestedText, "data")
	apiWantKeys(t, single.body, "data", "id", "reference", "stored")
}
