package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// maxWordCandidates is how many messages of a day file a q's words may find
// for List to read them by their words (sorting them); past it, List reads
// the day newest first through the scope index and checks q on each message,
// which finds a page of a frequent q sooner than sorting its thousands.
const maxWordCandidates = 2000

// List reads the days of the range newest first, each newest first by
// (created, id) from the scope or name index, and stops once the page is
// full and one more message is known to follow. A day of several files
// (retention classes) is read from all of them at once, merged. Every
// message read is checked with the filter's Matcher, which is what decides
// q, after its bodies are left out if they have expired.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("sqlite: list: limit must be at least 1, got %d", q.Limit)
	}
	words, _ := dayfile.Words(q.Filter.Text)
	if q.Filter.Text != "" && words == "" {
		return domain.Page{Messages: []domain.Message{}}, nil
	}
	it := &listIterator{s: s, q: q, now: now, words: words, match: q.Filter.Matcher()}
	it.days = dayfile.OfDay(s.dir.NewestFirst(dayfile.Range(q.Filter, q.After)))
	defer it.close()
	var current domain.Message
	page, err := domain.FillPage(q.Limit, q.Limit, func() bool {
		var ok bool
		current, ok = it.next(ctx)
		return ok
	}, func() (domain.Message, error) { return current, nil })
	if err == nil {
		err = it.err
	}
	if err != nil {
		return domain.Page{}, err
	}
	return page, nil
}

// listIterator walks the matching messages of a List across day files.
type listIterator struct {
	s     *Store
	q     domain.Query
	now   time.Time
	words string
	match func(domain.Message) bool

	days    [][]dayfile.Part
	reading []*dayReader // the files of the day being read, each holding its next message
	last    *domain.Message
	err     error
}

// dayReader is one file of the day being read: held, its rows, the message
// it has read and not yet returned.
type dayReader struct {
	file *dayfile.File
	rows *sql.Rows
	head domain.Message
}

// next returns the next matching message, or false at the end or on an
// error (it.err).
func (it *listIterator) next(ctx context.Context) (domain.Message, bool) {
	for it.err == nil {
		if len(it.reading) == 0 {
			if len(it.days) == 0 {
				return domain.Message{}, false
			}
			it.err = it.openDay(ctx, it.days[0])
			it.days = it.days[1:]
			continue
		}
		m, ok := it.newest(ctx)
		if !ok {
			continue
		}
		// A retry stored again in another class's file (a rule set changed
		// in between) is one message.
		if it.last != nil && it.last.ID == m.ID && it.last.CreatedAt.Equal(m.CreatedAt) {
			continue
		}
		it.last = &m
		m = m.WithoutExpiredBodies(it.now)
		if it.match(m) {
			return m, true
		}
	}
	return domain.Message{}, false
}

// newest takes the newest head of the day's files, and reads that file's
// next; false when none is left (the day's files closed) or on an error.
func (it *listIterator) newest(ctx context.Context) (domain.Message, bool) {
	best := -1
	for i, r := range it.reading {
		if best < 0 || domain.Precedes(r.head, it.reading[best].head) {
			best = i
		}
	}
	if best < 0 {
		return domain.Message{}, false
	}
	r := it.reading[best]
	m := r.head
	if ok := it.advance(ctx, r); !ok {
		r.close()
		it.reading = slices.Delete(it.reading, best, best+1)
	}
	return m, it.err == nil
}

// advance reads r's next message into its head; false at its end or on an
// error (it.err).
func (it *listIterator) advance(ctx context.Context, r *dayReader) bool {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			it.err = r.file.Error(ctx, "list", err)
		}
		return false
	}
	m, err := r.file.ScanMessage(r.rows)
	if err != nil {
		it.err = r.file.Error(ctx, "list", err)
		return false
	}
	r.head = m
	return true
}

// openDay starts reading each of a day's files; a file dropped meanwhile
// has nothing left to read.
func (it *listIterator) openDay(ctx context.Context, parts []dayfile.Part) error {
	for _, part := range parts {
		r, err := it.open(ctx, part)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if !it.advance(ctx, r) {
			r.close()
			if it.err != nil {
				return it.err
			}
			continue
		}
		it.reading = append(it.reading, r)
	}
	return nil
}

// open starts reading part's file: nil when it holds nothing to read.
func (it *listIterator) open(ctx context.Context, part dayfile.Part) (*dayReader, error) {
	d, err := it.s.dir.Acquire(ctx, part, false)
	if err != nil || d == nil {
		return nil, err
	}
	w := dayfile.ReadableWhere(it.q.Scope, it.q.Filter, it.now)
	if c := it.q.After; c != nil {
		w.Add("(created, id) < (?, ?)", c.CreatedAt.UnixMicro(), c.ID)
	}
	from := "messages"
	if it.words != "" {
		few, none, err := d.ByWords(ctx, it.words, w, maxWordCandidates)
		if err != nil {
			d.Release()
			return nil, d.Error(ctx, "list: search", err)
		}
		if none {
			d.Release()
			return nil, nil
		}
		if few {
			from = "messages NOT INDEXED" // by seq, then sorted: a few thousand at most
		}
	}
	rows, err := d.Read.QueryContext(ctx, "SELECT "+dayfile.MessageColumns+" FROM "+from+" WHERE "+w.String()+
		" ORDER BY created DESC, id DESC", w.Args...)
	if err != nil {
		d.Release()
		return nil, d.Error(ctx, "list", err)
	}
	return &dayReader{file: d, rows: rows}, nil
}

func (r *dayReader) close() {
	_ = r.rows.Close()
	r.file.Release()
}

func (it *listIterator) close() {
	for _, r := range it.reading {
		r.close()
	}
	it.reading = nil
}

// Get probes each day file, newest first, through its unique id index or its
// reference index: an id derived from an Idempotency-Key does not tell its
// day.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	column := "id"
	if _, isID := domain.CanonicalID(idOrReference); !isID {
		if !domain.IsReference(idOrReference) {
			return domain.Message{}, fmt.Errorf("sqlite: message %q: %w", idOrReference, ports.ErrNotFound)
		}
		column = "reference"
	}
	w := dayfile.ReadableWhere(scope, domain.Filter{}, now)
	w.Add(column+" = ?", idOrReference)
	// Named, because without statistics the planner prefers the scope's two
	// equal columns to the reference's one.
	query := "SELECT " + dayfile.MessageColumns + " FROM messages INDEXED BY messages_" + column + " WHERE " + w.String() + " LIMIT 1"
	for _, part := range s.dir.NewestFirst(time.Time{}, time.Time{}) {
		m, found, err := s.getFrom(ctx, part, query, w.Args)
		if err != nil || found {
			return m.WithoutExpiredBodies(now), err
		}
	}
	return domain.Message{}, fmt.Errorf("sqlite: message %q: %w", idOrReference, ports.ErrNotFound)
}

func (s *Store) getFrom(ctx context.Context, part dayfile.Part, query string, args []any) (domain.Message, bool, error) {
	d, err := s.dir.Acquire(ctx, part, false)
	if err != nil || d == nil {
		return domain.Message{}, false, err
	}
	defer d.Release()
	m, err := d.ScanMessage(d.Read.QueryRowContext(ctx, query, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return domain.Message{}, false, nil
	case err != nil:
		return domain.Message{}, false, d.Error(ctx, "get", err)
	}
	return m, true, nil
}

// Lookup asks every day file for the ids at once.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	var found []domain.Message
	err := s.lookupEach(ctx, "SELECT "+dayfile.MessageColumns+" FROM messages INDEXED BY messages_id", scope, ids,
		func(d *dayfile.File, rows *sql.Rows) error {
			m, err := d.ScanMessage(rows)
			found = append(found, m)
			return err
		})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// LookupTallies asks every day file for the ids at once, among its tallies.
// A tally keeps no digest of its submission here.
func (s *Store) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	var found []ports.StoredTally
	err := s.lookupEach(ctx, "SELECT id FROM tallies INDEXED BY tallies_id", scope, ids, func(_ *dayfile.File, rows *sql.Rows) error {
		var t ports.StoredTally
		err := rows.Scan(&t.ID)
		found = append(found, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// lookupEach runs selectFrom, narrowed to the rows of scope with any of ids,
// in every day file, and scan on each row: a message stored before may be in
// any partition.
func (s *Store) lookupEach(ctx context.Context, selectFrom string, scope domain.Scope, ids []string, scan func(*dayfile.File, *sql.Rows) error) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	query := selectFrom + " WHERE id IN (SELECT value FROM json_each(?)) AND account = ? AND domain = ?"
	args := []any{string(list), scope.Account, scope.Domain}
	for _, part := range s.dir.NewestFirst(time.Time{}, time.Time{}) {
		if err := s.lookupIn(ctx, part, query, args, scan); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) lookupIn(ctx context.Context, part dayfile.Part, query string, args []any, scan func(*dayfile.File, *sql.Rows) error) error {
	d, err := s.dir.Acquire(ctx, part, false)
	if err != nil || d == nil {
		return err
	}
	defer d.Release()
	rows, err := d.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return d.Error(ctx, "lookup", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(d, rows); err != nil {
			return d.Error(ctx, "lookup", err)
		}
	}
	if err := rows.Err(); err != nil {
		return d.Error(ctx, "lookup", err)
	}
	return nil
}
