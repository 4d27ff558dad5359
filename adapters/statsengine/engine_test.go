package statsengine_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

func markedMaker(context.Context, *testing.T) (ports.MessageStore, error) {
	return newMarkedStore(statsengine.Config{}), nil
}

// A store that keeps rollups by marks keeps the whole store contract.
func TestMarkedStoreConformance(t *testing.T) {
	conformance.RunStoreTests(t, markedMaker)
}

// Random worlds, appended with retries in other batches: the engine's
// answers are stats.Builder's within the contract's bounds, by the plans of
// the default costs and by rollups wherever they answer.
func TestMarkedStatsDifferential(t *testing.T) {
	for _, c := range []struct {
		name  string
		costs statsengine.Costs
	}{{"default", statsengine.Costs{}}, {"rollups", rollupsFirst}} {
		t.Run(c.name, func(t *testing.T) {
			var stores []*markedStore
			conformance.RunStatsDifferential(t, func(context.Context, *testing.T) (ports.MessageStore, error) {
				s := newMarkedStore(statsengine.Config{Costs: c.costs})
				stores = append(stores, s)
				return s, nil
			}, 40, 2026)
			var sum statsengine.Trace
			plans := map[statsengine.Plan]int{}
			for _, s := range stores {
				for _, tr := range s.traces {
					plans[tr.Plan]++
					sum.KeptHours += tr.KeptHours
					sum.Rollups += tr.Rollups
					sum.Refused += tr.Refused
					sum.Recounted += tr.Recounted
					sum.MinutesStreamed += tr.MinutesStreamed
				}
			}
			t.Logf("plans %v; %d hours kept, %d rollups counted, %d refused, %d recounted, %d minutes streamed",
				plans, sum.KeptHours, sum.Rollups, sum.Refused, sum.Recounted, sum.MinutesStreamed)
			if c.name == "rollups" && (plans[statsengine.PlanRollups] < 200 || sum.KeptHours < 50 || sum.Refused < 200 || sum.Recounted < 5000) {
				t.Errorf("the worlds reach too little of the rollups plan")
			}
		})
	}
}

var scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}

var base = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

// messages are n messages of scope's application name, one every step from
// first.
func messages(t *testing.T, n int, name string, first time.Time, step time.Duration) []domain.Message {
	return conformance.MessageSeries(t, scope, name, n, first, step)
}

// query is the statistics of scope over [from, to) by interval.
func query(from, to time.Time, interval string, name string) stats.Query {
	return conformance.StatsQuery(scope, from, to, interval, domain.Filter{Name: name})
}

func statsOf(t *testing.T, s *markedStore, q stats.Query, now time.Time) (stats.Stats, statsengine.Trace) {
	t.Helper()
	st, tr, err := s.engine.Stats(t.Context(), q, now)
	if err != nil {
		t.Fatal(err)
	}
	return st, tr
}

// A retry of a batch, in other batches and mixed with new messages, counts
// each message once; an Append that stopped between its messages and their
// marks never makes the acknowledged messages count less, nor any twice, and
// its retry makes every message count.
func TestRetriesAndCrashesCountEachMessageOnce(t *testing.T) {
	s := newMarkedStore(statsengine.Config{})
	ctx := t.Context()
	acked := messages(t, 300, "shop", base, 3*time.Second) // 15 minutes
	if err := s.Append(ctx, acked[:200]); err != nil {
		t.Fatal(err)
	}
	// The retry: the first 200 again, in three batches, with 100 new.
	for _, batch := range [][]domain.Message{acked[150:300], acked[:80], acked[60:170]} {
		if err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	now := base.Add(time.Hour)
	q := query(base, base.Add(time.Hour), "15m", "")
	st, tr := statsOf(t, s, q, now)
	conformance.AssertStats(t, acked, q, now, st)
	if tr.Plan != statsengine.PlanRollups || tr.Recounted != 15 || tr.Rollups != 15 {
		t.Errorf("the first call: %+v, want rollups, 15 minutes recounted and counted", tr)
	}

	// Crashed between the messages and their marks: the 40 new ones may
	// count or not; the acknowledged ones count once.
	crashed := messages(t, 40, "shop", base.Add(5*time.Minute+time.Second), time.Second)
	s.failMarks = true
	if err := s.Append(ctx, append(crashed, acked[:50]...)); !errors.Is(err, errCrashedBeforeTheMarks) {
		t.Fatalf("Append = %v, want the crash", err)
	}
	st, _ = statsOf(t, s, q, now)
	if st.Total.Count < int64(len(acked)) || st.Total.Count > int64(len(acked)+len(crashed)) {
		t.Errorf("after the crash: %d counted, want %d to %d", st.Total.Count, len(acked), len(acked)+len(crashed))
	}
	// The client retries what failed: now every message counts once.
	s.failMarks = false
	if err := s.Append(ctx, crashed[10:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, crashed[:10]); err != nil {
		t.Fatal(err)
	}
	st, tr = statsOf(t, s, q, now)
	conformance.AssertStats(t, append(acked, crashed...), q, now, st)
	if tr.Recounted != 1 {
		t.Errorf("after the retry: %d minutes recounted, want the one minute written", tr.Recounted)
	}
}

// A whole hour counted once is kept at its version: the next call counts it
// from the cache, until an Append writes into it.
func TestWholeHoursAreKeptUntilWrittenInto(t *testing.T) {
	s := newMarkedStore(statsengine.Config{Costs: rollupsFirst})
	ctx := t.Context()
	var all []domain.Message
	for h := range 6 {
		all = append(all, messages(t, 30, "shop", base.Add(time.Duration(h)*time.Hour), 2*time.Minute)...)
		all = append(all, messages(t, 10, "billing", base.Add(time.Duration(h)*time.Hour), 5*time.Minute)...)
	}
	if err := s.Append(ctx, all); err != nil {
		t.Fatal(err)
	}
	now := base.Add(7 * time.Hour)
	for _, name := range []string{"", "billing"} {
		q := query(base, base.Add(6*time.Hour), "15m", name)
		_, tr := statsOf(t, s, q, now)
		if tr.KeptHours != 0 {
			t.Fatalf("%q, first call: %d hours from the cache", name, tr.KeptHours)
		}
		st, tr := statsOf(t, s, q, now)
		conformance.AssertStats(t, all, q, now, st)
		if tr.KeptHours != 6 || tr.Rollups != 0 {
			t.Fatalf("%q, second call: %d hours kept, %d rollups read; want 6 and none", name, tr.KeptHours, tr.Rollups)
		}
	}
	late := messages(t, 1, "shop", base.Add(2*time.Hour+30*time.Minute), time.Second)
	if err := s.Append(ctx, late); err != nil {
		t.Fatal(err)
	}
	all = append(all, late...)
	for _, c := range []struct {
		name string
		kept int
	}{{"", 5}, {"billing", 6}} { // the shop's write leaves billing's hours as they were
		q := query(base, base.Add(6*time.Hour), "15m", c.name)
		st, tr := statsOf(t, s, q, now)
		conformance.AssertStats(t, all, q, now, st)
		if tr.KeptHours != c.kept {
			t.Errorf("%q after a write into one hour: %d hours kept, want %d", c.name, tr.KeptHours, c.kept)
		}
	}
}

// A minute whose mark has not settled is streamed without asking the store
// for its kept rollup: none can stand for it yet, and the minute still
// filling was one more request in every call while messages arrived.
func TestUnsettledMinutesAreNotAskedFor(t *testing.T) {
	s := newMarkedStore(statsengine.Config{Costs: rollupsFirst})
	msgs := messages(t, 30, "shop", base, 2*time.Minute)
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	now := msgs[len(msgs)-1].VisibleAt.Add(-time.Nanosecond) // the last minute not settled
	q := query(base, base.Add(time.Hour), "15m", "")
	st, tr := statsOf(t, s, q, now)
	conformance.AssertStats(t, msgs, q, now, st)
	if s.keptAsked != 29 || tr.Refused != 1 {
		t.Errorf("kept rollups asked for %d minutes, %d refused; want 29 and the unsettled one", s.keptAsked, tr.Refused)
	}
}

// rollupsFirst are costs under which rollups win whatever the range holds.
var rollupsFirst = statsengine.Costs{StreamedMessage: 1000, AggregatedMessage: 1000, Rollup: 1, KeptHour: 1}

// counter is a store's aggregation for the tests: the memory store's.
type counter struct{ *memory.Store }

func (c counter) AggregateStats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	return c.Store.Stats(ctx, q, now)
}

// fixedProbe tells every plan the same facts.
type fixedProbe statsengine.Facts

func (p fixedProbe) Probe(context.Context, stats.Query, time.Time) (statsengine.Facts, error) {
	return statsengine.Facts(p), nil
}

// The plan is the one of least cost given the probe's facts and the costs
// configured, and every plan answers as the reference does.
func TestPlansFollowCostsAndFacts(t *testing.T) {
	marked := newMarkedStore(statsengine.Config{})
	all := messages(t, 200, "shop", base, 20*time.Second)
	if err := marked.Append(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	now := base.Add(2 * time.Hour)
	byName, byStatus := query(base, base.Add(2*time.Hour), "5m", "shop"), query(base, base.Add(2*time.Hour), "5m", "")
	byStatus.Filter.StatusMin, byStatus.Filter.StatusMax = 400, 499
	for _, c := range []struct {
		what      string
		facts     statsengine.Facts
		costs     statsengine.Costs
		aggregate bool // the store offers its own aggregation
		q         stats.Query
		want      statsengine.Plan
	}{
		{"few messages, many rollups", statsengine.Facts{Messages: 10, Rollups: 100}, statsengine.Costs{}, false, byName, statsengine.PlanStream},
		{"few messages, many rollups, an aggregation", statsengine.Facts{Messages: 10, Rollups: 100}, statsengine.Costs{}, true, byName, statsengine.PlanAggregate},
		{"many messages", statsengine.Facts{Messages: 100_000, Rollups: 1000}, statsengine.Costs{}, true, byName, statsengine.PlanRollups},
		{"many messages, rollups dear", statsengine.Facts{Messages: 100_000, Rollups: 1000},
			statsengine.Costs{StreamedMessage: 1, AggregatedMessage: 1, Rollup: 1000, KeptHour: 1}, false, byName, statsengine.PlanStream},
		{"a filter rollups do not answer", statsengine.Facts{Messages: 100_000, Rollups: 10}, statsengine.Costs{}, true, byStatus, statsengine.PlanAggregate},
		{"aggregating costs more than streaming", statsengine.Facts{Messages: 100_000},
			statsengine.Costs{StreamedMessage: 1, AggregatedMessage: 2, Rollup: 1, KeptHour: 1}, true, byStatus, statsengine.PlanStream},
		{"part before the rollups, not known", statsengine.Facts{Messages: 100_000, Before: -1, Rollups: 10}, statsengine.Costs{}, true, byName, statsengine.PlanAggregate},
		{"part before the rollups, not known, no aggregation", statsengine.Facts{Messages: 100_000, Before: -1, Rollups: 10}, statsengine.Costs{}, false, byName, statsengine.PlanRollups},
		{"nothing known", statsengine.Facts{Messages: -1, Before: -1}, statsengine.Costs{}, true, byStatus, statsengine.PlanAggregate},
		{"nothing known, no aggregation", statsengine.Facts{Messages: -1, Before: -1}, statsengine.Costs{}, false, byName, statsengine.PlanRollups},
		{"nothing known, a filter rollups do not answer, no aggregation", statsengine.Facts{Messages: -1, Before: -1}, statsengine.Costs{}, false, byStatus, statsengine.PlanStream},
	} {
		src := statsengine.Sources{Samples: marked.Store, Rollups: statsengine.NewMarked(marked)}
		if c.aggregate {
			src.Aggregator = counter{marked.Store}
		}
		engine, err := statsengine.New(src, statsengine.Config{Costs: c.costs, Probe: fixedProbe(c.facts)})
		if err != nil {
			t.Fatal(err)
		}
		st, tr, err := engine.Stats(t.Context(), c.q, now)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Plan != c.want {
			t.Errorf("%s: plan %s (costs %v), want %s", c.what, tr.Plan, tr.Costs, c.want)
		}
		conformance.AssertStats(t, all, c.q, now, st)
	}
}

// CountRollups counts what Stats counts but the minutes no rollup stands
// for at now, which it returns for the caller to count from their messages;
// it counts the hours Stats kept from the cache. A query rollups do not
// answer is refused.
func TestCountRollupsLeavesTheRefusedMinutes(t *testing.T) {
	s := newMarkedStore(statsengine.Config{Plan: statsengine.PlanRollups})
	ctx := t.Context()
	msgs := messages(t, 240, "shop", base, 30*time.Second) // two hours
	now := base.Add(3 * time.Hour)
	late := base.Add(100 * time.Minute)
	msgs[200].VisibleAt = now.Add(time.Minute) // its minute's rollup cannot stand at now
	if err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	q := query(base, base.Add(2*time.Hour), "15m", "")
	want, _ := statsOf(t, s, q, now) // keeps the first hour, whole
	conformance.AssertStats(t, msgs, q, now, want)

	b := stats.NewRollupBuilder(q, now)
	var tr statsengine.Trace
	refused, err := s.engine.CountRollups(ctx, q, now, b, &tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || !refused[0].Start.Equal(late) || refused[0].Name != "shop" {
		t.Fatalf("refused %+v, want shop's minute at %s", refused, domain.FormatTime(late))
	}
	if tr.KeptHours != 1 || tr.Rollups != 59 {
		t.Errorf("%+v: want the first hour from the cache and the second's 59 other minutes", tr)
	}
	for _, m := range msgs {
		if m.Readable(now) && !m.CreatedAt.Before(late) && m.CreatedAt.Before(late.Add(time.Minute)) {
			b.Add(stats.SampleOf(m))
		}
	}
	if got := b.Stats(); !reflect.DeepEqual(got, want) {
		t.Errorf("the rollups and the refused minute's messages\n%+v\ndiffer from Stats's\n%+v", got, want)
	}

	q.Filter.Text = "shop"
	if _, err := s.engine.CountRollups(ctx, q, now, stats.NewRollupBuilder(q, now), &tr); err == nil {
		t.Error("CountRollups of a query with a q: no error")
	}
}

// takeText is a store's own plan for the queries with a q: it keeps what
// the engine hands it and counts nothing.
type takeText struct{ asked []stats.Query }

func (p *takeText) Takes(q stats.Query) bool { return q.Filter.Text != "" }

func (p *takeText) CountInto(_ context.Context, q stats.Query, f domain.Filter, _ time.Time, b *stats.Builder) (stats.Stats, error) {
	p.asked = append(p.asked, q)
	if from, to := q.CountedRange(); !f.From.Equal(from) || !f.To.Equal(to) {
		return stats.Stats{}, errors.New("the filter is not over the counted range")
	}
	return b.Stats(), nil
}

// refusingProbe fails every probe: a query the store's plan takes is not
// probed.
type refusingProbe struct{}

func (refusingProbe) Probe(context.Context, stats.Query, time.Time) (statsengine.Facts, error) {
	return statsengine.Facts{}, errors.New("probed")
}

// The store's own plan counts the queries it takes, as asked (its
// RollupsOnlyBefore kept), into the builder the engine made, with nothing
// probed; the engine's plans count the others; an empty range is answered
// without it.
func TestStorePlanCountsTheQueriesItTakes(t *testing.T) {
	s := newMarkedStore(statsengine.Config{})
	all := messages(t, 100, "shop", base, 30*time.Second)
	if err := s.Append(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	now := base.Add(2 * time.Hour)
	plan := &takeText{}
	engine, err := statsengine.New(statsengine.Sources{Samples: s.Store, Rollups: statsengine.NewMarked(s), Store: plan},
		statsengine.Config{Probe: refusingProbe{}})
	if err != nil {
		t.Fatal(err)
	}
	q := query(base, base.Add(time.Hour), "5m", "")
	q.Filter.Text, q.RollupsOnlyBefore = "shop", base.Add(10*time.Minute)
	st, tr, err := engine.Stats(t.Context(), q, now)
	if err != nil || tr.Plan != statsengine.PlanStore || !reflect.DeepEqual(st, stats.New(q)) {
		t.Fatalf("plan %s, %v: %+v; want the store's, empty", tr.Plan, err, st.Total)
	}
	if len(plan.asked) != 1 || !plan.asked[0].RollupsOnlyBefore.Equal(q.RollupsOnlyBefore) {
		t.Errorf("the store's plan was asked %+v, want q as asked", plan.asked)
	}

	empty := q
	empty.Filter.From = empty.To
	if st, _, err := engine.Stats(t.Context(), empty, now); err != nil || !reflect.DeepEqual(st, stats.New(empty)) || len(plan.asked) != 1 {
		t.Errorf("an empty range: %v, asked %d times", err, len(plan.asked))
	}

	if _, _, err := engine.Stats(t.Context(), query(base, base.Add(time.Hour), "5m", ""), now); err == nil {
		t.Error("a query the store's plan does not take was not probed")
	}
}
