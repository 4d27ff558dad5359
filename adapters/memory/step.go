package memory

import (
	"context"
	"runtime"

	"github.com/google/btree"

	"github.com/reqlog/reqlog/domain"
)

// A walk's steps: where it starts, what one step copies out of the index
// under the read lock, and its pace.

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
