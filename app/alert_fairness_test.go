package app_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/adapters/webhook/webhooktest"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// blackhole accepts connections and never answers, as a host that drops
// packets costs a sender: the whole timeout. It holds what it accepted until
// the test ends.
type blackhole struct {
	URL string
	ln  net.Listener

	mu    sync.Mutex
	conns []net.Conn
}

func newBlackhole(t *testing.T) *blackhole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{URL: "http://" + ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	return b
}

// accepted is how many connections it has taken.
func (b *blackhole) accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// queueTests asks for n test events of a rule, as POST .../test does, each
// step after the one before on clock, and returns the deliveries of the last.
func queueTests(t *testing.T, alerts *app.Alerts, p domain.Principal, ruleID string, n int,
	clock *conformance.FakeClock, step time.Duration) []alerting.Delivery {
	t.Helper()
	var last []alerting.Delivery
	for range n {
		clock.Advance(step)
		var err error
		if _, last, err = alerts.TestRule(t.Context(), p, ruleID); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

// waitUntil polls cond until it holds or timeout passes, and reports which.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// One account's 8 endpoints that accept and never answer, and 1,000 test
// events queued to them (8,000 deliveries), delay another account's firing
// event not at all: it reaches its healthy receiver within 15 s of the
// evaluation (in a few milliseconds, docs/benchmarks.md), while the first
// account's attempts still hang. Before the queue was shared between
// accounts, the other account's delivery waited behind the 8,000, four at a
// time, a webhook timeout each.
func TestDeadEndpointsOfOneAccountDoNotDelayAnother(t *testing.T) {
	t.Run("memory", func(t *testing.T) { deadEndpointsOfOneAccount(t, memory.NewAlertStore()) })
	t.Run("sqlite", func(t *testing.T) { deadEndpointsOfOneAccount(t, sqliteAlertStore(t)) })
}

// sqliteAlertStore is the default store's alert file in a fresh directory,
// closed when t ends.
func sqliteAlertStore(t *testing.T) ports.AlertStore {
	cfg := sqlite.DefaultConfig()
	cfg.Dir = t.TempDir()
	s, err := sqlite.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sqlite.NewAlertStore(t.Context(), s)
	if err != nil {
		t.Fatal(errors.Join(err, s.Close()))
	}
	t.Cleanup(func() {
		if err := errors.Join(a.Close(), s.Close()); err != nil {
			t.Error(err)
		}
	})
	return a
}

func deadEndpointsOfOneAccount(t *testing.T, store ports.AlertStore) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	clock := conformance.NewFakeClock(start)
	messages := memory.New()
	cfg := app.DefaultAlertConfig()
	// A long webhook timeout: every attempt of the dead endpoints hangs past the test's 15 s.
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: 40 * time.Second})
	cfg.DeliveryLease = time.Minute
	statistics := app.NewStatistics(messages, app.DefaultConfig().Policy(), clock)
	alerts := app.NewAlerts(store, sender, clock, nil, cfg, zap.NewNop())
	evaluator := app.NewAlertEvaluator(store, statistics, clock, nil, "replica", cfg, zap.NewNop())
	worker := app.NewAlertDeliverer(store, sender, clock, "replica", cfg, zap.NewNop())
	alerts.WakeOnEvents(worker)
	evaluator.WakeOnEvents(worker)

	noisy := domain.Principal{Scope: domain.Scope{Account: "noisy", Domain: domain.DomainLive}}
	dead := newBlackhole(t)
	for i := range 8 {
		if _, err := alerts.CreateEndpoint(t.Context(), noisy, map[string]any{"url": fmt.Sprintf("%s/hook-%d", dead.URL, i)}); err != nil {
			t.Fatal(err)
		}
	}
	noisyRule, err := alerts.CreateRule(t.Context(), noisy, obj(t, `{"metric":"request_count","threshold":1000000}`))
	if err != nil {
		t.Fatal(err)
	}
	queueTests(t, alerts, noisy, noisyRule.ID, 1000, clock, 0)

	quiet := acmeKey
	healthy := webhooktest.NewReceiver(t)
	quietEndpoint, err := alerts.CreateEndpoint(t.Context(), quiet, map[string]any{"url": healthy.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alerts.CreateRule(t.Context(), quiet, obj(t, `{"metric":"request_count","threshold":0}`)); err != nil {
		t.Fatal(err)
	}

	worker.Start()
	t.Cleanup(func() {
		if err := worker.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if !waitUntil(10*time.Second, func() bool { return dead.accepted() >= 1 }) {
		t.Fatal("the worker never tried the dead endpoints")
	}

	msgs := []domain.Message{{ID: "01890000-0000-7000-8000-000000000001", Reference: "msg_000000000001", Account: quiet.Account,
		Domain: quiet.Domain, Method: "GET", Path: "/", StatusCode: 200, CreatedAt: start.Add(10 * time.Second),
		UpdatedAt: start.Add(10 * time.Second), VisibleAt: start.Add(10 * time.Second), ExpiresAt: start.Add(24 * time.Hour)}}
	if err := messages.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	clock.Set(start.Add(2*time.Minute + 3*time.Second)) // the window [02:57, 03:02) holds the request
	evaluated := time.Now()
	if _, err := evaluator.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	arrived := waitUntil(15*time.Second, func() bool {
		for _, r := range healthy.Requests() {
			if len(r.Body) > 0 && r.Header.Get("webhook-id") != "" {
				return true
			}
		}
		return false
	})
	took := time.Since(evaluated)
	if !arrived {
		t.Fatalf("the quiet account's firing event had not reached its receiver %s after the evaluation; "+
			"the dead endpoints took %d connections meanwhile", took, dead.accepted())
	}
	got := decodeAll(t, healthy.Requests()[:1], quietEndpoint.Secrets[0].Secret)
	if got[0].Type != string(alerting.EventFiring) {
		t.Errorf("the quiet account's receiver got %q, want alert.firing", got[0].Type)
	}
	t.Logf("the quiet account's alert.firing arrived %s after the evaluation, with %d connections held by the dead endpoints",
		took.Round(time.Millisecond), dead.accepted())
}

// slowStats is a real message store whose statistics cost cost each, on the
// test's clock: heavy rules over many messages, without the wait. It records
// which account asked, and when.
type slowStats struct {
	*memory.Store
	clock *conformance.FakeClock
	cost  time.Duration

	mu    sync.Mutex
	calls map[string][]time.Time // account -> the clock at each call
}

func (s *slowStats) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	s.mu.Lock()
	s.calls[q.Scope.Account] = append(s.calls[q.Scope.Account], s.clock.Now())
	s.mu.Unlock()
	s.clock.Advance(s.cost)
	return s.Store.Stats(ctx, q, now)
}

func (s *slowStats) callsOf(account string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls[account])
}

// One account's 1,000 heavy rules (24 h windows, each with its own path, so
// none shares a statistics call; each call costing 2 s) do not push another
// account's rule past its interval: the other account is evaluated within
// every one-minute slot. Before each account had a budget per pass, one pass
// took 1,001 calls (33 minutes of the clock), and the other account's rule
// waited for the end of it.
func TestHeavyRulesOfOneAccountDoNotDelayAnother(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	clock := conformance.NewFakeClock(start.Add(time.Second))
	messages := &slowStats{Store: memory.New(), clock: clock, cost: 2 * time.Second, calls: map[string][]time.Time{}}
	store := memory.NewAlertStore()
	cfg := app.DefaultAlertConfig()
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	statistics := app.NewStatistics(messages, app.DefaultConfig().Policy(), clock)
	alerts := app.NewAlerts(store, sender, clock, nil, cfg, zap.NewNop())
	evaluator := app.NewAlertEvaluator(store, statistics, clock, nil, "replica", cfg, zap.NewNop())

	heavy := domain.Principal{Scope: domain.Scope{Account: "heavy", Domain: domain.DomainLive}}
	for i := range 1000 {
		body := fmt.Sprintf(`{"metric":"request_count","threshold":1000000,"window":"24h","path_prefix":"/p%04d"}`, i)
		if _, err := alerts.CreateRule(t.Context(), heavy, obj(t, body)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"request_count","threshold":1000000}`)); err != nil {
		t.Fatal(err)
	}
	end := start.Add(5 * time.Minute)
	for clock.Now().Before(end) {
		if _, err := evaluator.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	calls := messages.callsOf(acmeKey.Account)
	for slot := start; slot.Before(end); slot = slot.Add(cfg.EvaluationInterval) {
		if !slices.ContainsFunc(calls, func(at time.Time) bool { return !at.Before(slot) && at.Before(slot.Add(cfg.EvaluationInterval)) }) {
			t.Errorf("the light account's rule was not evaluated in the slot of %s (evaluated at %v; the heavy account's %d calls)",
				slot.Format("15:04"), calls, len(messages.callsOf("heavy")))
		}
	}
	t.Logf("the light account's rule evaluated at %v; the heavy account's %d calls over 5 slots", calls, len(messages.callsOf("heavy")))
}

// alertCounts is an app.AlertMetrics that keeps the counts.
type alertCounts struct {
	mu                          sync.Mutex
	droppedTests, droppedOthers int
	disabled                    map[string]int
	deferred, skipped           int
}

func (c *alertCounts) ObserveDeliveriesDropped(tests, others int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.droppedTests += tests
	c.droppedOthers += others
}

func (c *alertCounts) ObserveEndpointDisabled(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disabled == nil {
		c.disabled = map[string]int{}
	}
	c.disabled[reason]++
}

func (c *alertCounts) ObserveEvaluationsDeferred(rules int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deferred += rules
}

func (c *alertCounts) ObserveSlotsSkipped(slots int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skipped += slots
}

// loggedWith returns the messages of entries logged with account.
func loggedWith(logs *observer.ObservedLogs, account string) []string {
	var messages []string
	for _, e := range logs.All() {
		if e.ContextMap()["account"] == account {
			messages = append(messages, e.Message)
		}
	}
	return messages
}

// An account's queue stays within MaxPendingDeliveries however fast it asks
// for tests: past the bound its oldest tests go first, then its oldest
// firing events, each counted and logged with the account; another
// account's queue is left alone.
func TestAccountQueueIsBounded(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	clock := conformance.NewFakeClock(start)
	store := memory.NewAlertStore()
	counts := &alertCounts{}
	core, logs := observer.New(zap.WarnLevel)
	cfg := app.DefaultAlertConfig()
	cfg.MaxPendingDeliveries, cfg.Metrics = 20, counts
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	alerts := app.NewAlerts(store, sender, clock, nil, cfg, zap.New(core))
	noisy := domain.Principal{Scope: domain.Scope{Account: "noisy", Domain: domain.DomainLive}}
	var endpoints []alerting.Endpoint
	for i := range 2 {
		e, err := alerts.CreateEndpoint(t.Context(), noisy, map[string]any{"url": fmt.Sprintf("http://127.0.0.1:9/%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		endpoints = append(endpoints, e)
	}
	rule, err := alerts.CreateRule(t.Context(), noisy, obj(t, `{"metric":"request_count","threshold":0}`))
	if err != nil {
		t.Fatal(err)
	}
	// Five firing events, older than every test: they outlast the tests.
	var firings []alerting.Delivery
	for i := range 5 {
		event := alerting.Event{ID: fmt.Sprintf("evt_firing%02d", i), Type: alerting.EventFiring, At: start, Rule: rule}
		firings = append(firings, alerting.NewDelivery(event, noisy.Scope, endpoints[0].ID, start))
	}
	if err := store.Enqueue(t.Context(), firings); err != nil {
		t.Fatal(err)
	}
	last := queueTests(t, alerts, noisy, rule.ID, 1000, clock, time.Millisecond)
	queued := 5 + 2*1000
	if kept := queued - counts.droppedTests - counts.droppedOthers; kept > cfg.MaxPendingDeliveries || kept < cfg.MaxPendingDeliveries*9/10 {
		t.Errorf("%d deliveries queued, %d tests and %d others dropped: %d kept, want from %d to %d",
			queued, counts.droppedTests, counts.droppedOthers, kept, cfg.MaxPendingDeliveries*9/10, cfg.MaxPendingDeliveries)
	}
	if counts.droppedOthers != 0 {
		t.Errorf("%d firing deliveries dropped while tests were there to drop", counts.droppedOthers)
	}
	for _, d := range append(slices.Clone(firings), last...) {
		if _, err := store.Delivery(t.Context(), d.Scope, d.ID); err != nil {
			t.Errorf("delivery %s (%s) dropped: %v; the firing events and the newest test stay", d.ID, d.Event.Type, err)
		}
	}
	if warned := loggedWith(logs, noisy.Account); len(warned) == 0 {
		t.Error("no warning named the account whose deliveries were dropped")
	}
}

// An endpoint that times out is backed off (no attempt until its wait is
// over, whatever is due), and once it has timed out for EndpointDisableAfter
// it is disabled with a reason, counted and logged, as a 410 disables it.
func TestEndpointThatTimesOutIsBackedOffThenDisabled(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	clock := conformance.NewFakeClock(start)
	store := memory.NewAlertStore()
	counts := &alertCounts{}
	core, logs := observer.New(zap.WarnLevel)
	cfg := app.DefaultAlertConfig()
	cfg.EndpointDisableAfter, cfg.Metrics = time.Minute, counts
	sender := webhook.New(webhook.Config{AllowPrivate: true, Timeout: time.Second})
	alerts := app.NewAlerts(store, sender, clock, nil, cfg, zap.NewNop())
	worker := app.NewAlertDeliverer(store, sender, clock, "replica", cfg, zap.New(core))
	dead := newBlackhole(t)
	endpoint, err := alerts.CreateEndpoint(t.Context(), acmeKey, map[string]any{"url": dead.URL})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"request_count","threshold":0}`))
	if err != nil {
		t.Fatal(err)
	}
	queueTests(t, alerts, acmeKey, rule.ID, 3, clock, 0)
	attempt := func(want int) {
		t.Helper()
		if n, err := worker.DeliverOnce(t.Context()); err != nil || n != want {
			t.Fatalf("at +%s: %d attempts (%v), want %d", clock.Now().Sub(start), n, err, want)
		}
	}
	attempt(1) // one at a time per endpoint: it times out, and the endpoint waits 5 s
	attempt(0) // two more are due, but the endpoint is backed off
	clock.Advance(5 * time.Second)
	attempt(1) // times out again: 10 s now
	clock.Advance(9 * time.Second)
	attempt(0)
	clock.Advance(time.Second)
	attempt(1)
	if e, err := store.Endpoint(t.Context(), acmeKey.Scope, endpoint.ID); err != nil || !e.Enabled {
		t.Fatalf("endpoint after 15 s of timeouts: %+v, %v; want it enabled still", e, err)
	}
	clock.Set(start.Add(cfg.EndpointDisableAfter))
	attempt(1) // a minute of nothing but timeouts
	e, err := store.Endpoint(t.Context(), acmeKey.Scope, endpoint.ID)
	if err != nil || e.Enabled || e.DisabledReason == "" {
		t.Fatalf("endpoint after a minute of timeouts: %+v, %v; want it disabled with a reason", e, err)
	}
	if counts.disabled[app.DisabledTimeout] != 1 || !slices.Contains(loggedWith(logs, acmeKey.Account), "webhook endpoint disabled") {
		t.Errorf("disabling counted %v, logged %v; want one timeout and a warning naming the account", counts.disabled, loggedWith(logs, acmeKey.Account))
	}
	clock.Advance(time.Hour)
	abandoned := 0
	for range 10 {
		n, err := worker.DeliverOnce(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		abandoned += n
	}
	if abandoned != 3 {
		t.Errorf("%d deliveries claimed after the endpoint was disabled, want the 3 left, abandoned", abandoned)
	}
	if dead.accepted() != 4 {
		t.Errorf("the dead receiver took %d connections, want the 4 attempts", dead.accepted())
	}
	t.Logf("disabled: %s", e.DisabledReason)
}

// The cap on rules is a setting.
func TestMaxRulesIsASetting(t *testing.T) {
	cfg := app.DefaultAlertConfig()
	cfg.MaxRules = 2
	clock := conformance.NewFakeClock(time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC))
	alerts := app.NewAlerts(memory.NewAlertStore(), webhook.New(webhook.DefaultConfig()), clock, nil, cfg, zap.NewNop())
	for i := range 3 {
		_, err := alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"request_count","threshold":0}`))
		var invalid *domain.ValidationError
		if refused := errors.As(err, &invalid); refused != (i == 2) {
			t.Errorf("rule %d of a cap of 2: %v", i+1, err)
		}
	}
}

// An account whose statistics use its budget leaves the rest of its rules to
// the next slot, counted and logged with the account; one whose call runs
// past the slot makes the next slot skipped, counted and logged with it too.
func TestEvaluationBudgetAndSkippedSlotsNameTheAccount(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	clock := conformance.NewFakeClock(start.Add(time.Second))
	messages := &slowStats{Store: memory.New(), clock: clock, cost: 20 * time.Second, calls: map[string][]time.Time{}}
	store := memory.NewAlertStore()
	counts := &alertCounts{}
	core, logs := observer.New(zap.WarnLevel)
	cfg := app.DefaultAlertConfig()
	cfg.Metrics = counts
	statistics := app.NewStatistics(messages, app.DefaultConfig().Policy(), clock)
	alerts := app.NewAlerts(store, webhook.New(webhook.DefaultConfig()), clock, nil, cfg, zap.NewNop())
	evaluator := app.NewAlertEvaluator(store, statistics, clock, nil, "replica", cfg, zap.New(core))
	heavy := domain.Principal{Scope: domain.Scope{Account: "heavy", Domain: domain.DomainLive}}
	for i := range 3 {
		if _, err := alerts.CreateRule(t.Context(), heavy, obj(t, fmt.Sprintf(`{"metric":"request_count","threshold":0,"path_prefix":"/p%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := evaluator.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(messages.callsOf(heavy.Account)); got != 1 || counts.deferred != 2 {
		t.Errorf("a 20 s call of a 15 s budget: %d calls, %d rules deferred; want 1 and 2", got, counts.deferred)
	}
	if !slices.Contains(loggedWith(logs, heavy.Account), "alert rules left for the next slot: the account used its evaluation budget, or the slot ended") {
		t.Errorf("logged with the account: %v; want the rules left for the next slot", loggedWith(logs, heavy.Account))
	}
	messages.cost = 2 * time.Minute // past the end of the next slot
	clock.Set(start.Add(time.Minute + time.Second))
	if _, err := evaluator.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := evaluator.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if counts.skipped != 1 || !slices.Contains(loggedWith(logs, heavy.Account), "alert evaluation slots skipped: the pass before ran past them") {
		t.Errorf("%d slots counted skipped, logged with the account: %v; want 1, and the skipped slot",
			counts.skipped, loggedWith(logs, heavy.Account))
	}
}
