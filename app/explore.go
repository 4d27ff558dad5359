package app

import (
	"context"
	"fmt"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Statistics is the traffic statistics use case: a Reader's store, policy and
// clock, with methods of its own.
type Statistics Reader

// NewStatistics returns the statistics use case reading from store under policy.
func NewStatistics(store ports.MessageReader, policy domain.Policy, clock ports.Clock) *Statistics {
	return NewReader(store, policy, clock).Statistics()
}

// Statistics returns the statistics use case over the reader's store, policy
// and clock.
func (r *Reader) Statistics() *Statistics { return (*Statistics)(r) }

// ParseQuery reads the statistics' query parameters at the current time.
func (s *Statistics) ParseQuery(values map[string][]string) (domain.StatsQuery, error) {
	return domain.ParseStatsQuery(values, s.clock.Now())
}

// Compute returns the statistics of the principal's readable messages. The scope
// comes from the principal, and a principal bound to one application counts only
// that one. Expired messages are not counted: the counted range starts no earlier
// than retention allows, while the reply's range and buckets stay those asked for.
func (s *Statistics) Compute(ctx context.Context, principal domain.Principal, q domain.StatsQuery) (domain.Stats, error) {
	if q.Interval.Width <= 0 || !q.From.Before(q.To) || q.BucketCount() > domain.MaxBuckets {
		return domain.Stats{}, &domain.ValidationError{Message: "the statistics query is invalid",
			Fields: []domain.FieldError{{Field: "interval", Message: fmt.Sprintf("must give 1 to %d buckets over the range", domain.MaxBuckets)}}}
	}
	now := s.clock.Now()
	q.Scope = principal.Scope
	if !narrowToPrincipal(&q.Filter, principal) {
		return domain.NewStats(q), nil
	}
	if oldest := s.policy.OldestReadable(now); q.Filter.From.Before(oldest) {
		q.Filter.From = oldest
	}
	if !q.Filter.To.IsZero() && !q.Filter.From.Before(q.Filter.To) {
		return domain.NewStats(q), nil
	}
	stats, err := s.store.Stats(ctx, q, now)
	if err != nil {
		return domain.Stats{}, fmt.Errorf("compute statistics: %w", err)
	}
	return stats, nil
}

// narrowToPrincipal forces the principal's application on f; false when f asks
// for another application, which the principal can never see.
func narrowToPrincipal(f *domain.Filter, principal domain.Principal) bool {
	if principal.Name == "" {
		return true
	}
	if f.Name != "" && f.Name != principal.Name {
		return false
	}
	f.Name = principal.Name
	return true
}

// ExportPageSize is how many messages an export asks the store for at a time:
// large enough that paging costs little, small enough (with domain.PageBytes)
// that one page's memory stays bounded.
const ExportPageSize = 1000

// Exporter is the export use case: a Reader's store, policy and clock, with
// methods of its own.
type Exporter Reader

// NewExporter returns the export use case reading from store under policy.
func NewExporter(store ports.MessageReader, policy domain.Policy, clock ports.Clock) *Exporter {
	return NewReader(store, policy, clock).Exporter()
}

// Exporter returns the export use case over the reader's store, policy and clock.
func (r *Reader) Exporter() *Exporter { return (*Exporter)(r) }

// Export hands every readable message of the principal that passes q.Filter to
// write, newest first, at most q.Max of them, a page at a time, and returns how
// many it handed over. Only one page is held at a time, whatever the count; the
// pages follow one another by keyset cursor, all read at the time the export
// began, so a message never appears twice. write owns each page only during the
// call. The first error of the store or of write ends the export and is
// returned; write has then seen a prefix of the export.
func (e *Exporter) Export(ctx context.Context, principal domain.Principal, q domain.ExportQuery, write func([]domain.Message) error) (int, error) {
	now := e.clock.Now()
	list := domain.Query{Scope: principal.Scope, Filter: q.Filter}
	if !narrowToPrincipal(&list.Filter, principal) {
		return 0, nil
	}
	if oldest := e.policy.OldestReadable(now); list.Filter.From.Before(oldest) {
		list.Filter.From = oldest
	}
	if !list.Filter.To.IsZero() && !list.Filter.From.Before(list.Filter.To) {
		return 0, nil
	}
	remaining := q.Max
	if remaining <= 0 || remaining > domain.MaxExport {
		remaining = domain.MaxExport
	}
	written := 0
	for remaining > 0 {
		list.Limit = min(remaining, ExportPageSize)
		page, err := e.store.List(ctx, list, now)
		if err != nil {
			return written, fmt.Errorf("export messages: %w", err)
		}
		if len(page.Messages) > remaining { // a store that ignored the limit
			page.Messages, page.HasMore = page.Messages[:remaining], true
		}
		if len(page.Messages) > 0 {
			if err := write(page.Messages); err != nil {
				return written, err
			}
		}
		written += len(page.Messages)
		remaining -= len(page.Messages)
		next := page.Next()
		if next == nil {
			break
		}
		list.After = next
	}
	return written, nil
}
