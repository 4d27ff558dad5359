package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RollupKeeper = (*Store)(nil)

// The store keeps the statistics of the messages it purges as the SQLite
// store keeps its dropped day files' rollups: one stats.Rollup per scope,
// application and minute of CreatedAt, which each purge adds the messages
// it deletes to, until PurgeRollups deletes it. The statistics of a query
// with a part before its RollupsOnlyBefore count that part from them and
// from the messages still stored, expired or not.

// keptMinute names one kept rollup.
type keptMinute struct {
	scope  domain.Scope
	name   string
	minute int64 // Unix seconds
}

// keepRollupOf adds m, a message about to be purged, to its minute's kept
// rollup. The caller holds the write lock.
func (s *Store) keepRollupOf(m domain.Message) {
	unix := m.CreatedAt.Unix()
	k := keptMinute{m.Scope(), m.Name, unix - mod(unix, 60)}
	r := s.kept[k]
	if r == nil {
		r = &stats.Rollup{}
		s.kept[k] = r
	}
	r.AddMessage(m)
}

// PurgeRollups deletes the kept rollups of the minutes that end by before
// (ports.RollupKeeper).
func (s *Store) PurgeRollups(ctx context.Context, before time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: purge rollups: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k := range s.kept {
		if k.minute+60 <= before.Unix() {
			delete(s.kept, k)
			n++
		}
	}
	return n, nil
}

// statsWithKeptRollups counts q, whose counted range is before edge in
// part, at now: that part from the kept rollups of its whole minutes and
// the messages still stored there (visible, expired or not), the rest from
// the messages readable at now.
func (s *Store) statsWithKeptRollups(ctx context.Context, q stats.Query, now, edge time.Time) (stats.Stats, error) {
	b := stats.NewRollupBuilder(q, now)
	from, to := q.CountedRange()
	s.mu.RLock()
	for k, r := range s.kept {
		start := time.Unix(k.minute, 0).UTC()
		if k.scope == q.Scope && start.Before(edge) {
			b.AddRollup(start, start.Add(time.Minute), k.name, r) // refused: a minute partly in the range
		}
	}
	s.mu.RUnlock()
	add := func(m *domain.Message) bool {
		b.Add(stats.SampleOf(*m))
		return true
	}
	old, rest := q.Filter, q.Filter
	old.From, old.To, rest.From, rest.To = from, edge, edge, to
	err := s.walkWhere(ctx, domain.Query{Scope: q.Scope, Filter: old}, now, func(m *domain.Message) bool { return !now.Before(m.VisibleAt) }, add)
	if err == nil && edge.Before(to) {
		err = s.walk(ctx, domain.Query{Scope: q.Scope, Filter: rest}, now, add)
	}
	if err != nil {
		return stats.Stats{}, fmt.Errorf("memory: stats: %w", err)
	}
	st := b.Stats()
	st.RollupsOnlyBefore = edge
	return st, nil
}

// mod is a modulo that is never negative (times before 1970).
func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}
