package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The alerting part of the HTTP suite (RunAPITests): the /v1/alerts API,
// black-box, and deliveries to a receiver on the suite's own loopback
// address, which the served service must be allowed to reach.

// apiReceiver records the webhooks the service sends.
type apiReceiver struct {
	url string
	mu  sync.Mutex
	got []apiWebhook
}

type apiWebhook struct {
	header http.Header
	body   []byte
}

func newAPIReceiver(t *testing.T) *apiReceiver {
	r := &apiReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, apiWebhook{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hooks"
	return r
}

func (r *apiReceiver) webhooks() []apiWebhook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// alertCall sends a JSON body (nil: none) to an alert endpoint with key.
func (e *apiEnv) alertCall(t *testing.T, key APIKey, method, target string, body any) apiReply {
	t.Helper()
	header := apiBearer(key)
	var raw []byte
	if body != nil {
		raw = apiBody(t, body)
		header = append(header, "Content-Type", apiJSON)
	}
	return e.do(t, method, target, raw, header...)
}

// wantCreated checks a 201 reply and returns its data.
func (r apiReply) wantCreated(t *testing.T) map[string]any {
	t.Helper()
	r.wantJSON(t, http.StatusCreated)
	return apiMust[map[string]any](t, r.body, "data")
}

// createEndpoint makes an endpoint on the receiver and returns its id and
// secret.
func (e *apiEnv) createEndpoint(t *testing.T, key APIKey, rcv *apiReceiver) (id, secret string) {
	t.Helper()
	data := e.alertCall(t, key, http.MethodPost, "/v1/alerts/endpoints", map[string]any{"url": rcv.url}).wantCreated(t)
	return apiMust[string](t, data, "id"), apiMust[string](t, data, "secret")
}

// apiErrorRule is a rule on the 5xx share of /v1/orders over 5 minutes.
func apiErrorRule(edits map[string]any) map[string]any {
	r := map[string]any{"title": "Orders 5xx", "path_prefix": "/v1/orders", "metric": "server_error_rate",
		"threshold": 0.2, "resolve_threshold": 0.1, "window": "5m", "min_requests": 5}
	for k, v := range edits {
		r[k] = v
	}
	return r
}

// A rule round-trips every field, takes its defaults, changes by PATCH and is
// gone after DELETE.
func apiTestAlertRules(t *testing.T, s apiSuite) {
	e := s.start(t)
	rule := map[string]any{"title": "Checkout latency", "name": "shop", "path_prefix": "/v1/checkout", "method": "POST",
		"status_classes": []string{"2xx", "3xx"}, "metric": "duration_p95", "comparison": ">=", "threshold": 250.5,
		"resolve_threshold": 200, "window": "15m", "for": "2m", "min_requests": 50, "no_data": "ok",
		"repeat_interval": "1h30m", "endpoint_ids": []string{}, "enabled": false}
	created := e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules", rule).wantCreated(t)
	id := apiMust[string](t, created, "id")
	if !strings.HasPrefix(id, "alr_") {
		t.Errorf("rule id %q, want alr_...", id)
	}
	for field, want := range rule {
		if got, _ := json.Marshal(created[field]); string(got) != string(mustJSON(t, want)) && fmt.Sprint(created[field]) != fmt.Sprint(want) {
			t.Errorf("created rule's %s = %s, want %s", field, got, mustJSON(t, want))
		}
	}
	got := e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/rules/"+id, nil)
	got.wantOK(t, "", "data")
	if a, b := mustJSON(t, apiMust[map[string]any](t, got.body, "data")), mustJSON(t, created); string(a) != string(b) {
		t.Errorf("GET gives %s, POST gave %s", a, b)
	}
	defaults := e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules", map[string]any{"metric": "error_rate", "threshold": 0.05}).wantCreated(t)
	for field, want := range map[string]string{"comparison": ">", "resolve_threshold": "0.05", "window": "5m", "for": "0s",
		"no_data": "keep", "repeat_interval": "4h", "enabled": "true", "min_requests": "0", "name": "<nil>", "status_classes": "[]"} {
		if got := fmt.Sprint(defaults[field]); got != want {
			t.Errorf("default %s = %s, want %s", field, got, want)
		}
	}
	patched := e.alertCall(t, apiAcmeLive, http.MethodPatch, "/v1/alerts/rules/"+id, map[string]any{"threshold": 300, "enabled": true, "name": nil})
	patched.wantOK(t, "", "data")
	if d := apiMust[map[string]any](t, patched.body, "data"); fmt.Sprintf("%v %v %v %v", d["threshold"], d["enabled"], d["name"], d["window"]) != "300 true <nil> 15m" {
		t.Errorf("patched rule %s: want threshold 300, enabled, no name, window kept", apiShow(d))
	}
	list := e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/rules", nil)
	list.wantOK(t, "", "data")
	if n := len(apiMust[[]any](t, list.body, "data")); n != 2 {
		t.Errorf("%d rules listed, want 2", n)
	}
	e.alertCall(t, apiAcmeLive, http.MethodDelete, "/v1/alerts/rules/"+id, nil).wantOK(t, "")
	e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/rules/"+id, nil).wantError(t, http.StatusNotFound)
	e.alertCall(t, apiAcmeLive, http.MethodDelete, "/v1/alerts/rules/"+id, nil).wantError(t, http.StatusNotFound)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Every bad value of a rule or an endpoint is a 400 naming the field, and
// nothing is created.
func apiTestAlertBadInput(t *testing.T, s apiSuite) {
	e := s.start(t)
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"threshold": 0.1}, "metric"},
		{map[string]any{"metric": "error_rate"}, "threshold"},
		{map[string]any{"metric": "p95", "threshold": 1}, "metric"},
		{map[string]any{"metric": "error_rate", "threshold": 2}, "threshold"},
		{map[string]any{"metric": "error_rate", "threshold": "0.1"}, "threshold"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "comparison": "!="}, "comparison"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "resolve_threshold": 0.5}, "resolve_threshold"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "window": "30s"}, "window"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "window": "2 days"}, "window"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "for": -5}, "for"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "min_requests": -1}, "min_requests"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "no_data": "maybe"}, "no_data"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "repeat_interval": "1s"}, "repeat_interval"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "status_classes": []string{"6xx"}}, "status_classes"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "path_prefix": "v1"}, "path_prefix"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "method": "G T"}, "method"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "endpoint_ids": []string{"whe_0123456789abcdef"}}, "endpoint_ids[0]"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "enabled": "yes"}, "enabled"},
		{map[string]any{"metric": "error_rate", "threshold": 0.1, "severity": "high"}, "severity"},
	} {
		e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules", tc.body).wantError(t, http.StatusBadRequest, tc.field)
	}
	for _, raw := range []string{`[]`, `"rule"`, `{"metric":`, ``} {
		e.do(t, http.MethodPost, "/v1/alerts/rules", []byte(raw), append(apiBearer(apiAcmeLive), "Content-Type", apiJSON)...).
			wantError(t, http.StatusBadRequest)
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "url"},
		{map[string]any{"url": "mailto:ops@example.com"}, "url"},
		{map[string]any{"url": "https://example.com/#x"}, "url"},
		{map[string]any{"url": "https://example.com/", "format": "teams"}, "format"},
		{map[string]any{"url": "https://example.com/", "secret": "whsec_mine"}, "secret"},
	} {
		e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/endpoints", tc.body).wantError(t, http.StatusBadRequest, tc.field)
	}
	for _, target := range []string{"/v1/alerts/rules", "/v1/alerts/endpoints"} {
		r := e.alertCall(t, apiAcmeLive, http.MethodGet, target, nil)
		r.wantOK(t, "", "data")
		if n := len(apiMust[[]any](t, r.body, "data")); n != 0 {
			t.Errorf("%s lists %d after refusals, want none", target, n)
		}
	}
}

// Rules and endpoints of one account and domain are invisible, unchangeable
// and undeletable from another; a portal session reads states only.
func apiTestAlertScoping(t *testing.T, s apiSuite) {
	e := s.start(t)
	rule := apiMust[string](t, e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules", apiErrorRule(nil)).wantCreated(t), "id")
	endpoint, _ := e.createEndpoint(t, apiAcmeLive, newAPIReceiver(t))
	for _, other := range []APIKey{apiAcmeTest, apiGlobexLive} {
		e.alertCall(t, other, http.MethodGet, "/v1/alerts/rules/"+rule, nil).wantError(t, http.StatusNotFound)
		e.alertCall(t, other, http.MethodPatch, "/v1/alerts/rules/"+rule, map[string]any{"threshold": 0.5}).wantError(t, http.StatusNotFound)
		e.alertCall(t, other, http.MethodDelete, "/v1/alerts/rules/"+rule, nil).wantError(t, http.StatusNotFound)
		e.alertCall(t, other, http.MethodPost, "/v1/alerts/rules/"+rule+"/test", nil).wantError(t, http.StatusNotFound)
		e.alertCall(t, other, http.MethodGet, "/v1/alerts/endpoints/"+endpoint, nil).wantError(t, http.StatusNotFound)
		e.alertCall(t, other, http.MethodPost, "/v1/alerts/endpoints/"+endpoint+"/rotate-secret", nil).wantError(t, http.StatusNotFound)
		e.alertCall(t, other, http.MethodPost, "/v1/alerts/rules", apiErrorRule(map[string]any{"endpoint_ids": []string{endpoint}})).
			wantError(t, http.StatusBadRequest, "endpoint_ids[0]")
		for _, target := range []string{"/v1/alerts/rules", "/v1/alerts/endpoints", "/v1/alerts/states"} {
			r := e.alertCall(t, other, http.MethodGet, target, nil)
			r.wantOK(t, "", "data")
			if n := len(apiMust[[]any](t, r.body, "data")); n != 0 {
				t.Errorf("%s:%s sees %d of %s", other.Account, other.Domain, n, target)
			}
		}
	}
	e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/rules/"+rule, nil).wantOK(t, "", "data")

	whole := e.portalSession(t, apiAcmeLive)
	states := e.alertCall(t, whole, http.MethodGet, "/v1/alerts/states", nil)
	states.wantOK(t, "", "data")
	if n := len(apiMust[[]any](t, states.body, "data")); n != 1 {
		t.Errorf("the account's portal session reads %d states, want 1", n)
	}
	shop := e.portalToken(t, apiAcmeLive, "shop")
	r := e.alertCall(t, shop, http.MethodGet, "/v1/alerts/states", nil)
	r.wantOK(t, "", "data")
	if n := len(apiMust[[]any](t, r.body, "data")); n != 0 {
		t.Errorf("the shop portal reads %d states of a rule on every application, want 0", n)
	}
	for _, call := range []struct{ method, target string }{
		{http.MethodGet, "/v1/alerts/rules"}, {http.MethodGet, "/v1/alerts/rules/" + rule}, {http.MethodDelete, "/v1/alerts/rules/" + rule},
		{http.MethodGet, "/v1/alerts/endpoints"}, {http.MethodGet, "/v1/alerts/endpoints/" + endpoint + "/deliveries"},
		{http.MethodGet, "/v1/alerts/rules/" + rule + "/history"},
	} {
		e.alertCall(t, whole, call.method, call.target, nil).wantError(t, http.StatusForbidden)
	}
	e.alertCall(t, whole, http.MethodPost, "/v1/alerts/rules", apiErrorRule(nil)).wantError(t, http.StatusForbidden)
}

// portalSession opens a portal session on every application of key's scope.
func (e *apiEnv) portalSession(t *testing.T, key APIKey) APIKey {
	t.Helper()
	r := e.do(t, http.MethodPost, "/v1/portal/sessions", []byte(`{}`), append(apiBearer(key), "Content-Type", apiJSON)...)
	r.wantOK(t, "", "data")
	return APIKey{Account: key.Account, Domain: key.Domain, Key: apiMust[string](t, r.body, "data.token")}
}

// An endpoint's secret is shown on creation and rotation, never by a read; a
// test event reaches the endpoint signed with it (Standard Webhooks, checked
// with the official Go library), its webhook-id the event's id, and the
// delivery log shows the attempt.
func apiTestAlertTestEvent(t *testing.T, s apiSuite) {
	e := s.start(t)
	rcv := newAPIReceiver(t)
	endpoint, secret := e.createEndpoint(t, apiAcmeLive, rcv)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q, want whsec_...", secret)
	}
	for _, target := range []string{"/v1/alerts/endpoints", "/v1/alerts/endpoints/" + endpoint} {
		if r := e.alertCall(t, apiAcmeLive, http.MethodGet, target, nil); strings.Contains(string(r.raw), secret) || strings.Contains(string(r.raw), "whsec_") {
			t.Errorf("GET %s shows the secret: %s", target, r)
		}
	}
	rule := apiMust[string](t, e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules", apiErrorRule(nil)).wantCreated(t), "id")
	queued := e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules/"+rule+"/test", nil)
	queued.wantJSON(t, http.StatusAccepted)
	eventID := apiMust[string](t, queued.body, "data.event_id")
	var got []apiWebhook
	e.poll(t, func() (bool, string) {
		got = rcv.webhooks()
		return len(got) > 0, "the test event never reached the receiver"
	})
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.VerifyIgnoringTimestamp(got[0].body, got[0].header); err != nil {
		t.Errorf("the test event's signature does not verify: %v", err)
	}
	var payload struct {
		Type string `json:"type"`
		Data struct {
			EventID string `json:"event_id"`
			Rule    struct{ ID string }
		} `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &payload); err != nil || payload.Type != "alert.test" || payload.Data.EventID != eventID ||
		got[0].header.Get("webhook-id") != eventID || payload.Data.Rule.ID != rule {
		t.Errorf("test event %s (%v): want alert.test %s of rule %s, webhook-id the same", got[0].body, err, eventID, rule)
	}
	e.poll(t, func() (bool, string) {
		r := e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/endpoints/"+endpoint+"/deliveries", nil)
		if r.status != http.StatusOK {
			return false, r.String()
		}
		log := apiMust[[]any](t, r.body, "data")
		return len(log) == 1 && fmt.Sprint(apiMust[map[string]any](t, log[0], "")["status_code"]) == "204", "delivery log " + r.String()
	})
	rotated := e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/endpoints/"+endpoint+"/rotate-secret", nil)
	rotated.wantOK(t, "", "data")
	if fresh := apiMust[string](t, rotated.body, "data.secret"); fresh == secret || !strings.HasPrefix(fresh, "whsec_") {
		t.Errorf("rotation gave %q, want a new secret", fresh)
	}
}

// Traffic that crosses the threshold fires the rule, and traffic that brings it
// back resolves it: the receiver gets alert.firing then alert.resolved, and the
// states and history say the same. The fake clock drives the evaluations.
func apiTestAlertFiresAndResolves(t *testing.T, s apiSuite) {
	e := s.start(t)
	rcv := newAPIReceiver(t)
	_, secret := e.createEndpoint(t, apiAcmeLive, rcv)
	rule := apiMust[string](t, e.alertCall(t, apiAcmeLive, http.MethodPost, "/v1/alerts/rules", apiErrorRule(nil)).wantCreated(t), "id")
	at := e.clock.Now().Add(-3 * time.Minute) // inside the window of the next few evaluations
	burst := []any{}
	for i := range 10 {
		status := 200
		if i%2 == 0 {
			status = 503
		}
		burst = append(burst, apiItem(at, map[string]any{"response.status_code": status, "path": fmt.Sprintf("/v1/orders/%d", i)}))
	}
	e.ingestBatch(t, apiAcmeLive, burst, len(burst))
	e.awaitStatus(t, rule, "firing")
	// The recovery a minute and a half back from now: inside the window of
	// the next four evaluations, so a store whose reads lag (Elasticsearch's
	// refresh) has several to show it before the window leaves it.
	recovery, recovered := []any{}, e.clock.Now().Add(-90*time.Second)
	for i := range 40 {
		recovery = append(recovery, apiItem(recovered, map[string]any{"path": fmt.Sprintf("/v1/orders/%d", i)}))
	}
	e.ingestBatch(t, apiAcmeLive, recovery, len(recovery))
	e.awaitStatus(t, rule, "resolved")
	var got []apiWebhook
	e.poll(t, func() (bool, string) {
		got = rcv.webhooks()
		return len(got) >= 2, fmt.Sprintf("the receiver got %d webhooks, want firing and resolved", len(got))
	})
	wh, _ := standardwebhooks.NewWebhook(secret)
	var types []string
	for _, w := range got {
		if err := wh.VerifyIgnoringTimestamp(w.body, w.header); err != nil {
			t.Errorf("a delivery's signature does not verify: %v", err)
		}
		var p struct {
			Type string `json:"type"`
			Data struct {
				Value  float64 `json:"value"`
				Window struct {
					Count int `json:"count"`
				} `json:"window"`
			} `json:"data"`
		}
		if err := json.Unmarshal(w.body, &p); err != nil {
			t.Fatal(err)
		}
		types = append(types, p.Type)
		if p.Type == "alert.firing" && (p.Data.Value != 0.5 || p.Data.Window.Count != 10) {
			t.Errorf("firing event %s: want 0.5 of 10 requests", w.body)
		}
	}
	if !slices.Equal(types, []string{"alert.firing", "alert.resolved"}) {
		t.Errorf("events %v, want firing then resolved", types)
	}
	h := e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/rules/"+rule+"/history", nil)
	h.wantJSON(t, http.StatusOK)
	var moves []string
	for _, tr := range apiMust[[]any](t, h.body, "data") {
		m := tr.(map[string]any)
		moves = append(moves, fmt.Sprintf("%s>%s", m["from"], m["to"]))
	}
	if !slices.Equal(moves, []string{"firing>resolved", "ok>firing"}) {
		t.Errorf("history %v, want firing>resolved, ok>firing (newest first)", moves)
	}
}

// awaitStatus moves the fake clock a minute at a time (an evaluation each)
// until rule has status, for at most ten evaluations; after each move it polls
// the state for up to ten seconds (the service evaluates within its poll; a
// loaded machine and a store's read lag take longer), and moves on only then.
func (e *apiEnv) awaitStatus(t *testing.T, rule, status string) {
	t.Helper()
	var last string
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for range 10 {
		e.clock.Advance(time.Minute)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); <-tick.C {
			r := e.alertCall(t, apiAcmeLive, http.MethodGet, "/v1/alerts/states", nil)
			for _, st := range apiMust[[]any](t, r.body, "data") {
				if m := st.(map[string]any); apiMust[string](t, m, "rule.id") == rule {
					if last = apiShow(m); m["status"] == status {
						return
					}
				}
			}
		}
	}
	t.Fatalf("rule %s never became %s; last state %s", rule, status, last)
}
