package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
)

// Stats feeds stats.Builder with every message of q's range readable at
// now that passes q.Filter, and every tally; a query with a part counted
// from rollups alone is counted by statsWithKeptRollups.
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	if edge, ok := q.RollupsOnlyPart(); ok && q.RollupsAnswer() {
		return s.statsWithKeptRollups(ctx, q, now, edge)
	}
	// The builder counts only the range; the walk need not read beyond it.
	f := q.Filter
	if f.From.Before(q.From) {
		f.From = q.From
	}
	if f.To.IsZero() || f.To.After(q.To) {
		f.To = q.To
	}
	builder := stats.NewBuilder(q)
	err := s.StreamSamples(ctx, q.Scope, f, now, func(sample stats.Sample) error {
		builder.Add(sample)
		return nil
	})
	if err != nil {
		return stats.Stats{}, fmt.Errorf("memory: stats: %w", err)
	}
	return builder.Stats(), nil
}
