package sqlite

import (
	"context"
	"slices"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.MessageRewriter = (*Store)(nil)

// ScanForRewrite reads q's day files oldest first (dayfile.File.Scan), from
// the day of q.After (or q.From) until q.Limit messages are found.
func (s *Store) ScanForRewrite(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	first := q.From
	if q.After != nil && q.After.CreatedAt.After(first) {
		first = q.After.CreatedAt
	}
	if !first.Before(q.To) || q.Limit < 1 {
		return nil, nil
	}
	days := s.dir.NewestFirst(dayfile.DayOf(first), dayfile.DayOf(q.To.Add(-time.Nanosecond)))
	var out []domain.Message
	for _, day := range slices.Backward(days) {
		f, err := s.dir.Acquire(ctx, day, false)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue // dropped by retention meanwhile
		}
		page := q
		page.Limit = q.Limit - len(out)
		found, err := f.Scan(ctx, page)
		f.Release()
		if err != nil {
			return nil, err
		}
		if out = append(out, found...); len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// RewriteMessages rewrites msgs in their day files, one transaction each
// (dayfile.File.Rewrite: secure_delete on, the word index's entries
// deleted securely), and reads their hours again for the statistics.
func (s *Store) RewriteMessages(ctx context.Context, msgs []domain.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	for _, group := range dayfile.ByDay(msgs) {
		f, err := s.dir.Acquire(ctx, group.Day, false)
		if err != nil {
			return err
		}
		if f == nil {
			continue // no such day: none of them is stored
		}
		rewritten, err := f.Rewrite(ctx, group.Messages)
		s.stats.Wrote(f, rewritten)
		f.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// ExpungeRewritten rebuilds every day file of [from, to) and truncates its
// WAL (dayfile.File.Expunge): all of the range's, since a process killed
// after a rewrite may have left one not expunged, which a resumed re-scrub
// does not rewrite again.
func (s *Store) ExpungeRewritten(ctx context.Context, from, to time.Time) error {
	if !from.Before(to) {
		return nil
	}
	for _, day := range s.dir.NewestFirst(dayfile.DayOf(from), dayfile.DayOf(to.Add(-time.Nanosecond))) {
		f, err := s.dir.Acquire(ctx, day, false)
		if err != nil {
			return err
		}
		if f == nil {
			continue
		}
		err = f.Expunge(ctx)
		f.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
