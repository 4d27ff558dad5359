package app

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// Statistics is the traffic statistics use case. Every call is a walk: it waits
// for its account's turn (WalkLimits).
type Statistics struct{ reads *reads }

// NewStatistics returns the statistics use case reading from store under policy.
func NewStatistics(store ports.MessageReader, policy domain.Policy, clock ports.Clock) *Statistics {
	return NewReader(store, policy, clock).Statistics()
}

// ParseQuery reads the statistics' query parameters at the current time.
func (s *Statistics) ParseQuery(values map[string][]string) (stats.Query, error) {
	return stats.ParseQuery(values, s.reads.clock.Now())
}

// Compute returns the statistics of the principal's readable messages, scoped
// as every read is (reads.statsScoped): the counted range starts no earlier
// than retention allows, or, for a query the rollups answer, than the
// rollup retention, the part before the messages' retention counted from
// the rollups alone; the reply's range and buckets stay those asked for.
func (s *Statistics) Compute(ctx context.Context, principal domain.Principal, q stats.Query) (stats.Stats, error) {
	if q.Interval.Width <= 0 || !q.From.Before(q.To) || q.BucketCount() > stats.MaxBuckets {
		return stats.Stats{}, &domain.ValidationError{Message: "the statistics query is invalid",
			Fields: []domain.FieldError{{Field: "interval", Message: fmt.Sprintf("must give 1 to %d buckets over the range", stats.MaxBuckets)}}}
	}
	now := s.reads.clock.Now()
	q.Scope = principal.Scope
	// A query that reads messages leaves a pending erasure's out, as it
	// leaves out hidden ones; one the rollups answer counts them, as it
	// counts hidden and deleted ones (rollups keep their counts), and
	// stays answered by them.
	if !q.RollupsAnswer() {
		if err := s.reads.leaveOutPending(ctx, principal.Account, &q.Filter); err != nil {
			return stats.Stats{}, fmt.Errorf("compute statistics: %w", err)
		}
	}
	var ok bool
	if q, ok = s.reads.statsScoped(principal, q, now); !ok {
		return stats.New(q), nil
	}
	release, err := s.reads.walks.admit(ctx, principal.Account)
	if err != nil {
		return stats.Stats{}, fmt.Errorf("compute statistics: %w", err)
	}
	defer release()
	st, err := s.reads.store.Stats(ctx, q, now)
	if err != nil {
		return stats.Stats{}, fmt.Errorf("compute statistics: %w", err)
	}
	return st, nil
}

// ExportPageSize is how many messages an export asks the store for at a time:
// large enough that paging costs little, small enough (with domain.PageBytes)
// that one page's memory stays bounded.
const ExportPageSize = 1000

// Exporter is the export use case.
type Exporter struct{ reads *reads }

// NewExporter returns the export use case reading from store under policy.
func NewExporter(store ports.MessageReader, policy domain.Policy, clock ports.Clock) *Exporter {
	return NewReader(store, policy, clock).Exporter()
}

// ExportResult is what an export handed over, and how far back it is whole.
type ExportResult struct {
	Written int
	// ExpiredBefore, when not zero, is the retention's edge when the export
	// ended, which moved into the range the export read back to while it ran:
	// messages created before it may be missing, having expired, and been
	// purged, before the page that would have held them was read.
	ExpiredBefore time.Time
}

// Export hands every readable message of the principal that passes q.Filter to
// write, newest first, at most q.Max of them, a page at a time. Only one page
// is held at a time, whatever the count; the pages follow one another by
// keyset cursor, all read at the time the export began, so a message never
// appears twice; one that expires and is purged before its page is read is
// missing, which ExportResult.ExpiredBefore tells. Reading each page is a walk
// that waits for its account's turn; writing it is not, so a slow reader holds
// no turn. write owns each page only during the call. The first error of the
// store or of write ends the export and is returned; write has then seen a
// prefix of the export.
func (e *Exporter) Export(ctx context.Context, principal domain.Principal, q domain.ExportQuery, write func([]domain.Message) error) (ExportResult, error) {
	var res ExportResult
	now := e.reads.clock.Now()
	list := domain.Query{Scope: principal.Scope}
	var ok bool
	if list.Filter, ok = e.reads.scoped(principal, q.Filter, now); !ok {
		return res, nil
	}
	remaining := q.Max
	if remaining <= 0 || remaining > domain.MaxExport {
		remaining = domain.MaxExport
	}
	for remaining > 0 {
		list.Limit = min(remaining, ExportPageSize)
		page, err := e.readPage(ctx, principal, list, now)
		if err != nil {
			return res, fmt.Errorf("export messages: %w", err)
		}
		if len(page.Messages) > remaining { // a store that ignored the limit
			page.Messages, page.HasMore = page.Messages[:remaining], true
		}
		if len(page.Messages) > 0 {
			if err := write(page.Messages); err != nil {
				return res, err
			}
		}
		res.Written += len(page.Messages)
		remaining -= len(page.Messages)
		next := page.Next()
		if next == nil {
			// Read back to the range's start: what expired since the export
			// began may have gone before its page was read.
			if edge := e.reads.policy.OldestReadable(e.reads.clock.Now()); edge.After(list.Filter.From) {
				res.ExpiredBefore = edge
			}
			break
		}
		list.After = next
	}
	return res, nil
}

// readPage reads one page of an export in its account's turn.
func (e *Exporter) readPage(ctx context.Context, principal domain.Principal, q domain.Query, now time.Time) (domain.Page, error) {
	if err := e.reads.leaveOutPending(ctx, principal.Account, &q.Filter); err != nil {
		return domain.Page{}, err
	}
	release, err := e.reads.walks.admit(ctx, principal.Account)
	if err != nil {
		return domain.Page{}, err
	}
	defer release()
	return e.reads.store.List(ctx, q, now)
}

// parallelWalks is how many statistics calls may run at once: more only wait
// for a turn.
func (s *Statistics) parallelWalks() int {
	if w := s.reads.walks.limits.Walks; w > 0 {
		return w
	}
	return runtime.GOMAXPROCS(0)
}
