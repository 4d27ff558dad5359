package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// maxWordCandidates is how many messages of a day file a q's words may find
// for List to read them by their words (sorting them); past it, List reads
// the day newest first through the scope index and checks q on each message,
// which finds a page of a frequent q sooner than sorting its thousands.
const maxWordCandidates = 2000

// where builds a WHERE clause and its arguments.
type where struct {
	clauses []string
	args    []any
}

func (w *where) add(clause string, args ...any) {
	w.clauses = append(w.clauses, clause)
	w.args = append(w.args, args...)
}

func (w *where) String() string { return strings.Join(w.clauses, " AND ") }

// addSeqs narrows w to the messages whose seq is one of seqs: SQLite reads
// each by its rowid (with messages NOT INDEXED, or the planner may walk an
// index instead).
func (w *where) addSeqs(seqs []int64) {
	list := make([]byte, 0, 8*len(seqs)+2)
	list = append(list, '[')
	for i, seq := range seqs {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, seq, 10)
	}
	w.add("seq IN (SELECT value FROM json_each(?))", string(append(list, ']')))
}

// ceilMicro is t in Unix microseconds, rounded up.
func ceilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

// readableWhere selects scope's messages readable at now that pass f's
// fields, except q and what the caller's Matcher checks again.
func readableWhere(scope domain.Scope, f domain.Filter, now time.Time) *where {
	w := &where{}
	w.add("account = ?", scope.Account)
	w.add("domain = ?", scope.Domain)
	w.add("visible <= ?", now.UnixMicro())
	w.add("expires > ?", now.UnixMicro())
	if f.Name != "" {
		w.add("name = ?", f.Name)
	}
	if f.Method != "" {
		w.add("method = ?", f.Method)
	}
	if f.IPAddress != "" {
		w.add("ip_address = ?", f.IPAddress)
	}
	if f.Path != "" {
		w.add("path = ?", f.Path)
	}
	if f.Route != "" {
		w.add("route = ?", f.Route)
	}
	if f.PathPrefix != "" {
		// Bytes, not characters: the prefix may end inside a character.
		w.add("substr(CAST(path AS BLOB), 1, ?) = CAST(? AS BLOB)", len(f.PathPrefix), f.PathPrefix)
	}
	if f.StatusMin != 0 {
		w.add("status >= ?", f.StatusMin)
	}
	if f.StatusMax != 0 {
		w.add("status <= ?", f.StatusMax)
	}
	if !f.From.IsZero() {
		w.add("created >= ?", ceilMicro(f.From))
	}
	if !f.To.IsZero() {
		w.add("created < ?", ceilMicro(f.To))
	}
	if f.MinDuration != nil {
		w.add("duration >= ?", ceilMicro(time.UnixMicro(0).Add(*f.MinDuration)))
	}
	if f.MaxDuration != nil {
		w.add("duration <= ?", f.MaxDuration.Microseconds())
	}
	return w
}

// dayRange is the first and last day f's range can hold messages of (zero:
// unbounded), narrowed to the cursor's day.
func dayRange(f domain.Filter, after *domain.Cursor) (first, last time.Time) {
	if !f.From.IsZero() {
		first = dayOf(f.From)
	}
	if !f.To.IsZero() {
		last = dayOf(f.To.Add(-time.Nanosecond))
	}
	if after != nil && (last.IsZero() || dayOf(after.CreatedAt).Before(last)) {
		last = dayOf(after.CreatedAt)
	}
	return first, last
}

// List reads the days of the range newest first, each newest first by
// (created, id) from the scope or name index, and stops once the page is
// full and one more message is known to follow. Every message read is
// checked with the filter's Matcher, which is what decides q.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("sqlite: list: limit must be at least 1, got %d", q.Limit)
	}
	words, searching := "", q.Filter.Text != ""
	if searching {
		var ok bool
		if words, ok = wordsQuery(q.Filter.Text); !ok {
			return domain.Page{Messages: []domain.Message{}}, nil
		}
	}
	it := &listIterator{s: s, q: q, now: now, words: words, match: q.Filter.Matcher()}
	it.days = s.daysNewestFirst(dayRange(q.Filter, q.After))
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

	days []time.Time
	day  *dayFile  // the file being read, its use lock held
	rows *sql.Rows // its rows
	err  error
}

// next returns the next matching message, or false at the end or on an
// error (it.err).
func (it *listIterator) next(ctx context.Context) (domain.Message, bool) {
	for it.err == nil {
		if it.rows == nil {
			if len(it.days) == 0 {
				return domain.Message{}, false
			}
			it.err = it.open(ctx, it.days[0])
			it.days = it.days[1:]
			continue
		}
		if !it.rows.Next() {
			if err := it.rows.Err(); err != nil {
				it.err = it.day.Error(ctx, "list", err)
			}
			it.closeDay()
			continue
		}
		m, err := scanMessage(it.rows)
		if err != nil {
			it.err = it.day.Error(ctx, "list", err)
			break
		}
		if it.match(m) {
			return m, true
		}
	}
	return domain.Message{}, false
}

// open starts reading day; a day dropped meanwhile has nothing left to read.
func (it *listIterator) open(ctx context.Context, day time.Time) error {
	d, err := it.s.acquire(ctx, day, false)
	if err != nil || d == nil {
		return err
	}
	it.day = d
	w := readableWhere(it.q.Scope, it.q.Filter, it.now)
	if c := it.q.After; c != nil {
		w.add("(created, id) < (?, ?)", c.CreatedAt.UnixMicro(), c.ID)
	}
	from := "messages"
	if it.words != "" {
		few, none, err := byWords(ctx, d, it.words, w)
		if err != nil {
			return d.Error(ctx, "list: search", err)
		}
		if none {
			it.closeDay()
			return nil
		}
		if few {
			from = "messages NOT INDEXED" // by seq, then sorted: a few thousand at most
		}
	}
	rows, err := d.Read.QueryContext(ctx, "SELECT "+messageColumns+" FROM "+from+" WHERE "+w.String()+
		" ORDER BY created DESC, id DESC", w.args...)
	if err != nil {
		return d.Error(ctx, "list", err)
	}
	it.rows = rows
	return nil
}

// byWords narrows w to the messages of d whose words hold all of words'
// tokens when they are few (at most maxWordCandidates): read them by seq
// (NOT INDEXED), or the planner walks the whole scope to test each. none
// reports that no message holds them.
func byWords(ctx context.Context, d *dayFile, words string, w *where) (few, none bool, err error) {
	seqs, few, err := wordCandidates(ctx, d.Read, words)
	if err != nil || !few {
		return false, false, err
	}
	if len(seqs) == 0 {
		return true, true, nil
	}
	w.addSeqs(seqs)
	return true, false, nil
}

// wordCandidates returns the seqs of the messages whose words hold words'
// tokens,
// and true, when they are at most maxWordCandidates; otherwise false.
func wordCandidates(ctx context.Context, db *sql.DB, words string) ([]int64, bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT rowid FROM words WHERE words MATCH ? LIMIT ?`, words, maxWordCandidates+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	seqs := []int64{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, false, err
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return seqs, len(seqs) <= maxWordCandidates, nil
}

func (it *listIterator) closeDay() {
	if it.rows != nil {
		_ = it.rows.Close()
		it.rows = nil
	}
	if it.day != nil {
		it.day.use.RUnlock()
		it.day = nil
	}
}

func (it *listIterator) close() { it.closeDay() }

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
	w := readableWhere(scope, domain.Filter{}, now)
	w.add(column+" = ?", idOrReference)
	// Named, because without statistics the planner prefers the scope's two
	// equal columns to the reference's one.
	query := "SELECT " + messageColumns + " FROM messages INDEXED BY messages_" + column + " WHERE " + w.String() + " LIMIT 1"
	for _, day := range s.daysNewestFirst(time.Time{}, time.Time{}) {
		m, found, err := s.getFrom(ctx, day, query, w.args)
		if err != nil || found {
			return m, err
		}
	}
	return domain.Message{}, fmt.Errorf("sqlite: message %q: %w", idOrReference, ports.ErrNotFound)
}

func (s *Store) getFrom(ctx context.Context, day time.Time, query string, args []any) (domain.Message, bool, error) {
	d, err := s.acquire(ctx, day, false)
	if err != nil || d == nil {
		return domain.Message{}, false, err
	}
	defer d.use.RUnlock()
	m, err := scanMessage(d.Read.QueryRowContext(ctx, query, args...))
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
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	query := "SELECT " + messageColumns + ` FROM messages INDEXED BY messages_id
		WHERE id IN (SELECT value FROM json_each(?)) AND account = ? AND domain = ?`
	var found []domain.Message
	for _, day := range s.daysNewestFirst(time.Time{}, time.Time{}) {
		if found, err = s.lookupIn(ctx, day, query, []any{string(list), scope.Account, scope.Domain}, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func (s *Store) lookupIn(ctx context.Context, day time.Time, query string, args []any, found []domain.Message) ([]domain.Message, error) {
	d, err := s.acquire(ctx, day, false)
	if err != nil || d == nil {
		return found, err
	}
	defer d.use.RUnlock()
	rows, err := d.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, d.Error(ctx, "lookup", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, d.Error(ctx, "lookup", err)
		}
		found = append(found, m)
	}
	if err := rows.Err(); err != nil {
		return nil, d.Error(ctx, "lookup", err)
	}
	return found, nil
}
