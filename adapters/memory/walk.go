package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Bounds of one step of a walk (see the package doc).
const (
	// walkStep is how many index entries a step reads under the read lock, and
	// how many messages a walk considers between looks at its context.
	walkStep = 256
	// walkStepBytes is how much text a search reads between looks at its
	// context: a few large bodies end a step before walkStep messages do.
	walkStepBytes = 1 << 20
)

// List walks q's scope from the page's start and keeps the first q.Limit
// messages readable at now that pass q.Filter, and one more to know whether
// more follow; domain.PageOf cuts the page (q.Limit, domain.PageBytes) and
// copies its messages' headers out.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if err := ctx.Err(); err != nil {
		return domain.Page{}, fmt.Errorf("memory: list: %w", err)
	}
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("memory: list: limit must be at least 1, got %d", q.Limit)
	}
	found := make([]domain.Message, 0, min(q.Limit+1, walkStep))
	err := s.walk(ctx, q, now, func(m *domain.Message) bool {
		if m.Tally {
			return true
		}
		found = append(found, *m)
		return len(found) <= q.Limit
	})
	if err != nil {
		return domain.Page{}, fmt.Errorf("memory: list: %w", err)
	}
	return domain.PageOf(q.Limit, found, domain.Message.Clone), nil
}

// StreamSamples walks scope's messages readable at now that pass f, as
// ports.SampleStreamer says.
func (s *Store) StreamSamples(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, yield func(stats.Sample) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: statistics: %w", err)
	}
	var yieldErr error
	err := s.walk(ctx, domain.Query{Scope: scope, Filter: f}, now, func(m *domain.Message) bool {
		yieldErr = yield(stats.SampleOf(*m))
		return yieldErr == nil
	})
	if err == nil {
		err = yieldErr
	}
	return err
}

// walk calls visit, in List order from q.After (or the newest message), with
// each message of q.Scope readable at now that passes q.Filter, until visit
// returns false or the messages run out. visit's message is the walk's copy,
// valid during the call. The walk copies up to walkStep messages at a time out
// of the index under the read lock and filters them after letting it go (a
// page's walk copies q.Limit+1 first, twice as many the step after, and so
// on: most pages fill in their first step); it returns ctx's error once ctx is
// done.
func (s *Store) walk(ctx context.Context, q domain.Query, now time.Time, visit func(*domain.Message) bool) error {
	return s.walkWhere(ctx, q, now, func(m *domain.Message) bool { return m.Readable(now) }, visit)
}

// walkWhere is walk with the messages read chosen by readable instead of
// those readable at now (their bodies left out past their retention at now).
func (s *Store) walkWhere(ctx context.Context, q domain.Query, now time.Time, readable func(*domain.Message) bool, visit func(*domain.Message) bool) error {
	matches := q.Filter.MatcherHiding(func(m domain.Message) []string { return s.subjectsOf(q.Scope.Account, m.ID) })
	pace := pacer{ctx: ctx}
	from, skip := walkStart(q)
	size := walkStep
	if q.Limit > 0 {
		size = min(walkStep, q.Limit+1)
	}
	var step []domain.Message
	for {
		step = s.readStep(q, from, skip, step[:0], size)
		pace.touched ^= touchPaths(step)
		for i := range step {
			m := &step[i]
			*m = m.WithoutExpiredBodies(now)
			if readable(m) && matches(*m) && !visit(m) {
				return nil
			}
			if err := pace.considered(m, q.Filter.Text != ""); err != nil {
				return err
			}
		}
		if len(step) < size {
			return nil
		}
		size = min(2*size, walkStep)
		last := positionOf(step[len(step)-1])
		from, skip = &last, last
	}
}
