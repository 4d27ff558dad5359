package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/adapters/webhook/webhooktest"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
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

var acmeKey = domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}

// alertService is one service's alerting on memory stores, a fake clock and a
// local receiver, the way the fx module wires it.
type alertService struct {
	messages  *memory.Store
	store     *memory.AlertStore
	clock     *conformance.FakeClock
	alerts    *app.Alerts
	evaluator *app.AlertEvaluator
	worker    *app.AlertDeliverer
	receiver  *webhooktest.Receiver
	endpoint  alerting.Endpoint
	msgs      int
}

func newAlerting(t *testing.T, start time.Time) *alertService {
	return newAlertingWith(t, start, app.DefaultConfig().Policy())
}

// newAlertingWith is newAlerting whose statistics read under policy.
func newAlertingWith(t *testing.T, start time.Time, policy domain.Policy) *alertService {
	a := &alertService{messages: memory.New(), store: memory.NewAlertStore(), clock: conformance.NewFakeClock(start),
		receiver: webhooktest.NewReceiver(t)}
	cfg := app.DefaultAlertConfig()
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	stats := app.NewStatistics(a.messages, policy, a.clock)
	a.alerts = app.NewAlerts(a.store, sender, a.clock, nil, cfg, zap.NewNop())
	a.evaluator = app.NewAlertEvaluator(a.store, stats, a.clock, nil, "replica", cfg, zap.NewNop())
	a.worker = app.NewAlertDeliverer(a.store, sender, a.clock, "replica", cfg, zap.NewNop())
	var err error
	a.endpoint, err = a.alerts.CreateEndpoint(t.Context(), acmeKey, map[string]any{"url": a.receiver.URL})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// traffic stores n requests of status created at at, visible at once.
func (a *alertService) traffic(t *testing.T, at time.Time, n, status int) {
	t.Helper()
	msgs := make([]domain.Message, n)
	for i := range msgs {
		a.msgs++
		id := fmt.Sprintf("01890000-0000-7000-8000-%012d", a.msgs)
		msgs[i] = domain.Message{ID: id, Reference: fmt.Sprintf("msg_%012d", a.msgs), Account: "acme", Domain: domain.DomainLive,
			Name: "shop", Method: "POST", Path: "/v1/orders/42?x=1", StatusCode: status, Duration: 12 * time.Millisecond, HasDuration: true,
			CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}
	if err := a.messages.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
}

// minute moves the clock to a few seconds past the minute after, evaluates
// and delivers what is due.
func (a *alertService) minute(t *testing.T) {
	t.Helper()
	a.clock.Set(a.clock.Now().Truncate(time.Minute).Add(time.Minute + 3*time.Second))
	if _, err := a.evaluator.Tick(t.Context()); err != nil {
		t.Fatalf("evaluation: %v", err)
	}
	a.deliver(t)
}

func (a *alertService) deliver(t *testing.T) {
	t.Helper()
	for {
		n, err := a.worker.DeliverOnce(t.Context())
		if err != nil {
			t.Fatalf("delivery: %v", err)
		}
		if n == 0 {
			return
		}
	}
}

type delivered struct {
	Type string `json:"type"`
	Data struct {
		EventID string   `json:"event_id"`
		Status  string   `json:"status"`
		Value   *float64 `json:"value"`
		Window  struct {
			From  string `json:"from"`
			To    string `json:"to"`
			Count int64  `json:"count"`
		} `json:"window"`
	} `json:"data"`
}

func decodeAll(t *testing.T, reqs []webhooktest.Request, secret string) []delivered {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]delivered, len(reqs))
	for i, r := range reqs {
		if err := wh.VerifyIgnoringTimestamp(r.Body, r.Header); err != nil {
			t.Errorf("delivery %d: the signature does not verify: %v", i, err)
		}
		if err := json.Unmarshal(r.Body, &out[i]); err != nil {
			t.Fatalf("delivery %d: %s: %v", i, r.Body, err)
		}
		if got := r.Header.Get("webhook-id"); got != out[i].Data.EventID {
			t.Errorf("delivery %d: webhook-id %s, event_id %s", i, got, out[i].Data.EventID)
		}
	}
	return out
}

// A 5xx burst on /v1/orders at 03:00 is sent as it happens, through the same
// statistics as the chart, and its end too.
func TestAlertFiresAndResolvesOnStoredTraffic(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	a := newAlerting(t, start)
	rule, err := a.alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"title":"Orders 5xx","path_prefix":"/v1/orders",
		"metric":"server_error_rate","threshold":0.1,"resolve_threshold":0.05,"window":"2m","min_requests":10}`))
	if err != nil {
		t.Fatal(err)
	}
	a.traffic(t, start.Add(10*time.Second), 20, 200)
	a.traffic(t, start.Add(70*time.Second), 15, 503)
	a.traffic(t, start.Add(80*time.Second), 15, 200)
	a.minute(t) // 03:01:03: window [02:58, 03:00): no data
	a.minute(t) // 03:02:03: [02:59, 03:01): 0 of 20 are 503
	a.minute(t) // 03:03:03: [03:00, 03:02): 15 of 50 are 503: firing
	a.traffic(t, start.Add(3*time.Minute+5*time.Second), 300, 200)
	a.minute(t) // 03:04:03: [03:01, 03:03): 15 of 30 are 503: still firing
	a.minute(t) // 03:05:03: [03:02, 03:04): 300 OK: resolved
	got := decodeAll(t, a.receiver.Requests(), a.endpoint.Secrets[0].Secret)
	if len(got) != 2 || got[0].Type != "alert.firing" || got[1].Type != "alert.resolved" {
		t.Fatalf("deliveries %+v, want firing then resolved", got)
	}
	if v := got[0].Data.Value; v == nil || *v != 0.3 || got[0].Data.Window.Count != 50 ||
		got[0].Data.Window.From != "2026-03-02T03:00:00.000000Z" || got[0].Data.Window.To != "2026-03-02T03:02:00.000000Z" {
		t.Errorf("firing event %+v: want 0.3 of 50 requests over [03:00, 03:02)", got[0].Data)
	}
	// The same question of GET /v1/stats gives the same numbers.
	stats := app.NewStatistics(a.messages, app.DefaultConfig().Policy(), a.clock)
	q := rule.StatsQuery(start.Add(3*time.Minute + 3*time.Second))
	s, err := stats.Compute(t.Context(), acmeKey, q)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total.Count != 50 || s.Total.Status[4] != 15 {
		t.Errorf("the chart's numbers for the window: %d requests, %d 5xx; want 50 and 15", s.Total.Count, s.Total.Status[4])
	}
	states, err := a.alerts.States(t.Context(), acmeKey, start, a.clock.Now())
	if err != nil || len(states) != 1 {
		t.Fatalf("States: %+v, %v", states, err)
	}
	st := states[0]
	if st.State.Status != alerting.Resolved || len(st.Recent) != 2 || len(st.Firing) != 1 ||
		!st.Firing[0].From.Equal(start.Add(3*time.Minute)) || !st.Firing[0].To.Equal(start.Add(5*time.Minute)) {
		t.Errorf("state %+v: want resolved, 2 transitions, firing over [03:03, 03:05)", st)
	}
}

// A receiver that fails is tried again on the schedule, the same event with
// the same webhook-id, until it answers 2xx; every attempt is in the log.
func TestDeliveryRetriesUntilTheReceiverSucceeds(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	a := newAlerting(t, start)
	rule, err := a.alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"request_count","threshold":0}`))
	if err != nil {
		t.Fatal(err)
	}
	a.receiver.Answer(webhooktest.Reply{Status: 500}, webhooktest.Reply{Status: 503, RetryAfter: "60"},
		webhooktest.Reply{Status: 200})
	event, _, err := a.alerts.TestRule(t.Context(), acmeKey, rule.ID)
	if err != nil {
		t.Fatal(err)
	}
	a.deliver(t) // 500
	a.clock.Advance(alerting.DeliverySchedule[0] - time.Second)
	a.deliver(t) // not due yet
	if n := len(a.receiver.Requests()); n != 1 {
		t.Fatalf("%d requests before the first retry was due, want 1", n)
	}
	a.clock.Advance(time.Second)
	a.deliver(t) // 503, Retry-After 60s (longer than the schedule's 30s)
	a.clock.Advance(alerting.DeliverySchedule[1])
	a.deliver(t)
	if n := len(a.receiver.Requests()); n != 2 {
		t.Fatalf("%d requests 30s after a Retry-After of 60s, want 2", n)
	}
	a.clock.Advance(30 * time.Second)
	a.deliver(t) // 200
	a.clock.Advance(24 * time.Hour)
	a.deliver(t)
	reqs := a.receiver.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (500, 503, 200)", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("webhook-id") != event.ID {
			t.Errorf("webhook-id %s, want %s on every attempt", r.Header.Get("webhook-id"), event.ID)
		}
	}
	log, err := a.alerts.Attempts(t.Context(), acmeKey, a.endpoint.ID, 10)
	if err != nil || len(log) != 3 || log[0].StatusCode != 200 || log[2].StatusCode != 500 || log[0].Number != 3 {
		t.Errorf("delivery log %+v (%v): want 3 attempts, newest (200, #3) first", log, err)
	}
}

// A 410 disables the endpoint: the attempt fails for good, later events are not
// sent to it, and it says why until it is enabled again.
func TestGoneDisablesTheEndpoint(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	a := newAlerting(t, start)
	rule, err := a.alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"request_count","threshold":0}`))
	if err != nil {
		t.Fatal(err)
	}
	a.receiver.Answer(webhooktest.Reply{Status: http.StatusGone})
	if _, _, err := a.alerts.TestRule(t.Context(), acmeKey, rule.ID); err != nil {
		t.Fatal(err)
	}
	a.deliver(t)
	e, err := a.alerts.Endpoint(t.Context(), acmeKey, a.endpoint.ID)
	if err != nil || e.Enabled || e.DisabledReason == "" {
		t.Fatalf("endpoint after a 410: %+v, %v; want disabled with a reason", e, err)
	}
	if _, deliveries, err := a.alerts.TestRule(t.Context(), acmeKey, rule.ID); err != nil || len(deliveries) != 0 {
		t.Errorf("a test to a disabled endpoint queued %d deliveries (%v), want none", len(deliveries), err)
	}
	a.clock.Advance(24 * time.Hour)
	a.deliver(t)
	if n := len(a.receiver.Requests()); n != 1 {
		t.Errorf("the receiver that answered 410 got %d requests, want 1", n)
	}
	e, err = a.alerts.UpdateEndpoint(t.Context(), acmeKey, a.endpoint.ID, obj(t, `{"enabled":true}`))
	if err != nil || !e.Enabled || e.DisabledReason != "" {
		t.Errorf("enabled again: %+v, %v", e, err)
	}
}

// A portal session reads states only, of its own application's rules; other
// scopes see nothing of the rule.
func TestAlertsPermissions(t *testing.T) {
	a := newAlerting(t, time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC))
	ctx := context.Background()
	shop, err := a.alerts.CreateRule(ctx, acmeKey, obj(t, `{"metric":"error_rate","threshold":0.5,"name":"shop"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.alerts.CreateRule(ctx, acmeKey, obj(t, `{"metric":"error_rate","threshold":0.5}`)); err != nil {
		t.Fatal(err)
	}
	portal := domain.Principal{Scope: acmeKey.Scope, Name: "shop", ReadOnly: true}
	whole := domain.Principal{Scope: acmeKey.Scope, ReadOnly: true}
	if _, err := a.alerts.CreateRule(ctx, whole, obj(t, `{"metric":"error_rate","threshold":0.5}`)); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a portal session creating a rule: %v, want ErrForbidden", err)
	}
	if _, err := a.alerts.Rules(ctx, portal); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a portal session listing rules: %v, want ErrForbidden", err)
	}
	if _, err := a.alerts.Endpoints(ctx, whole); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a portal session listing endpoints (and their URLs): %v, want ErrForbidden", err)
	}
	now := a.clock.Now()
	if states, err := a.alerts.States(ctx, portal, now.Add(-time.Hour), now); err != nil || len(states) != 1 || states[0].Rule.ID != shop.ID {
		t.Errorf("states for the shop portal: %d (%v), want the shop rule only", len(states), err)
	}
	if states, err := a.alerts.States(ctx, whole, now.Add(-time.Hour), now); err != nil || len(states) != 2 {
		t.Errorf("states for the account-wide portal: %d (%v), want 2", len(states), err)
	}
	other := domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainTest}}
	if _, err := a.alerts.Rule(ctx, other, shop.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("the test domain reading a live rule: %v, want ErrNotFound", err)
	}
	if _, err := a.alerts.CreateRule(ctx, acmeKey, obj(t, `{"metric":"error_rate","threshold":0.5,"endpoint_ids":["whe_0123456789abcdef"]}`)); err == nil {
		t.Error("a rule naming an endpoint that does not exist was created")
	}
}
