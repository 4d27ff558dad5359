package elastic_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// rollupsFirst are costs under which the engine counts from rollups wherever
// they answer, whatever the range holds.
var rollupsFirst = statsengine.Costs{StreamedMessage: 1000, AggregatedMessage: 500, Rollup: 1, KeptHour: 1}

// The differential test: random messages appended with retries in other
// batches, random queries at random times; the answers, from rollups kept by
// marks or by the plan of the default costs, are stats.Builder's within the
// contract's bounds.
func TestStatsDifferential(t *testing.T) {
	for _, c := range []struct {
		name   string
		costs  statsengine.Costs
		worlds int
	}{{"rollups", rollupsFirst, 5}, {"default", statsengine.Costs{}, 3}} {
		t.Run(c.name, func(t *testing.T) {
			conformance.RunStatsDifferential(t, func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
				cfg := testConfig(t)
				cfg.Statistics.Costs = c.costs
				return openStore(ctx, t, cfg), nil
			}, c.worlds, 41)
		})
	}
}

// rollupsStore is a store that counts from rollups wherever they answer,
// and the hour three hours back, where the tests write.
func rollupsStore(t *testing.T) (*elastic.Store, elastic.Config, time.Time) {
	s, cfg := newStore(t, func(cfg *elastic.Config) { cfg.Statistics.Costs = rollupsFirst })
	return s, cfg, time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
}

func tracedStats(t *testing.T, s *elastic.Store, q stats.Query, now time.Time) (stats.Stats, statsengine.Trace) {
	t.Helper()
	st, tr, err := s.StatsTraced(t.Context(), q, now)
	if err != nil {
		t.Fatal(err)
	}
	return st, tr
}

func hourQuery(from time.Time, interval string) stats.Query {
	return conformance.StatsQuery(scope, from, from.Add(time.Hour), interval, domain.Filter{})
}

// settledStats asks for q's statistics at the real time until no minute is
// streamed for want of a settled mark (its messages surely searchable), and
// returns them, the time they were asked at and the minutes recounted on
// the way.
func settledStats(t *testing.T, s *elastic.Store, q stats.Query) (stats.Stats, statsengine.Trace, time.Time, int) {
	t.Helper()
	var (
		st        stats.Stats
		tr        statsengine.Trace
		now       time.Time
		recounted int
	)
	waitFor(t, "the marks settled", 30*time.Second, func() error {
		now = time.Now()
		st, tr = tracedStats(t, s, q, now)
		recounted += tr.Recounted
		if tr.Refused > 0 {
			return fmt.Errorf("%d minutes streamed", tr.Refused)
		}
		return nil
	})
	return st, tr, now, recounted
}

// A retried batch, in other batches and mixed with new messages, counts each
// message once. An Append whose marks fail after its messages were stored (the
// rollups' index blocked, as a crash between the two requests leaves it)
// never makes the acknowledged messages count less nor any twice; its retry
// makes every message count.
func TestStatsCountRetriesOnceAndSurviveACrashBeforeTheMarks(t *testing.T) {
	c := newCluster(t)
	s, cfg, first := rollupsStore(t)
	ctx := t.Context()
	acked := conformance.MessageSeries(t, scope, "shop", 300, first, 3*time.Second) // 15 minutes
	if err := s.Append(ctx, acked[:200]); err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]domain.Message{acked[150:300], acked[:80], acked[60:170]} {
		if err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	q := hourQuery(first, "15m")
	st, tr, now, recounted := settledStats(t, s, q)
	conformance.AssertStats(t, acked, q, now, st)
	if tr.Plan != statsengine.PlanRollups || recounted != 15 || tr.Rollups != 15 {
		t.Errorf("once settled: %+v (%d recounted on the way), want rollups, 15 minutes recounted and counted", tr, recounted)
	}
	if _, tr = tracedStats(t, s, q, now); tr.Recounted != 0 || tr.KeptHours != 1 {
		t.Errorf("the next call: %+v, want the hour from the cache", tr)
	}

	rollups := cfg.IndexPrefix + "-rollups-" + first.Format("2006.01.02")
	c.must(http.MethodPut, "/"+rollups+"/_settings", map[string]any{"index.blocks.write": true}, nil)
	crashed := conformance.MessageSeries(t, scope, "shop", 40, first.Add(5*time.Minute+time.Second), time.Second)
	if err := s.Append(ctx, append(crashed, acked[:50]...)); err == nil {
		t.Fatal("Append succeeded with its marks blocked")
	}
	st, _, _, _ = settledStats(t, s, q)
	if st.Total.Count < int64(len(acked)) || st.Total.Count > int64(len(acked)+len(crashed)) {
		t.Errorf("after the crash: %d counted, want %d to %d", st.Total.Count, len(acked), len(acked)+len(crashed))
	}
	c.must(http.MethodPut, "/"+rollups+"/_settings", map[string]any{"index.blocks.write": nil}, nil)
	for _, batch := range [][]domain.Message{crashed[10:], crashed[:10]} {
		if err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	st, tr, now, recounted = settledStats(t, s, q)
	conformance.AssertStats(t, append(acked, crashed...), q, now, st)
	if recounted != 1 || tr.KeepErrors != 0 {
		t.Errorf("after the retry: %+v (%d recounted on the way), want the one minute written recounted and kept", tr, recounted)
	}
}

// A store set up over messages an earlier version stored, without marks,
// aggregates their statistics until MarkExisting has marked them; then it
// counts them from rollups. Messages appended in between are marked by their
// Append.
func TestStatsOfMessagesStoredBeforeTheMarks(t *testing.T) {
	c := newCluster(t)
	s, cfg, first := rollupsStore(t)
	ctx := t.Context()
	old := conformance.MessageSeries(t, scope, "shop", 120, first, 15*time.Second)
	if err := s.Append(ctx, old); err != nil {
		t.Fatal(err)
	}
	// What an earlier version leaves: messages, no rollups and no state.
	for _, pattern := range []string{"-rollups-*", "-rollup-state"} {
		for _, index := range c.indices(cfg.IndexPrefix + pattern) {
			c.must(http.MethodDelete, "/"+index, nil, nil)
		}
	}
	upgraded := openStore(ctx, t, cfg)
	later := conformance.MessageSeries(t, scope, "shop", 30, first.Add(10*time.Minute+time.Second), 7*time.Second)
	if err := upgraded.Append(ctx, later); err != nil {
		t.Fatal(err)
	}
	all := append(old, later...)
	now := first.Add(2 * time.Hour)
	q := hourQuery(first, "5m")
	waitFor(t, "the messages searchable", 30*time.Second, func() error {
		if st, _ := tracedStats(t, upgraded, q, now); st.Total.Count != int64(len(all)) {
			return fmt.Errorf("%d counted", st.Total.Count)
		}
		return nil
	})
	st, tr := tracedStats(t, upgraded, q, now)
	conformance.AssertStats(t, all, q, now, st)
	if tr.Plan != statsengine.PlanAggregate {
		t.Errorf("before marking: plan %s, want aggregate (the messages before the marks are not known)", tr.Plan)
	}
	if err := upgraded.MarkExisting(ctx); err != nil {
		t.Fatal(err)
	}
	st, tr = tracedStats(t, upgraded, q, now)
	conformance.AssertStats(t, all, q, now, st)
	if tr.Plan != statsengine.PlanRollups || tr.Recounted != 0 || tr.Rollups != 30 {
		t.Errorf("after marking: %+v, want the 30 minutes' rollups, kept by the marking", tr)
	}
}

// The purge keeps a day's rollups past its messages, counted from them
// before they go: the statistics of the day, from the rollups alone, are
// what the messages gave; PurgeRollups drops the rollups' daily indices
// whose day ended, and no other.
func TestPurgeKeepsRollupsPastTheirMessages(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t, func(cfg *elastic.Config) { cfg.Statistics.Costs = rollupsFirst })
	ctx := t.Context()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	dayA, dayB := today.Add(-72*time.Hour), today.Add(-48*time.Hour)
	expiresA := today.Add(24 * time.Hour)
	msgs := []domain.Message{
		expiring(t, dayA.Add(time.Hour), expiresA),
		expiring(t, dayA.Add(2*time.Hour), expiresA.Add(-time.Hour)),
		expiring(t, dayB.Add(time.Hour), expiresA.Add(48*time.Hour)),
	}
	if err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, s, today, msgs...)
	day := func(kind string, d time.Time) string {
		return cfg.IndexPrefix + "-" + kind + "-" + d.Format("2006.01.02")
	}
	// No statistics read dayA before the purge: its rollups are counted
	// and kept by the purge itself.
	mustPurge(t, s, expiresA, 2)
	wantIndices(t, c, []string{day("rollups", dayA), day("messages", dayB), day("rollups", dayB)}, []string{day("messages", dayA)})
	later := expiresA.Add(2 * time.Hour)
	q := stats.Query{Scope: scope, From: dayA, To: today, Filter: domain.Filter{From: dayA, To: today}, Interval: stats.Intervals[3],
		RollupsOnlyBefore: dayB}
	st, _ := tracedStats(t, s, q, later)
	if !st.RollupsOnlyBefore.Equal(dayB) {
		t.Errorf("rollups alone before %v, want %v", st.RollupsOnlyBefore, dayB)
	}
	readable := slices.Clone(msgs)
	for i := range readable[:2] {
		readable[i].ExpiresAt = later.Add(time.Hour)
	}
	conformance.AssertStats(t, readable, q, later, st)

	if _, err := s.PurgeRollups(ctx, dayA.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantIndices(t, c, []string{day("messages", dayB), day("rollups", dayB)}, []string{day("rollups", dayA)})
	st, _ = tracedStats(t, s, q, later)
	conformance.AssertStats(t, readable[2:], q, later, st)
}

// A call whose hours the engine keeps sends the cluster one request, the
// sums of the hours' marks: no refresh of the marks' indices, which cost
// the node about 25 ms of CPU in every call while messages arrived.
func TestStatsOfKeptHoursSendOneRequest(t *testing.T) {
	s, _, first := rollupsStore(t)
	msgs := conformance.MessageSeries(t, scope, "shop", 120, first, 30*time.Second)
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	q := hourQuery(first, "15m")
	settledStats(t, s, q)
	now := time.Now()
	st, tr := tracedStats(t, s, q, now)
	conformance.AssertStats(t, msgs, q, now, st)
	if tr.KeptHours != 1 || tr.StoreRequests != 1 {
		t.Errorf("a call of a kept hour: %+v, want the hour from the cache and one request", tr)
	}
}

// A process counts what its own Appends stored at once, though no refresh
// has made their marks searchable: it adds the marks it wrote that a search
// has not shown yet.
func TestStatsCountOwnAppendsBeforeTheirMarksAreSearchable(t *testing.T) {
	c := newCluster(t)
	s, cfg, first := rollupsStore(t)
	ctx := t.Context()
	msgs := conformance.MessageSeries(t, scope, "shop", 120, first, 30*time.Second)
	if err := s.Append(ctx, msgs[:60]); err != nil {
		t.Fatal(err)
	}
	q := hourQuery(first, "15m")
	settledStats(t, s, q)
	rollups := cfg.IndexPrefix + "-rollups-" + first.Format("2006.01.02")
	c.must(http.MethodPut, "/"+rollups+"/_settings", map[string]any{"index.refresh_interval": "-1"}, nil)
	if err := s.Append(ctx, msgs[60:]); err != nil {
		t.Fatal(err)
	}
	st, _, now, recounted := settledStats(t, s, q)
	conformance.AssertStats(t, msgs, q, now, st)
	if recounted != 30 {
		t.Errorf("%d minutes recounted, want the 30 the second Append wrote", recounted)
	}
}
