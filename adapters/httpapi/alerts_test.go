package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/adapters/webhook/webhooktest"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// alertService is the API with alerting on memory stores, the portal on, a
// local receiver the sender may reach and a portal session token of the whole
// account.
type alertService struct {
	srv       *httptest.Server
	receiver  *webhooktest.Receiver
	evaluator *app.AlertEvaluator
	worker    *app.AlertDeliverer
	clock     *conformance.FakeClock
	token     string
}

func alertServer(t *testing.T) alertService {
	t.Helper()
	clock := conformance.NewFakeClock(start)
	p, err := portal.New(portal.Config{Secret: portal.RandomSecret(), PublicURL: "https://logs.example.com"}, clock)
	if err != nil {
		t.Fatal(err)
	}
	store, alertStore := memory.New(), memory.NewAlertStore()
	policy := app.DefaultConfig().Policy()
	keys := p.KeyStore(keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}}))
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	cfg := app.DefaultAlertConfig()
	alerts := app.NewAlerts(alertStore, sender, clock, nil, cfg, zap.NewNop())
	worker := app.NewAlertDeliverer(alertStore, sender, clock, "test", cfg, zap.NewNop())
	evaluator := app.NewAlertEvaluator(alertStore, app.NewStatistics(store, policy, clock), clock, p, "test", cfg, zap.NewNop())
	srv := httptest.NewServer(httpapi.New(app.NewIngester(store, policy, clock), app.NewReader(store, policy, clock), keys,
		httpapi.Options{Portal: p, Alerts: alerts}))
	t.Cleanup(srv.Close)
	session, err := p.CreateSession(domain.Principal{Scope: domain.Scope{Account: "acme", Domain: "live"}}, portal.SessionRequest{},
		httptest.NewRequest(http.MethodGet, "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	return alertService{srv: srv, receiver: webhooktest.NewReceiver(t), evaluator: evaluator, worker: worker, clock: clock, token: session.Token}
}

// Every alert operation's real replies, accepted and refused, against the
// document.
func TestAlertRepliesMatchOpenAPI(t *testing.T) {
	svc := alertServer(t)
	srv, rcv, worker, token := svc.srv, svc.receiver, svc.worker, svc.token
	c := newOpenAPIChecker(t, srv)
	var endpoint struct {
		Data struct{ ID, Secret string }
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: "/v1/alerts/endpoints",
		body: `{"url":"` + rcv.URL + `","description":"ops","format":"standard"}`, status: 201, requestValid: true}), &endpoint)
	if !strings.HasPrefix(endpoint.Data.Secret, "whsec_") {
		t.Fatalf("the created endpoint's reply has no secret: %+v", endpoint)
	}
	var rule struct{ Data struct{ ID string } }
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: "/v1/alerts/rules",
		body: `{"title":"Orders","name":"shop","path_prefix":"/v1/orders","method":"POST","status_classes":["5xx"],` +
			`"metric":"server_error_rate","comparison":">=","threshold":0.1,"resolve_threshold":0.05,"window":"10m","for":"2m",` +
			`"min_requests":20,"no_data":"ok","repeat_interval":"1h","endpoint_ids":["` + endpoint.Data.ID + `"],"enabled":true}`,
		status: 201, requestValid: true}), &rule)
	ruleURL, endpointURL := "/v1/alerts/rules/"+rule.Data.ID, "/v1/alerts/endpoints/"+endpoint.Data.ID
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"request_count","threshold":0}`, status: 201, requestValid: true})
	c.check(t, openAPICase{method: http.MethodPatch, target: ruleURL, body: `{"threshold":0.2,"title":null}`, status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodPatch, target: endpointURL, body: `{"description":"on call"}`, status: 200, requestValid: true})
	var rotated struct{ Data struct{ Secret string } }
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: endpointURL + "/rotate-secret", status: 200, requestValid: true}), &rotated)
	if rotated.Data.Secret == "" || rotated.Data.Secret == endpoint.Data.Secret {
		t.Errorf("rotation gave secret %q, want a new one", rotated.Data.Secret)
	}
	c.check(t, openAPICase{method: http.MethodPost, target: ruleURL + "/test", status: 202, requestValid: true})
	if _, err := worker.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Traffic that fires the rule: its state, history and event, against the
	// document too.
	items := make([]string, 30)
	for i := range items {
		items[i] = openAPIItem(start.Add(-3*time.Minute), `"name":"shop"`, `"name":"shop"`, `"method":"post"`, `"method":"POST"`,
			`"path":"/pay?x=1"`, `"path":"/v1/orders/7"`, `"status_code":201`, `"status_code":503`)
	}
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: "[" + strings.Join(items, ",") + "]", status: 200, requestValid: true})
	svc.clock.Advance(time.Minute) // past the visibility delay
	for minute := range 3 {
		if err := svc.evaluator.Evaluate(t.Context(), start.Truncate(time.Minute).Add(time.Duration(minute)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := worker.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := rcv.Requests()
	if len(got) != 2 {
		t.Fatalf("the receiver got %d requests, want the test event and the firing one", len(got))
	}
	var payload struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}
	mustUnmarshal(t, got[1].Body, &payload)
	schema := c.doc.Components.Schemas["AlertEventData"].Value
	if err := c.doc.ValidateSchemaJSON(schema, payload.Data, openapi3.EnableJSONSchema2020()); err != nil || payload.Type != "alert.firing" {
		t.Errorf("the %s payload breaks the document's AlertEventData: %v\n%s", payload.Type, err, got[1].Body)
	}
	for _, target := range []string{"/v1/alerts/rules", ruleURL, ruleURL + "/history", ruleURL + "/history?limit=1&before=5",
		"/v1/alerts/states", "/v1/alerts/states?from=" + start.Add(-time.Hour).Format(time.RFC3339) + "&to=1900000000",
		"/v1/alerts/endpoints", endpointURL, endpointURL + "/deliveries", endpointURL + "/deliveries?limit=5"} {
		body := c.check(t, openAPICase{method: http.MethodGet, target: target, status: 200, requestValid: true})
		if strings.Contains(string(body), "whsec_") {
			t.Errorf("GET %s shows a secret: %s", target, body)
		}
	}
	var log struct {
		Data []struct {
			StatusCode int `json:"status_code"`
		}
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodGet, target: endpointURL + "/deliveries", status: 200, requestValid: true}), &log)
	if len(log.Data) != 2 || log.Data[0].StatusCode != 204 {
		t.Errorf("delivery log after the test and the firing event: %+v, want two 204", log.Data)
	}
	// A portal session reads states, and nothing else of alerting.
	portalAuth := []string{"Authorization", "Bearer " + token}
	c.check(t, openAPICase{method: http.MethodGet, target: "/v1/alerts/states", header: portalAuth, status: 200, requestValid: true})
	for _, tc := range []openAPICase{
		{method: http.MethodGet, target: "/v1/alerts/rules"},
		{method: http.MethodGet, target: endpointURL},
		{method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"error_rate","threshold":0.1}`},
		{method: http.MethodDelete, target: ruleURL},
	} {
		tc.header, tc.status, tc.requestValid = portalAuth, 403, true
		c.check(t, tc)
	}
	for _, tc := range []openAPICase{
		{name: "no metric", method: http.MethodPost, target: "/v1/alerts/rules", body: `{"threshold":0.1}`, status: 400},
		{name: "bad window", method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"error_rate","threshold":0.1,"window":"5 minutes"}`, status: 400},
		{name: "rate over 1", method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"error_rate","threshold":5}`, status: 400, replyOnly: true},
		{name: "unknown field", method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"error_rate","threshold":0.1,"severity":"high"}`, status: 400},
		{name: "not an object", method: http.MethodPost, target: "/v1/alerts/rules", body: `[1]`, status: 400},
		{name: "unknown endpoint", method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"error_rate","threshold":0.1,"endpoint_ids":["whe_0123456789abcdef"]}`, status: 400, replyOnly: true},
		{name: "text body", method: http.MethodPost, target: "/v1/alerts/rules", body: `{}`, header: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "huge body", method: http.MethodPost, target: "/v1/alerts/rules", body: `{"title":"` + strings.Repeat("x", 70<<10) + `"}`, status: 413, replyOnly: true},
		{name: "bad update", method: http.MethodPatch, target: ruleURL, body: `{"comparison":"=="}`, status: 400},
		{name: "unknown rule", method: http.MethodGet, target: "/v1/alerts/rules/alr_0123456789abcdef", status: 404, requestValid: true},
		{name: "not a rule id", method: http.MethodPatch, target: "/v1/alerts/rules/x", body: `{}`, status: 404, requestValid: true},
		{name: "unknown endpoint id", method: http.MethodDelete, target: "/v1/alerts/endpoints/whe_0123456789abcdef", status: 404, requestValid: true},
		{name: "bad history limit", method: http.MethodGet, target: ruleURL + "/history?limit=0", status: 400},
		{name: "bad states range", method: http.MethodGet, target: "/v1/alerts/states?from=2000000000&to=1900000000", status: 400, replyOnly: true},
		{name: "internal URL", method: http.MethodPost, target: "/v1/alerts/endpoints", body: `{"url":"ftp://example.com/"}`, status: 400},
		{name: "no key", method: http.MethodGet, target: "/v1/alerts/rules", header: []string{"Authorization", ""}, status: 401},
	} {
		t.Run(tc.name, func(t *testing.T) { c.check(t, tc) })
	}
	c.check(t, openAPICase{method: http.MethodDelete, target: ruleURL, status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodDelete, target: endpointURL, status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodGet, target: ruleURL, status: 404, requestValid: true})
	c.checkUndocumented(t, openAPICase{method: http.MethodPut, target: ruleURL, status: 405}, routers.ErrMethodNotAllowed, "Allow")

	// Without alerting (a store without rules), every alert endpoint is a 404.
	off := newOpenAPIChecker(t, openAPIServer(t, memory.New(), nil))
	off.check(t, openAPICase{method: http.MethodGet, target: "/v1/alerts/states", status: 404, requestValid: true})
	off.check(t, openAPICase{method: http.MethodPost, target: "/v1/alerts/rules", body: `{"metric":"error_rate","threshold":0.1}`, status: 404, requestValid: true})
}

// An endpoint's URL that leads inside is refused, naming url, when the sender
// does not allow it.
func TestAlertEndpointURLGuard(t *testing.T) {
	store := memory.New()
	policy := app.DefaultConfig().Policy()
	clock := conformance.NewFakeClock(start)
	alerts := app.NewAlerts(memory.NewAlertStore(), webhook.New(webhook.DefaultConfig()), clock, nil, app.DefaultAlertConfig(), zap.NewNop())
	keys := keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}})
	h := httpapi.New(app.NewIngester(store, policy, clock), app.NewReader(store, policy, clock), keys, httpapi.Options{Alerts: alerts})
	f := fixture{handler: h, clock: clock}
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://169.254.169.254/latest/meta-data", "http://localhost/x", "http://[::1]/"} {
		rec := f.do(t, request{method: http.MethodPost, target: "/v1/alerts/endpoints", body: `{"url":"` + u + `"}`, header: authed()})
		e := decodeError(t, rec, http.StatusBadRequest)
		if len(e.Errors) != 1 || e.Errors[0].Field != "url" {
			t.Errorf("%s: %+v, want a 400 naming url", u, e)
		}
	}
	rec := f.do(t, request{method: http.MethodGet, target: "/v1/alerts/endpoints", header: authed()})
	var list struct{ Data []json.RawMessage }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Data) != 0 {
		t.Errorf("endpoints after refusals: %s", rec.Body)
	}
}
