package sqlite

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.MessageRewriter = (*Store)(nil)

// ScanForRewrite reads q's days oldest first (dayfile.File.Scan), from the
// day of q.After (or q.From) until q.Limit messages are found; a day of
// several files (retention classes) has each file's first q.Limit merged
// in (created, id) order.
func (s *Store) ScanForRewrite(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	first := q.From
	if q.After != nil && q.After.CreatedAt.After(first) {
		first = q.After.CreatedAt
	}
	if !first.Before(q.To) || q.Limit < 1 {
		return nil, nil
	}
	days := dayfile.OfDay(s.dir.NewestFirst(dayfile.DayOf(first), dayfile.DayOf(q.To.Add(-time.Nanosecond))))
	var out []domain.Message
	for _, day := range slices.Backward(days) {
		page := q
		page.Limit = q.Limit - len(out)
		var found []domain.Message
		err := s.dir.Each(ctx, day, func(f *dayfile.File) error { // a file dropped by retention meanwhile is skipped
			more, err := f.Scan(ctx, page)
			found = append(found, more...)
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(day) > 1 {
			slices.SortFunc(found, func(a, b domain.Message) int {
				return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
			})
			found = found[:min(len(found), page.Limit)]
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
	byDay := map[time.Time][]domain.Message{}
	for _, m := range msgs {
		byDay[dayfile.DayOf(m.CreatedAt)] = append(byDay[dayfile.DayOf(m.CreatedAt)], m)
	}
	for day, msgs := range byDay {
		// Each file of the day (a message does not tell the class it was
		// stored in) rewrites those it holds.
		err := s.dir.Each(ctx, s.dir.NewestFirst(day, day), func(f *dayfile.File) error {
			rewritten, err := f.Rewrite(ctx, msgs)
			s.stats.Wrote(f, rewritten)
			return err
		})
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
	for _, part := range s.dir.NewestFirst(dayfile.DayOf(from), dayfile.DayOf(to.Add(-time.Nanosecond))) {
		f, err := s.dir.Acquire(ctx, part, false)
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
