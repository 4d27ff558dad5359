package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
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

// Counts stay true: acme drops its health checks and keeps one in ten of
// the rest, errors included; globex keeps the same traffic whole. GET
// /v1/stats answers the same for both, bucket by bucket (counts, status
// classes and so error rates, percentiles, rankings), by the rollups'
// read and by a filter's; acme's say how many it dropped, which are the
// identities marked "stored": false. A message a sample kept says its rate.
func apiTestSampledCountsStayTrue(t *testing.T, s apiSuite) {
	e := s.start(t)
	e.putRules(t, apiAcmeLive, `{"ingest": [
		{"id": "probes", "scope": {"paths": ["/healthz"]}, "action": "drop"},
		{"id": "tenth", "status": ["100-599"], "action": "sample", "sample_rate": 10}]}`, 0, "noise").wantOK(t, "", "data")
	const exchanges, batch = 2000, 1000
	now := e.clock.Now()
	var items []any
	for i := range exchanges {
		edits := map[string]any{
			"name":                 []string{"shop", "billing", "search"}[i%3],
			"path":                 fmt.Sprintf("/v1/items/%d?page=%d", i%7, i%2),
			"response.status_code": []int{200, 200, 201, 404, 500, 503, 302}[i%7*i%11%7],
		}
		if i%10 == 3 {
			edits["path"] = "/healthz"
		}
		if i%5 != 4 {
			edits["duration_ms"] = float64(i%97)*3.25 + float64(i%13)*0.125
		}
		if i%4 == 0 {
			edits["route"] = "/v1/items/{id}"
		}
		items = append(items, apiItem(now.Add(-3*time.Hour).Add(time.Duration(i)*5*time.Second), edits))
	}
	dropped, kept := 0, ""
	for start := 0; start < exchanges; start += batch {
		e.ingestBatch(t, apiGlobexLive, items[start:start+batch], batch)
		r := e.post(t, apiAcmeLive, items[start:start+batch])
		r.wantOK(t, apiIngestedText, "data")
		for i := range batch {
			if stored, marked := apiAt(r.body, fmt.Sprintf("data.%d.stored", i)); marked && stored == false {
				dropped++
			} else if kept == "" { // every exchange kept was sampled
				kept = apiMust[string](t, r.body, fmt.Sprintf("data.%d.id", i))
			}
		}
	}
	if dropped < exchanges/2 || kept == "" {
		t.Fatalf("acme dropped %d of %d exchanges and kept %q; want most dropped, some kept", dropped, exchanges, kept)
	}
	e.reveal(t, apiAcmeLive, kept)
	if rate := apiInt(t, e.fetch(t, apiAcmeLive, kept), "sample_rate"); rate != 10 {
		t.Errorf("a message the sample kept says sample_rate %d, want 10", rate)
	}
	for _, query := range []url.Values{
		{"from": {apiRFC3339(now.Add(-4 * time.Hour))}, "to": {apiRFC3339(now)}}, // the rollups' read, where a store keeps them
		{"from": {apiRFC3339(now.Add(-4 * time.Hour))}, "to": {apiRFC3339(now)}, "name": {"billing"}, "interval": {"5m"}},
		{"from": {apiRFC3339(now.Add(-4 * time.Hour))}, "to": {apiRFC3339(now)}, "status_code": {"5xx"}},
		{"from": {apiRFC3339(now.Add(-4 * time.Hour))}, "to": {apiRFC3339(now)}, "path_prefix": {"/v1/items/3"}, "min_duration_ms": {"100"}},
	} {
		var acme, globex map[string]any
		e.poll(t, func() (bool, string) {
			acme, globex = e.stats(t, apiAcmeLive, query), e.stats(t, apiGlobexLive, query)
			return reflect.DeepEqual(apiWithoutDropped(acme), globex),
				fmt.Sprintf("statistics of %v differ between the traffic sampled and kept whole:\n%s\n%s", query, apiShow(acme), apiShow(globex))
		})
		if query.Get("name") == "" && query.Get("status_code") == "" && query.Get("path_prefix") == "" &&
			(apiInt(t, acme, "total.dropped") != dropped || apiInt(t, globex, "total.dropped") != 0 || apiInt(t, globex, "total.count") != exchanges) {
			t.Errorf("dropped %d and %d of %d, want acme's %d and none", apiInt(t, acme, "total.dropped"), apiInt(t, globex, "total.dropped"),
				apiInt(t, globex, "total.count"), dropped)
		}
	}
}

// apiWithoutDropped is a statistics reply with every dropped count zero, to
// compare with a scope's that dropped nothing.
func apiWithoutDropped(data map[string]any) map[string]any {
	var clean func(v any) any
	clean = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, inner := range v {
				if k == "dropped" {
					out[k] = json.Number("0")
				} else {
					out[k] = clean(inner)
				}
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, inner := range v {
				out[i] = clean(inner)
			}
			return out
		}
		return v
	}
	return clean(data).(map[string]any)
}
