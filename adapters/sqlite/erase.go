package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.Eraser         = (*Store)(nil)
	_ ports.TallyEraser    = (*Store)(nil)
	_ ports.SubjectIndexer = (*Store)(nil)
)

// truncateWithin bounds Expunge's wait for the readers of a day file's WAL.
const truncateWithin = 30 * time.Second

// SubjectMessages reads each day file's subject index, newest day first
// (a day's files merged), until q.Limit refs are found.
func (s *Store) SubjectMessages(ctx context.Context, q ports.SubjectQuery) ([]ports.SubjectRef, error) {
	var last time.Time
	if !q.CreatedBefore.IsZero() {
		last = dayfile.DayOf(q.CreatedBefore)
	}
	if q.After != nil && (last.IsZero() || q.After.CreatedAt.Before(last)) {
		last = dayfile.DayOf(q.After.CreatedAt)
	}
	var refs []ports.SubjectRef
	for _, day := range dayfile.OfDay(s.dir.NewestFirst(time.Time{}, last)) {
		if len(refs) >= q.Limit {
			break
		}
		dayQuery := q
		dayQuery.Limit = q.Limit - len(refs)
		var found []ports.SubjectRef
		err := s.dir.Each(ctx, day, func(f *dayfile.File) error {
			more, err := f.Subjects(ctx, dayQuery)
			found = append(found, more...)
			return err
		})
		if err != nil {
			return nil, err
		}
		// The refs of a day's files (retention classes) in List order, so
		// that a page ends where the next one's After starts.
		slices.SortFunc(found, func(a, b ports.SubjectRef) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
		})
		refs = append(refs, found[:min(len(found), dayQuery.Limit)]...)
	}
	return refs, nil
}

// MessageSubjects looks for account's message id in each day file, newest
// first, as Get does.
func (s *Store) MessageSubjects(ctx context.Context, account, id string) (ports.SubjectRef, []string, error) {
	for _, day := range s.dir.NewestFirst(time.Time{}, time.Time{}) {
		f, err := s.dir.Acquire(ctx, day, false)
		if err != nil {
			return ports.SubjectRef{}, nil, err
		}
		if f == nil {
			continue
		}
		ref, hashes, found, err := f.MessageSubjects(ctx, account, id)
		f.Release()
		if err != nil || found {
			return ref, hashes, err
		}
	}
	return ports.SubjectRef{}, nil, fmt.Errorf("sqlite: message %q: %w", id, ports.ErrNotFound)
}

// Hide sets the expiry of account's messages refs to erasure.HiddenExpiry,
// one transaction per day file.
func (s *Store) Hide(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	return s.eachDay(ctx, refs, func(f *dayfile.File, ids []string) (int64, error) {
		return f.Hide(ctx, account, ids)
	})
}

// Delete deletes account's messages refs with secure_delete, their word
// (as tombstones, merged away by Expunge) and subject index entries too
// (dayfile.File.Erase), one transaction per day file. The rollups keep
// counting them: they hold counts, not the messages.
func (s *Store) Delete(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	return s.eachDay(ctx, refs, func(f *dayfile.File, ids []string) (int64, error) {
		return f.Erase(ctx, account, ids, !s.skipWords)
	})
}

// EraseTallies deletes q's tallies from each day file up to
// q.CreatedBefore's (dayfile.File.EraseTallies).
func (s *Store) EraseTallies(ctx context.Context, q ports.SubjectQuery) (int64, error) {
	var last time.Time
	if !q.CreatedBefore.IsZero() {
		last = dayfile.DayOf(q.CreatedBefore)
	}
	var total int64
	for _, day := range s.dir.NewestFirst(time.Time{}, last) {
		f, err := s.dir.Acquire(ctx, day, false)
		if err != nil || f == nil {
			if err != nil {
				return total, err
			}
			continue
		}
		n, err := f.EraseTallies(ctx, q)
		f.Release()
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// IndexSubjects adds the entries to the subject index of their day files,
// one statement per file.
func (s *Store) IndexSubjects(ctx context.Context, account string, entries []ports.SubjectEntry) (int64, error) {
	return inDayFiles(ctx, s, entries, func(e ports.SubjectEntry) time.Time { return e.Ref.CreatedAt },
		func(f *dayfile.File, entries []ports.SubjectEntry) (int64, error) {
			return f.IndexSubjects(ctx, account, entries, !s.skipWords)
		})
}

// eachDay calls do with each day file of the days refs fall in and their
// ids of that day, and adds up what it returns; a day without a file is
// skipped. The statistics' kept hours of those days are read again after.
func (s *Store) eachDay(ctx context.Context, refs []ports.SubjectRef, do func(*dayfile.File, []string) (int64, error)) (int64, error) {
	return inDayFiles(ctx, s, refs, func(r ports.SubjectRef) time.Time { return r.CreatedAt },
		func(f *dayfile.File, refs []ports.SubjectRef) (int64, error) {
			ids := make([]string, len(refs))
			touched := make([]domain.Message, len(refs))
			for i, r := range refs {
				ids[i], touched[i] = r.ID, domain.Message{ID: r.ID, CreatedAt: r.CreatedAt}
			}
			n, err := do(f, ids)
			s.stats.Wrote(f, touched)
			return n, err
		})
}

// inDayFiles calls do with each day file of the days items fall in (by
// created; every retention class's file of the day, since an item does not
// tell its class) and the items of that day, and adds up what it returns; a
// day without a file is skipped.
func inDayFiles[T any](ctx context.Context, s *Store, items []T, created func(T) time.Time, do func(*dayfile.File, []T) (int64, error)) (int64, error) {
	byDay := map[time.Time][]T{}
	for _, item := range items {
		day := dayfile.DayOf(created(item))
		byDay[day] = append(byDay[day], item)
	}
	var total int64
	for day, items := range byDay {
		err := s.dir.Each(ctx, s.dir.NewestFirst(day, day), func(f *dayfile.File) error {
			n, err := do(f, items)
			total += n
			return err
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Expunge merges away the word index entries Delete left as tombstones in
// each day file that owes it (dayfile.File.MergeErasedWords), zeroes the
// free pages of each day file Delete or EraseTallies deleted from
// (dayfile.File.ZeroFreePages), then checkpoints every day file's WAL into
// the file and truncates it (sqlitedb.TruncateWAL): the WAL still holds the
// pages of an erased message as they were before Delete.
func (s *Store) Expunge(ctx context.Context) error {
	for _, day := range s.dir.NewestFirst(time.Time{}, time.Time{}) {
		f, err := s.dir.Acquire(ctx, day, false)
		if err != nil {
			return err
		}
		if f == nil {
			continue
		}
		err = f.MergeErasedWords(ctx)
		if err == nil {
			err = f.ZeroFreePages(ctx)
		}
		if err == nil {
			err = sqlitedb.TruncateWAL(ctx, f.Write, truncateWithin)
		}
		f.Release()
		if err != nil {
			return f.Error(ctx, "expunge", err)
		}
	}
	return nil
}
