package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Messages kept a day, rollups ten: once the purge has deleted the
// messages, the statistics of their range still count them, from the
// rollups alone, and say so; a purge past the rollup retention deletes the
// rollups too.
func TestStatisticsOutliveTheMessagesUntilTheRollupRetention(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Retention, cfg.RollupRetention = 24*time.Hour, 10*24*time.Hour
	policy := cfg.Policy()
	store := memory.New()
	created := testNow.Truncate(time.Hour)
	var msgs []domain.Message
	for i := range 40 {
		m := domain.Message{ID: fmt.Sprintf("m%02d", i), Account: "acme", Domain: domain.DomainLive, Name: "shop",
			Method: "GET", Path: fmt.Sprintf("/v1/items/%d", i%3), StatusCode: []int{200, 500}[i%2],
			CreatedAt: created.Add(time.Duration(i) * time.Minute), Duration: time.Duration(i+1) * time.Millisecond, HasDuration: true}
		m.ExpiresAt = m.CreatedAt.Add(policy.Retention)
		msgs = append(msgs, m)
	}
	policy.StampStored(msgs, created.Add(time.Hour))
	if err := store.Append(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	clock := conformance.NewFakeClock(created.Add(2 * time.Hour))
	statistics := app.NewReader(store, policy, clock).Statistics()
	purger := app.NewPurger(store, clock, time.Hour, zap.NewNop())
	purger.KeepRollups(store, policy)
	count := func() stats.Stats {
		t.Helper()
		q, err := stats.ParseQuery(map[string][]string{"from": {created.Format(time.RFC3339)},
			"to": {created.Add(time.Hour).Format(time.RFC3339)}, "interval": {"1h"}}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		st, err := statistics.Compute(context.Background(), acmeLive, q)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	readable := count()
	if readable.Total.Count != 40 || !readable.RollupsOnlyBefore.IsZero() {
		t.Fatalf("while readable: %d counted, rollups alone before %v; want 40 and none", readable.Total.Count, readable.RollupsOnlyBefore)
	}

	clock.Set(created.Add(3 * 24 * time.Hour))
	purger.PurgeOnce(context.Background())
	if n, err := store.PurgeExpired(context.Background(), clock.Now()); n != 0 || err != nil {
		t.Fatalf("the purge left %d messages (%v)", n, err)
	}
	gone := count()
	if gone.Total.Count != 40 || gone.Total.Status != readable.Total.Status || gone.Total.Duration != readable.Total.Duration ||
		fmt.Sprint(gone.TopPaths) != fmt.Sprint(readable.TopPaths) {
		t.Errorf("from rollups alone: %+v %v; want what was counted while readable: %+v %v", gone.Total, gone.TopPaths, readable.Total, readable.TopPaths)
	}
	if !gone.RollupsOnlyBefore.Equal(gone.To) {
		t.Errorf("rollups alone before %v, want the whole range (%v)", gone.RollupsOnlyBefore, gone.To)
	}

	clock.Set(created.Add(11 * 24 * time.Hour))
	purger.PurgeOnce(context.Background())
	if past := count(); past.Total.Count != 0 {
		t.Errorf("past the rollup retention %d are counted, want none", past.Total.Count)
	}
}

// An alert rule of a scope reads its window as GET /v1/stats does: the part
// of it whose messages expired and were purged is counted from the rollups,
// so a window longer than retention still sees its errors.
func TestAnAlertCountsAcrossTheRetentionsEdge(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	cfg := app.DefaultConfig()
	cfg.Retention, cfg.RollupRetention, cfg.VisibilityDelay = time.Hour, 10*24*time.Hour, 0
	a := newAlertingWith(t, start, cfg.Policy())
	if _, err := a.alerts.CreateRule(t.Context(), acmeKey, obj(t, `{"metric":"server_error_rate","threshold":0.1,"window":"3h","min_requests":10}`)); err != nil {
		t.Fatal(err)
	}
	a.traffic(t, start.Add(10*time.Second), 10, 503)
	a.traffic(t, start.Add(20*time.Second), 10, 200)
	// The traffic's ExpiresAt is a day on (alertService.traffic): the store
	// is told to purge as of then, the reads keep to the hour's retention.
	if n, err := a.messages.PurgeExpired(t.Context(), start.Add(25*time.Hour)); n != 20 || err != nil {
		t.Fatalf("purged %d, %v; want the 20", n, err)
	}
	a.clock.Set(start.Add(2 * time.Hour)) // the 3 h window up to 05:01 holds the purged traffic of 03:00
	a.minute(t)
	got := decodeAll(t, a.receiver.Requests(), a.endpoint.Secrets[0].Secret)
	if len(got) != 1 || got[0].Type != "alert.firing" || got[0].Data.Window.Count != 20 {
		t.Fatalf("deliveries %+v, want one firing over the 20 purged requests", got)
	}
}
