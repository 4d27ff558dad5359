package dayfile

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
)

// The statements every Append runs, prepared once on the file's writer
// rather than in each transaction: a batch split over several files (a day
// and its retention classes) runs a transaction in each, and parsing eight
// statements in each cost about 20 µs a message (docs/benchmarks.md).
const (
	tallyAnyQuery    = `SELECT EXISTS (SELECT 1 FROM tallies)`
	tallyHoldsQuery  = `SELECT EXISTS (SELECT 1 FROM tallies WHERE id = ?)`
	tallyInsertQuery = `INSERT INTO tallies(account, domain, created, id, name, ip_address, method, path,
			route, status, duration, visible, expires)
			SELECT ?,?,?,?,?,?,?,?,?,?,?,?,? WHERE NOT EXISTS (SELECT 1 FROM messages WHERE id = ?) ON CONFLICT DO NOTHING`
	tallySubjectQuery = `INSERT OR IGNORE INTO tally_subjects(hash, id) VALUES (?, ?)`
	insertWordsQuery  = `INSERT INTO words(rowid, w) VALUES (?, ?)`
	rollupReadQuery   = `SELECT data FROM rollups WHERE account = ? AND domain = ? AND minute = ? AND name = ?`
	rollupWriteQuery  = `INSERT INTO rollups(account, domain, minute, name, data) VALUES (?,?,?,?,?)
		ON CONFLICT DO UPDATE SET data = excluded.data`
	dayTotalsQuery = `UPDATE day SET messages = messages + ?, max_expires = max(max_expires, ?)`
)

// appendQueries are the statements an Append runs.
func appendQueries() []string {
	return []string{insertMessage, insertWordsQuery, tallyAnyQuery, tallyHoldsQuery, tallyInsertQuery,
		tallySubjectQuery, rollupReadQuery, rollupWriteQuery, dayTotalsQuery}
}

// statements are the Append statements prepared on one writer (a *sql.DB
// of one connection): a transaction of that writer uses them without
// preparing them again (sql.Tx.StmtContext). A nil *statements, or one not
// prepared, prepares each in its transaction, as a rewrite or a migration
// does.
type statements struct {
	db     *sql.DB
	byText atomic.Pointer[map[string]*sql.Stmt]
}

// prepare prepares the Append statements on db unless done: before a
// transaction begins, since the writer's one connection is the
// transaction's then. No lock is held meanwhile: a transaction of the
// writer (another Append's) may hold the connection until it commits, and
// reads the statements on the way. A failure leaves none prepared; each
// transaction then prepares its own.
func (s *statements) prepare(ctx context.Context) {
	if s.byText.Load() != nil {
		return
	}
	queries := appendQueries()
	byText := make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		stmt, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			_ = closeStatements(byText)
			return
		}
		byText[q] = stmt
	}
	if !s.byText.CompareAndSwap(nil, &byText) {
		_ = closeStatements(byText) // another Append's were kept
	}
}

// in is query's statement in tx: the prepared one when s holds it.
func (s *statements) in(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if s != nil {
		if byText := s.byText.Load(); byText != nil && (*byText)[query] != nil {
			return tx.StmtContext(ctx, (*byText)[query]), nil
		}
	}
	return tx.PrepareContext(ctx, query)
}

// close closes the prepared statements, before their writer closes; no
// Append runs meanwhile.
func (s *statements) close() error {
	if s == nil {
		return nil
	}
	if byText := s.byText.Swap(nil); byText != nil {
		return closeStatements(*byText)
	}
	return nil
}

func closeStatements(byText map[string]*sql.Stmt) error {
	var errs []error
	for _, stmt := range byText {
		errs = append(errs, stmt.Close())
	}
	return errors.Join(errs...)
}
