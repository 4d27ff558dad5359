package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/adapters/webhook/webhooktest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
)

func mustSecret(t *testing.T) string {
	t.Helper()
	s, err := alerting.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// event is a firing event of a rule with every field the payload shows.
func event(t *testing.T, at time.Time) alerting.Event {
	t.Helper()
	r := alerting.DefaultRule()
	r.ID, r.Scope, r.Title = "alr_0123456789abcdef", domain.Scope{Account: "acme", Domain: "live"}, "Orders 5xx <&>"
	r.Filter = alerting.Filter{Name: "shop", PathPrefix: "/v1/orders", StatusClasses: []int{5}}
	r.Metric, r.Threshold, r.ResolveThreshold = alerting.MetricServerErrorRate, 0.1, 0.05
	r.CreatedAt, r.UpdatedAt = at.Add(-time.Hour), at.Add(-time.Hour)
	return alerting.Event{ID: "evt_Ab3dEf6hIj9kLm2n", Type: alerting.EventFiring, At: at, Rule: r, Status: alerting.Firing,
		Previous: alerting.Pending, Reason: alerting.ReasonThreshold, Since: at,
		Observation: alerting.Observation{From: at.Add(-6 * time.Minute), To: at.Add(-time.Minute), Count: 200,
			Status: stats.StatusCounts{0, 0, 0, 0, 40}, Errors: 40, ServerErrors: 40, Value: 0.2, HasValue: true,
			TopPaths: []stats.KeyCount{{Key: "/v1/orders/42", Count: 150, Errors: 38}}},
		PortalURL: "https://logs.example.com/portal?path_prefix=%2Fv1%2Forders#token=x"}
}

// endpointFor is an endpoint at url with secrets, in format.
func endpointFor(u string, format alerting.EndpointFormat, secrets ...string) alerting.Endpoint {
	e := alerting.Endpoint{ID: "whe_Ab3dEf6hIj9kLm2n", URL: u, Format: format, Enabled: true}
	for _, s := range secrets {
		e.Secrets = append(e.Secrets, alerting.WebhookSecret{Secret: s})
	}
	return e
}

func local() *webhook.Sender {
	return webhook.New(webhook.Config{AllowPrivate: true, Timeout: 5 * time.Second})
}

// A delivery carries the Standard Webhooks headers and body, and its signature
// is accepted by the official Go library and by reqlog's own verifier.
func TestSendIsStandardWebhooks(t *testing.T) {
	rcv := webhooktest.NewReceiver(t)
	secret := mustSecret(t)
	at := time.Now().Truncate(time.Second)
	e := event(t, at)
	d := alerting.NewDelivery(e, e.Rule.Scope, "whe_Ab3dEf6hIj9kLm2n", at)
	outcome, _ := local().Send(t.Context(), endpointFor(rcv.URL, alerting.FormatStandard, secret), d, at)
	if !outcome.Succeeded() {
		t.Fatalf("outcome %+v, want a 204", outcome)
	}
	got := rcv.Requests()[0]
	if got.Header.Get("webhook-id") != e.ID || got.Header.Get("webhook-timestamp") != webhooktest.Seconds(at) ||
		got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v: want webhook-id %s, webhook-timestamp %d, JSON", got.Header, e.ID, at.Unix())
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(got.Body, got.Header); err != nil {
		t.Errorf("the official Go library refuses the delivery: %v", err)
	}
	if err := webhook.Verify(secret, got.Header, got.Body, at, 5*time.Minute); err != nil {
		t.Errorf("webhook.Verify refuses the delivery: %v", err)
	}
	var payload struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      struct {
			EventID   string   `json:"event_id"`
			Status    string   `json:"status"`
			Value     *float64 `json:"value"`
			Threshold float64  `json:"threshold"`
			PortalURL string   `json:"portal_url"`
			Rule      struct {
				ID     string `json:"id"`
				Metric string `json:"metric"`
				Window string `json:"window"`
			} `json:"rule"`
			Window struct {
				Count        int64 `json:"count"`
				ServerErrors int64 `json:"server_errors"`
				TopPaths     []struct {
					Path string `json:"path"`
				} `json:"top_paths"`
			} `json:"window"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.Body, &payload); err != nil {
		t.Fatalf("body %s: %v", got.Body, err)
	}
	p := payload.Data
	if payload.Type != "alert.firing" || payload.Timestamp != domain.FormatTime(at) || p.EventID != e.ID || p.Status != "firing" ||
		p.Value == nil || *p.Value != 0.2 || p.Threshold != 0.1 || p.Rule.ID != e.Rule.ID || p.Rule.Window != "5m" ||
		p.Window.Count != 200 || p.Window.ServerErrors != 40 || len(p.Window.TopPaths) != 1 || p.PortalURL != e.PortalURL {
		t.Errorf("payload %s", got.Body)
	}
}

// Tampering with the id, the timestamp, the body or the secret breaks the
// signature for every verifier: the control that the verifiers really check.
func TestSignaturesCanFail(t *testing.T) {
	secret := mustSecret(t)
	at := time.Now()
	body := []byte(`{"type":"alert.test"}`)
	sig, err := webhook.Sign(secret, "evt_1", at.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	header := func(id string, ts int64, sig string) http.Header {
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {webhooktest.Seconds(time.Unix(ts, 0))}, "Webhook-Signature": {sig}}
	}
	wh, _ := standardwebhooks.NewWebhook(secret)
	for name, tc := range map[string]struct {
		h    http.Header
		body []byte
	}{
		"id":        {header("evt_2", at.Unix(), sig), body},
		"timestamp": {header("evt_1", at.Unix()-1, sig), body},
		"body":      {header("evt_1", at.Unix(), sig), []byte(`{"type":"alert.firing"}`)},
		"secret":    {header("evt_1", at.Unix(), strings.Replace(sig, "v1,", "v1,A", 1)), body},
	} {
		if err := wh.Verify(tc.body, tc.h); err == nil {
			t.Errorf("changed %s: the official library accepts it", name)
		}
		if err := webhook.Verify(secret, tc.h, tc.body, at, time.Minute); !errors.Is(err, webhook.ErrNoSignature) {
			t.Errorf("changed %s: webhook.Verify says %v, want ErrNoSignature", name, err)
		}
	}
	if err := webhook.Verify(secret, header("evt_1", at.Unix(), sig), body, at.Add(10*time.Minute), 5*time.Minute); !errors.Is(err, webhook.ErrTimestamp) {
		t.Errorf("ten minutes late: %v, want ErrTimestamp", err)
	}
	if err := webhook.Verify(secret, header("evt_1", at.Unix(), sig), body, at, time.Minute); err != nil {
		t.Errorf("unchanged: %v", err)
	}
}

// During a rotation each delivery carries a signature per secret: a receiver
// on the old secret and one on the new both accept it.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	rcv := webhooktest.NewReceiver(t)
	old, fresh := mustSecret(t), mustSecret(t)
	at := time.Now()
	e := endpointFor(rcv.URL, alerting.FormatStandard, old)
	e.Rotate(fresh, at)
	ev := event(t, at)
	if o, _ := local().Send(t.Context(), e, alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at), at); !o.Succeeded() {
		t.Fatalf("outcome %+v", o)
	}
	got := rcv.Requests()[0]
	if n := len(strings.Fields(got.Header.Get("webhook-signature"))); n != 2 {
		t.Errorf("webhook-signature %q: %d signatures, want 2", got.Header.Get("webhook-signature"), n)
	}
	for _, s := range []string{old, fresh} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(got.Body, got.Header); err != nil {
			t.Errorf("a receiver on one of the two secrets refuses it: %v", err)
		}
	}
}

// The Python standardwebhooks package, an implementation independent of
// reqlog's and of the Go library, accepts reqlog's deliveries, in both formats
// and during a rotation, and refuses a tampered one.
func TestPythonStandardWebhooksVerifies(t *testing.T) {
	verifier := webhooktest.NewPythonVerifier(t)
	rcv := webhooktest.NewReceiver(t)
	old, fresh := mustSecret(t), mustSecret(t)
	at := time.Now()
	ev := event(t, at)
	rotated := endpointFor(rcv.URL, alerting.FormatStandard, old)
	rotated.Rotate(fresh, at)
	for _, e := range []alerting.Endpoint{endpointFor(rcv.URL, alerting.FormatStandard, fresh), endpointFor(rcv.URL, alerting.FormatSlack, fresh), rotated} {
		if o, _ := local().Send(t.Context(), e, alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at), at); !o.Succeeded() {
			t.Fatalf("outcome %+v", o)
		}
	}
	got := rcv.Requests()
	cases := []webhooktest.Case{
		{Secret: fresh, Header: got[0].Header, Body: got[0].Body},
		{Secret: fresh, Header: got[1].Header, Body: got[1].Body},
		{Secret: old, Header: got[2].Header, Body: got[2].Body},
		{Secret: fresh, Header: got[2].Header, Body: got[2].Body},
		{Secret: fresh, Header: got[0].Header, Body: append([]byte(" "), got[0].Body...)}, // tampered
	}
	errs := verifier.Verify(t, cases)
	for i, err := range errs[:4] {
		if err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if errs[4] == nil {
		t.Error("the Python verifier accepted a tampered body")
	}
}

// URLs that lead inside are refused, by IP literal and by name, unless
// allowed; public addresses pass.
func TestCheckURLRefusesInternalAddresses(t *testing.T) {
	strict := webhook.New(webhook.DefaultConfig())
	for _, u := range []string{
		"http://127.0.0.1/x", "http://localhost:8080/x", "https://10.1.2.3/", "http://172.16.0.1/", "http://192.168.1.1/",
		"http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://[fd00:ec2::254]/", "http://[fe80::1]/",
		"http://100.100.100.200/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/", "http://[64:ff9b::a00:1]/",
		"http://224.0.0.1/", "http://name.invalid/",
	} {
		err := strict.CheckURL(t.Context(), u)
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) || invalid.Fields[0].Field != "url" {
			t.Errorf("CheckURL(%s) = %v, want a validation error naming url", u, err)
		}
	}
	for _, u := range []string{"https://93.184.215.14/hook", "https://[2606:4700::6810:84e5]/hook"} {
		if err := strict.CheckURL(t.Context(), u); err != nil {
			t.Errorf("CheckURL(%s) = %v, want it accepted", u, err)
		}
	}
	if err := local().CheckURL(t.Context(), "http://127.0.0.1:9/x"); err != nil {
		t.Errorf("with AllowPrivate, CheckURL(loopback) = %v", err)
	}
	for _, ip := range []string{"8.8.8.8", "2a00:1450::1"} {
		if !webhook.Public(netip.MustParseAddr(ip)) {
			t.Errorf("Public(%s) = false", ip)
		}
	}
}

// Every IPv6 form that carries an IPv4 address inside is judged by it, or
// refused whole: IPv4-compatible (::a.b.c.d), IPv4-mapped in its two
// spellings, IPv4-translated (::ffff:0:a.b.c.d), 6to4 and NAT64. Refused at
// creation and at dial time, where the same check runs on the dialled address.
func TestEmbeddedIPv4LoopbackAndPrivateAreRefused(t *testing.T) {
	strict := webhook.New(webhook.Config{Timeout: 2 * time.Second})
	for _, ip := range []string{
		"::127.0.0.1", "::7f00:1", "::10.0.0.1", "::169.254.169.254", "::ffff:127.0.0.1", "::ffff:7f00:1",
		"::ffff:0:127.0.0.1", "::ffff:0:a00:1", "2002:7f00:1::", "2002:a00:1::1", "64:ff9b::7f00:1", "64:ff9b::127.0.0.1",
		"64:ff9b:1::7f00:1",
	} {
		if webhook.Public(netip.MustParseAddr(ip)) {
			t.Errorf("Public(%s) = true, want it refused", ip)
		}
		u := "http://[" + ip + "]:9/hook"
		var invalid *domain.ValidationError
		if err := strict.CheckURL(t.Context(), u); !errors.As(err, &invalid) || invalid.Fields[0].Field != "url" {
			t.Errorf("CheckURL(%s) = %v, want a validation error naming url", u, err)
		}
		at := time.Now()
		ev := event(t, at)
		e := endpointFor(u, alerting.FormatStandard, mustSecret(t))
		if o, _ := strict.Send(t.Context(), e, alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at), at); o.StatusCode != 0 || !strings.Contains(o.Error, "internal address") {
			t.Errorf("send to %s: %+v, want refused at dial time", u, o)
		}
	}
}

// The address is checked again when the connection is made, so a URL that
// passed (or a name that resolves elsewhere now) cannot reach an internal
// address: nothing arrives, and the attempt fails saying why.
func TestSendRefusesInternalAddressAtDialTime(t *testing.T) {
	rcv := webhooktest.NewReceiver(t)
	u, _ := url.Parse(rcv.URL)
	byName := "http://localhost:" + u.Port() + u.Path
	strict := webhook.New(webhook.Config{Timeout: 5 * time.Second})
	at := time.Now()
	ev := event(t, at)
	for _, target := range []string{rcv.URL, byName} {
		e := endpointFor(target, alerting.FormatStandard, mustSecret(t))
		outcome, _ := strict.Send(t.Context(), e, alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at), at)
		if outcome.StatusCode != 0 || !strings.Contains(outcome.Error, "refused") {
			t.Errorf("send to %s: %+v, want refused before any request", target, outcome)
		}
	}
	if n := len(rcv.Requests()); n != 0 {
		t.Errorf("the internal receiver got %d requests", n)
	}
	// The control: allowed, the same receiver is reached.
	e := endpointFor(byName, alerting.FormatStandard, mustSecret(t))
	if o, _ := local().Send(t.Context(), e, alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at), at); !o.Succeeded() {
		t.Errorf("with AllowPrivate: %+v", o)
	}
}

// A redirect is a failed attempt, not followed; a reply's body is read only so
// far and logged shorter still; Retry-After is read in seconds and as a date.
func TestSendBoundsAndRedirects(t *testing.T) {
	rcv := webhooktest.NewReceiver(t)
	target := webhooktest.NewReceiver(t)
	at := time.Now().Truncate(time.Second)
	ev := event(t, at)
	e := endpointFor(rcv.URL, alerting.FormatStandard, mustSecret(t))
	d := alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at)
	rcv.Answer(
		webhooktest.Reply{Status: http.StatusFound, Body: ""},
		webhooktest.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "120", Body: strings.Repeat("é", 2<<20)},
		webhooktest.Reply{Status: http.StatusTooManyRequests, RetryAfter: at.Add(time.Hour).UTC().Format(http.TimeFormat)},
	)
	_ = target
	if o, _ := local().Send(t.Context(), e, d, at); o.StatusCode != http.StatusFound || o.Succeeded() {
		t.Errorf("a 302: %+v, want a failed attempt with status 302", o)
	}
	o, logged := local().Send(t.Context(), e, d, at)
	if o.RetryAfter != 2*time.Minute || len(logged) > alerting.MaxLoggedResponse || !strings.HasPrefix(logged, "éé") || !strings.Contains(o.Error, "503") {
		t.Errorf("a 503 with 4 MiB: %+v, logged %d bytes; want Retry-After 2m and at most %d bytes logged", o, len(logged), alerting.MaxLoggedResponse)
	}
	if o, _ := local().Send(t.Context(), e, d, at); o.RetryAfter != time.Hour {
		t.Errorf("a 429 with an HTTP date an hour on: Retry-After %s, want 1h", o.RetryAfter)
	}
	if n := len(rcv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// A receiver that does not answer in time is a failed attempt within the
// timeout, not a hung worker.
func TestSendTimesOut(t *testing.T) {
	rcv := webhooktest.NewReceiver(t)
	rcv.Answer(webhooktest.Reply{Status: 200, Hold: 3 * time.Second})
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: time.Second})
	at := time.Now()
	ev := event(t, at)
	e := endpointFor(rcv.URL, alerting.FormatStandard, mustSecret(t))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	o, _ := sender.Send(ctx, e, alerting.NewDelivery(ev, ev.Rule.Scope, e.ID, at), at)
	if o.StatusCode != 0 || !strings.Contains(o.Error, "timeout") {
		t.Errorf("a receiver that holds 3s, timeout 1s: %+v", o)
	}
}

// Slack gets a readable text: what happened, the numbers, the top path, a
// link, with Slack's markup characters escaped.
func TestSlackBody(t *testing.T) {
	at := time.Date(2026, 3, 2, 3, 7, 0, 0, time.UTC)
	raw, err := webhook.Body(alerting.FormatSlack, event(t, at))
	if err != nil {
		t.Fatal(err)
	}
	var msg map[string]string
	if err := json.Unmarshal(raw, &msg); err != nil || len(msg) != 1 {
		t.Fatalf("body %s: want one text field", raw)
	}
	text := msg["text"]
	for _, want := range []string{"*FIRING*", "Orders 5xx &lt;&amp;&gt;", "server_error_rate is 20 % (threshold &gt; 10 %) over 5m",
		"03:01 to 03:06 UTC", "200 requests", "40 server errors", "`/v1/orders/42` 150 (38 errors)",
		"<https://logs.example.com/portal?path_prefix=%2Fv1%2Forders#token=x|Open these requests in reqlog>"} {
		if !strings.Contains(text, want) {
			t.Errorf("Slack text lacks %q:\n%s", want, text)
		}
	}
	resolved := event(t, at)
	resolved.Type, resolved.Rule.Title = alerting.EventResolved, ""
	raw, _ = webhook.Body(alerting.FormatSlack, resolved)
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatal(err)
	}
	if text := msg["text"]; !strings.Contains(text, "*RESOLVED* server_error_rate &gt; 10 % shop /v1/orders 5xx") ||
		!strings.Contains(text, "(threshold &gt; 5 %)") {
		t.Errorf("resolved without a title: %s", text)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := webhook.DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Minute} {
		var invalid *domain.ValidationError
		if err := (webhook.Config{Timeout: d}).Validate(); !errors.As(err, &invalid) || !slices.ContainsFunc(invalid.Fields,
			func(f domain.FieldError) bool { return f.Field == "Timeout" }) {
			t.Errorf("Timeout %s: %v", d, err)
		}
	}
}
