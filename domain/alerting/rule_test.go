package alerting_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
)

// obj is a JSON object's fields, as the HTTP edge decodes a body.
func obj(t *testing.T, body string) map[string]any {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return fields
}

func fieldsOf(err error) []string {
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) {
		return nil
	}
	var fields []string
	for _, f := range invalid.Fields {
		fields = append(fields, f.Field)
	}
	return fields
}

func TestParseAlertRuleDefaults(t *testing.T) {
	r, err := alerting.ParseRule(obj(t, `{"metric":"error_rate","threshold":0.05}`), alerting.DefaultRule())
	if err != nil {
		t.Fatal(err)
	}
	if r.Comparison != alerting.Above || r.ResolveThreshold != 0.05 || r.Window != 5*time.Minute || r.For != 0 ||
		r.NoData != alerting.NoDataKeep || r.RepeatInterval != 4*time.Hour || !r.Enabled || r.MinRequests != 0 {
		t.Errorf("defaults: %+v", r)
	}
}

func TestParseAlertRuleEveryField(t *testing.T) {
	body := `{"title":" Orders 5xx ","name":"shop","path_prefix":"/v1/orders","method":"post","status_classes":["5xx","4xx"],
		"metric":"duration_p95","comparison":"<=","threshold":200,"resolve_threshold":250,"window":"15m","for":"2m",
		"min_requests":20,"no_data":"ok","repeat_interval":"1h","endpoint_ids":["whe_Ab3dEf6hIj9kLm2n"],"enabled":false}`
	r, err := alerting.ParseRule(obj(t, body), alerting.DefaultRule())
	if err != nil {
		t.Fatal(err)
	}
	want := alerting.Rule{Title: "Orders 5xx", Filter: alerting.Filter{Name: "shop", PathPrefix: "/v1/orders", Method: "POST",
		StatusClasses: []int{4, 5}}, Metric: alerting.MetricDurationP95, Comparison: alerting.BelowOrEqual, Threshold: 200,
		ResolveThreshold: 250, Window: 15 * time.Minute, For: 2 * time.Minute, MinRequests: 20, NoData: alerting.NoDataOK,
		RepeatInterval: time.Hour, EndpointIDs: []string{"whe_Ab3dEf6hIj9kLm2n"}}
	if r.Title != want.Title || r.Filter.Name != want.Filter.Name || r.Filter.PathPrefix != want.Filter.PathPrefix ||
		r.Filter.Method != want.Filter.Method || !slices.Equal(r.Filter.StatusClasses, want.Filter.StatusClasses) ||
		r.Metric != want.Metric || r.Comparison != want.Comparison || r.Threshold != want.Threshold ||
		r.ResolveThreshold != want.ResolveThreshold || r.Window != want.Window || r.For != want.For ||
		r.MinRequests != want.MinRequests || r.NoData != want.NoData || r.RepeatInterval != want.RepeatInterval ||
		!slices.Equal(r.EndpointIDs, want.EndpointIDs) || r.Enabled {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
}

// Every bad value is refused naming its field, and a body with several names
// them all.
func TestParseAlertRuleNamesEveryBadField(t *testing.T) {
	base := `"metric":"error_rate","threshold":0.05`
	for _, tc := range []struct {
		body  string
		field string
	}{
		{`{"threshold":0.05}`, "metric"},
		{`{"metric":"error_rate"}`, "threshold"},
		{`{"metric":"latency","threshold":1}`, "metric"},
		{`{"metric":"error_rate","threshold":1.5}`, "threshold"},
		{`{"metric":"error_rate","threshold":"0.5"}`, "threshold"},
		{`{"metric":"request_count","threshold":-1}`, "threshold"},
		{`{` + base + `,"comparison":"=="}`, "comparison"},
		{`{` + base + `,"resolve_threshold":0.1}`, "resolve_threshold"},
		{`{` + base + `,"comparison":"<","resolve_threshold":0.01}`, "resolve_threshold"},
		{`{` + base + `,"window":"30s"}`, "window"},
		{`{` + base + `,"window":"90s"}`, "window"},
		{`{` + base + `,"window":"25h"}`, "window"},
		{`{` + base + `,"window":300}`, "window"},
		{`{` + base + `,"for":"-1m"}`, "for"},
		{`{` + base + `,"for":"1.5s"}`, "for"},
		{`{` + base + `,"for":"1.5m"}`, "for"},
		{`{` + base + `,"for":"5m1h"}`, "for"},
		{`{` + base + `,"for":""}`, "for"},
		{`{` + base + `,"status_classes":["5XX"]}`, "status_classes"},
		{`{` + base + `,"repeat_interval":"10s"}`, "repeat_interval"},
		{`{` + base + `,"min_requests":1.5}`, "min_requests"},
		{`{` + base + `,"min_requests":-1}`, "min_requests"},
		{`{` + base + `,"no_data":"alerting"}`, "no_data"},
		{`{` + base + `,"path_prefix":"orders"}`, "path_prefix"},
		{`{` + base + `,"method":"GE T"}`, "method"},
		{`{` + base + `,"status_classes":["5xx","5xx"]}`, "status_classes"},
		{`{` + base + `,"status_classes":["500"]}`, "status_classes"},
		{`{` + base + `,"status_classes":"5xx"}`, "status_classes"},
		{`{"metric":"duration_p99","threshold":1,"status_classes":["2xx","5xx"]}`, "status_classes"},
		{`{` + base + `,"endpoint_ids":["x"]}`, "endpoint_ids"},
		{`{` + base + `,"enabled":"yes"}`, "enabled"},
		{`{` + base + `,"title":7}`, "title"},
		{`{` + base + `,"title":"5xx\u0000 up"}`, "title"},
		{`{` + base + `,"title":"5xx\nup"}`, "title"},
		{`{` + base + `,"title":"5xx\tup"}`, "title"},
		{`{` + base + `,"title":"5xx\u001b[31mup"}`, "title"},
		{`{` + base + `,"title":"5xx\u0085up"}`, "title"},
		{`{` + base + `,"title":"5xx\u2028up"}`, "title"},
		{`{` + base + `,"title":"orders \u202egnp.exe"}`, "title"},
		{`{` + base + `,"treshold":0.1}`, "treshold"},
		{`{` + base + `,"":0.1}`, `""`},
	} {
		_, err := alerting.ParseRule(obj(t, tc.body), alerting.DefaultRule())
		if fields := fieldsOf(err); !slices.Equal(fields, []string{tc.field}) {
			t.Errorf("%s: fields %v (%v), want [%s]", tc.body, fields, err, tc.field)
		}
	}
	_, err := alerting.ParseRule(obj(t, `{"metric":"error_rate","threshold":0.05,"window":"1s","for":"x"}`), alerting.DefaultRule())
	if fields := fieldsOf(err); !slices.Equal(fields, []string{"for", "window"}) {
		t.Errorf("two bad fields: %v, want [for window]", fields)
	}
}

// An update names only what changes; the rest stays, and a resolve threshold
// left on the wrong side by a new threshold follows it.
func TestParseAlertRuleUpdate(t *testing.T) {
	stored, err := alerting.ParseRule(obj(t, `{"metric":"error_rate","threshold":0.10,"resolve_threshold":0.05,"name":"shop"}`), alerting.DefaultRule())
	if err != nil {
		t.Fatal(err)
	}
	stored.CreatedAt = alertStart
	r, err := alerting.ParseRule(obj(t, `{"threshold":0.2}`), stored)
	if err != nil || r.Threshold != 0.2 || r.ResolveThreshold != 0.05 || r.Filter.Name != "shop" {
		t.Errorf("threshold raised: %+v, %v; want resolve threshold kept, name kept", r, err)
	}
	r, err = alerting.ParseRule(obj(t, `{"threshold":0.01,"name":null}`), stored)
	if err != nil || r.ResolveThreshold != 0.01 || r.Filter.Name != "" {
		t.Errorf("threshold under the resolve threshold: %+v, %v; want it followed, name cleared", r, err)
	}
	if stored.Filter.Name != "shop" {
		t.Error("the update changed the rule it started from")
	}
}

func TestParseAlertEndpoint(t *testing.T) {
	e, err := alerting.ParseEndpoint(obj(t, `{"url":"https://hooks.slack.com/services/T0/B0/x","description":"ops"}`), alerting.DefaultEndpoint())
	if err != nil || e.Format != alerting.FormatSlack || !e.Enabled || e.Description != "ops" {
		t.Errorf("a Slack URL: %+v, %v; want format slack", e, err)
	}
	e, err = alerting.ParseEndpoint(obj(t, `{"url":"http://127.0.0.1:8080/hook","format":"standard"}`), alerting.DefaultEndpoint())
	if err != nil || e.Format != alerting.FormatStandard {
		t.Errorf("a URL with its format: %+v, %v", e, err)
	}
	for _, tc := range []struct{ body, field string }{
		{`{}`, "url"},
		{`{"url":"ftp://example.com/x"}`, "url"},
		{`{"url":"https:///x"}`, "url"},
		{`{"url":"/hook"}`, "url"},
		{`{"url":"https://example.com/#x"}`, "url"},
		{`{"url":"https://example.com:0/"}`, "url"},
		{`{"url":"https://example.com/","format":"teams"}`, "format"},
		{`{"url":"https://example.com/","secret":"whsec_x"}`, "secret"},
		{`{"url":"https://example.com/","enabled":null}`, "enabled"},
		{`{"url":"https://example.com/","description":"ops\u0007"}`, "description"},
		{`{"url":"https://example.com/","description":"ops\r\nteam"}`, "description"},
		{`{"url":"https://example.com/","description":"ops \u2066team"}`, "description"},
	} {
		_, err := alerting.ParseEndpoint(obj(t, tc.body), alerting.DefaultEndpoint())
		if fields := fieldsOf(err); !slices.Equal(fields, []string{tc.field}) {
			t.Errorf("%s: fields %v (%v), want [%s]", tc.body, fields, err, tc.field)
		}
	}
}

// During a rotation the new secret and the old one both sign, newest first,
// until the old one's grace ends.
func TestEndpointSecretRotation(t *testing.T) {
	e := alerting.Endpoint{Secrets: []alerting.WebhookSecret{{Secret: "whsec_b2xk", CreatedAt: alertStart}}}
	if got := e.SigningSecrets(alertStart); !slices.Equal(got, []string{"whsec_b2xk"}) {
		t.Fatalf("before rotation: %v", got)
	}
	at := alertStart.Add(time.Hour)
	e.Rotate("whsec_bmV3", at)
	if got := e.SigningSecrets(at); !slices.Equal(got, []string{"whsec_bmV3", "whsec_b2xk"}) {
		t.Errorf("during the grace: %v, want new then old", got)
	}
	later := at.Add(alerting.SecretRotationGrace)
	if got := e.SigningSecrets(later); !slices.Equal(got, []string{"whsec_bmV3"}) {
		t.Errorf("after the grace: %v, want the new one only", got)
	}
	e.Rotate("whsec_dGhpcmQ=", later)
	if len(e.Secrets) != 2 {
		t.Errorf("after a second rotation %d secrets kept, want 2 (the expired one dropped)", len(e.Secrets))
	}
}

func TestWebhookSecretRoundTrip(t *testing.T) {
	s, err := alerting.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	key, err := alerting.WebhookKey(s)
	if err != nil || len(key) != 24 {
		t.Errorf("key of %q: %d bytes, %v; want 24", s, len(key), err)
	}
	if _, err := alerting.WebhookKey("secret"); err == nil {
		t.Error("a secret without whsec_ was read")
	}
}

// A delivery retries on the schedule, waits longer when the receiver asks, and
// ends on success, on 410 and when the schedule is used up.
func TestDeliveryRetries(t *testing.T) {
	d := alerting.NewDelivery(alerting.Event{ID: "evt_0123456789abcdef"}, domain.Scope{}, "whe_0123456789abcdef", alertStart)
	at := alertStart
	d = d.Record(alerting.AttemptOutcome{StatusCode: 500}, at)
	if d.Status != alerting.DeliveryPending || !d.NextAttemptAt.Equal(at.Add(alerting.DeliverySchedule[0])) {
		t.Errorf("after a 500: %s, next at %s; want pending after %s", d.Status, d.NextAttemptAt, alerting.DeliverySchedule[0])
	}
	d = d.Record(alerting.AttemptOutcome{StatusCode: 429, RetryAfter: time.Hour}, at)
	if !d.NextAttemptAt.Equal(at.Add(time.Hour)) {
		t.Errorf("after a 429 with Retry-After 1h: next at %s", d.NextAttemptAt)
	}
	if ok := d.Record(alerting.AttemptOutcome{StatusCode: 204}, at); ok.Status != alerting.DeliveryDelivered || ok.Attempts != 3 {
		t.Errorf("after a 204: %s, %d attempts", ok.Status, ok.Attempts)
	}
	if gone := d.Record(alerting.AttemptOutcome{StatusCode: 410}, at); gone.Status != alerting.DeliveryFailed {
		t.Errorf("after a 410: %s, want failed", gone.Status)
	}
	for d.Status == alerting.DeliveryPending {
		d = d.Record(alerting.AttemptOutcome{Error: "connection refused"}, at)
	}
	if d.Attempts != len(alerting.DeliverySchedule)+1 {
		t.Errorf("gave up after %d attempts, want %d", d.Attempts, len(alerting.DeliverySchedule)+1)
	}
	if d.ID != alerting.NewDelivery(alerting.Event{ID: "evt_0123456789abcdef"}, domain.Scope{}, "whe_0123456789abcdef", at).ID {
		t.Error("the same event and endpoint gave another delivery id")
	}
}
