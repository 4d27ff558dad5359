package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// engineStore is the SQLite store answering its statistics through the
// statistics engine, fed by the store's port (daystats.Reader).
type engineStore struct {
	*sqlite.Store
	engine *statsengine.Engine
	mu     *sync.Mutex
	traces *[]statsengine.Trace
}

func (s engineStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	st, tr, err := s.engine.Stats(ctx, q, now)
	s.mu.Lock()
	*s.traces = append(*s.traces, tr)
	s.mu.Unlock()
	return st, err
}

// The engine over the SQLite store's samples, minute rollups and hour
// versions gives stats.Builder's answers within the contract's bounds, by
// rollups wherever they answer, whole hours from its cache until a write
// into them.
func TestEngineOverTheStoresSourceIsTheBuilders(t *testing.T) {
	var (
		mu     sync.Mutex
		traces []statsengine.Trace
	)
	conformance.RunStatsDifferential(t, func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		e, err := statsengine.New(statsengine.Sources{Samples: s.StatsSource(), Rollups: s.StatsSource()},
			statsengine.Config{Plan: statsengine.PlanRollups})
		if err != nil {
			return nil, err
		}
		return engineStore{s, e, &mu, &traces}, nil
	}, 20, 2026)
	plans := map[statsengine.Plan]int{}
	var sum statsengine.Trace
	for _, tr := range traces {
		plans[tr.Plan]++
		sum.KeptHours += tr.KeptHours
		sum.Rollups += tr.Rollups
		sum.Refused += tr.Refused
	}
	t.Logf("plans %v; %d hours kept, %d rollups counted, %d refused", plans, sum.KeptHours, sum.Rollups, sum.Refused)
	if plans[statsengine.PlanRollups] < 50 || sum.KeptHours < 10 || sum.Rollups < 1000 {
		t.Errorf("the worlds reach too little of the rollups plan")
	}
}

// The default 24 h view of a scope, by the store's own reader and by the
// engine over the store's source, each after a first call that keeps the
// whole hours: what moving Store.Stats onto the engine would cost or save
// (docs/benchmarks.md, "The SQLite store through the engine").
func BenchmarkStatsThroughTheEngine(b *testing.B) {
	const apps, perApp = 4, 15_000
	s, err := sqlite.New(b.Context(), sqlite.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	at := time.Now().UTC()
	for a := range apps {
		msgs := conformance.MessageSeries(b, scope, fmt.Sprintf("app-%d", a), perApp, at.Add(-24*time.Hour), 24*time.Hour/perApp)
		for i := range msgs {
			if i%2 == 0 {
				msgs[i].Path = fmt.Sprintf("/v1/orders/%d", a*perApp+i) // paths that carry ids
			}
		}
		for len(msgs) > 0 {
			n := min(500, len(msgs))
			if err := s.Append(b.Context(), msgs[:n]); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[n:]
		}
	}
	query, err := stats.ParseQuery(nil, at)
	if err != nil {
		b.Fatal(err)
	}
	query.Scope = scope
	engine, err := statsengine.New(statsengine.Sources{Samples: s.StatsSource(), Rollups: s.StatsSource()}, statsengine.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		count func() (stats.Stats, error)
	}{
		{"reader", func() (stats.Stats, error) { return s.Stats(b.Context(), query, at) }},
		{"engine", func() (stats.Stats, error) {
			st, _, err := engine.Stats(b.Context(), query, at)
			return st, err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := c.count(); err != nil { // keeps the whole hours
				b.Fatal(err)
			}
			cpu := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				st, err := c.count()
				if err != nil {
					b.Fatal(err)
				}
				if st.Total.Count == 0 {
					b.Fatal("nothing counted")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
