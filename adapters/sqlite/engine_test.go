package sqlite_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// tracedStore is the SQLite store keeping the trace of each Stats call.
type tracedStore struct {
	*sqlite.Store
	mu     *sync.Mutex
	traces *[]daystats.Trace
}

func (s tracedStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	var tr daystats.Trace
	st, err := s.Store.Stats(daystats.WithTrace(ctx, &tr), q, now)
	s.mu.Lock()
	*s.traces = append(*s.traces, tr)
	s.mu.Unlock()
	return st, err
}

// The store answers through the statistics engine, over its samples,
// minute rollups and hour versions, with stats.Builder's answers within the
// contract's bounds: by rollups wherever they answer, whole hours from the
// engine's cache until a write into them.
func TestStatsThroughTheEngineAreTheBuilders(t *testing.T) {
	var (
		mu     sync.Mutex
		traces []daystats.Trace
	)
	conformance.RunStatsDifferential(t, func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		return tracedStore{s, &mu, &traces}, nil
	}, 20, 2026)
	plans := map[statsengine.Plan]int{}
	var sum statsengine.Trace
	for _, tr := range traces {
		plans[tr.Engine.Plan]++
		sum.Add(tr.Engine)
	}
	t.Logf("plans %v; %d hours kept, %d rollups counted, %d refused", plans, sum.KeptHours, sum.Rollups, sum.Refused)
	if plans[statsengine.PlanRollups] < 50 || sum.KeptHours < 10 || sum.Rollups < 1000 {
		t.Errorf("the worlds reach too little of the rollups plan")
	}
}
