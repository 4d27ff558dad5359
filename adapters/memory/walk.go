package memory

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/google/btree"

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
	matches := q.Filter.Matcher()
	if hidden := q.Filter.Hidden; hidden != nil {
		fields := matches
		matches = func(m domain.Message) bool { return fields(m) && (m.Tally || !s.hides(hidden, q.Scope.Account, m.ID)) }
	}
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

// readStep appends to step copies of up to size messages of q's scope
// (of its application when q names one) in List order from from on (the
// newest when nil), skipping the one at skip and stopping before any created
// before q.Filter.From. Fewer than size means no more follow.
func (s *Store) readStep(q domain.Query, from *domain.Cursor, skip domain.Cursor, step []domain.Message, size int) []domain.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	idx := s.scopes[q.Scope]
	if idx == nil {
		return step
	}
	read := func(m domain.Message) bool {
		switch {
		case m.CreatedAt.Equal(skip.CreatedAt) && m.ID == skip.ID:
			return true
		case m.CreatedAt.Before(q.Filter.From):
			return false // every later message is older still
		}
		step = append(step, m)
		return len(step) < size
	}
	if q.Filter.Name == "" {
		var start *domain.Message
		if from != nil {
			m := at(*from)
			start = &m
		}
		ascend(idx.all, start, read)
	} else if app := idx.byName[q.Filter.Name]; app != nil {
		ascend(app.positions, from, func(c domain.Cursor) bool {
			m, ok := idx.all.Get(at(c)) // always there: both change under the write lock
			return !ok || read(m)
		})
	}
	return step
}

// ascend calls f with t's items in order from from on (from the first when
// nil), until f returns false.
func ascend[T any](t *btree.BTreeG[T], from *T, f func(T) bool) {
	if from == nil {
		t.Ascend(f)
	} else {
		t.AscendGreaterOrEqual(*from, f)
	}
}

// walkStart is where q's walk starts (nil: at the newest message): after the
// cursor, or at the first message created before the filter's upper bound,
// whichever comes later; and the position to skip there (the cursor's own).
func walkStart(q domain.Query) (from *domain.Cursor, skip domain.Cursor) {
	if !q.Filter.To.IsZero() {
		// Every id sorts after "": this precedes everything created before To.
		from = &domain.Cursor{CreatedAt: q.Filter.To}
	}
	if q.After != nil {
		if from == nil || domain.Precedes(at(*from), at(*q.After)) {
			from = q.After
		}
		skip = *q.After
	}
	return from, skip
}

// pacer looks at a walk's context every walkStep messages considered, and
// every walkStepBytes of text searched, and yields the processor there: a
// goroutine runs up to 10 ms before the scheduler preempts it, and requests
// sharing the processor with a walk should wait no longer than a step.
type pacer struct {
	ctx             context.Context
	messages, bytes int
	touched         byte // what touchPaths read, kept so that its loads are made
}

// considered counts m as read, its texts too when searched, and returns ctx's
// error once ctx is done.
func (p *pacer) considered(m *domain.Message, searched bool) error {
	p.messages++
	if searched {
		p.bytes += len(m.Path) + len(m.Request.Body) + len(m.Response.Body)
	}
	if p.messages < walkStep && p.bytes < walkStepBytes {
		return nil
	}
	p.messages, p.bytes = 0, 0
	runtime.Gosched()
	return p.ctx.Err()
}

// touchPaths reads the first byte of each message's path, one message after
// the other, before the walk filters and counts them: every message's path
// lies elsewhere in memory, and these loads, which depend on nothing, let the
// processor wait for all of them at once instead of one by one (statistics
// read every path to rank the routes).
func touchPaths(step []domain.Message) (touched byte) {
	for i := range step {
		if p := step[i].Path; p != "" {
			touched ^= p[0]
		}
	}
	return touched
}
