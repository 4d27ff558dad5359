package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Stats counts q at now: the messages of its counted range readable at now
// that pass q.Filter, and every tally. Where rollups answer q and part of
// the range is counted from rollups alone (stats.Query.RollupsOnlyPart),
// that part is counted from the kept rollups of its whole minutes and the
// messages still stored there, visible, expired or not. The query's facts
// are read once, then one builder is fed by one walk a part.
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	if err := ctx.Err(); err != nil {
		return stats.Stats{}, fmt.Errorf("memory: stats: %w", err)
	}
	edge, rollupsOnly := q.RollupsOnlyPart()
	rollupsOnly = rollupsOnly && q.RollupsAnswer()
	from, to := q.CountedRange()
	visible := func(m *domain.Message) bool { return !now.Before(m.VisibleAt) }
	readable := func(m *domain.Message) bool { return m.Readable(now) }
	type part struct {
		from, to time.Time
		read     func(*domain.Message) bool
	}
	var rollups *stats.RollupBuilder
	var messages *stats.Builder
	if rollupsOnly {
		rollups = stats.NewRollupBuilder(q, now)
	} else {
		messages = stats.NewBuilder(q)
	}
	parts := []part{{from, to, readable}}
	add, answer := func(m stats.Sample) { messages.Add(m) }, func() stats.Stats { return messages.Stats() }
	if rollups != nil {
		s.addKeptRollups(rollups, q.Scope, edge)
		parts = []part{{from, edge, visible}, {edge, to, readable}}
		add, answer = rollups.Add, func() stats.Stats {
			st := rollups.Stats()
			st.RollupsOnlyBefore = edge
			return st
		}
	}
	for _, p := range parts {
		if !p.from.Before(p.to) {
			continue // nothing after the edge, or an empty range
		}
		f := q.Filter
		f.From, f.To = p.from, p.to
		err := s.walkWhere(ctx, domain.Query{Scope: q.Scope, Filter: f}, now, p.read, func(m *domain.Message) bool {
			add(stats.SampleOf(*m))
			return true
		})
		if err != nil {
			return stats.Stats{}, fmt.Errorf("memory: stats: %w", err)
		}
	}
	return answer(), nil
}
