package dayfile

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A tally is an exchange an ingest rule dropped (domain.Message.Tally): one
// row of the table tallies (schema version 8), its metadata alone, counted in
// the rollups with the messages of its transaction and read by the
// statistics alone (TallyColumns); its subject hashes in tally_subjects,
// by which an erasure deletes it (EraseTallies). An id is a message's or a tally's in a
// file, never both: whichever was appended first stays, as a retry of
// either leaves the stored one.

// TallyColumns are the columns the statistics read of a tally, in
// TallyOf's order; every column a ReadableWhere names is one of the
// table's.
const TallyColumns = `created, status, duration, name, path, route, method, ip_address`

// tallyWriter writes one transaction's tallies.
type tallyWriter struct {
	tx       *sql.Tx
	stmts    *statements
	insert   *sql.Stmt
	subjects *sql.Stmt
	lookup   *sql.Stmt // of an id
	// any is false while the file is known to hold no tally: a message's id
	// then needs no look-up.
	any bool
}

func newTallyWriter(ctx context.Context, tx *sql.Tx, stmts *statements) (*tallyWriter, error) {
	t := &tallyWriter{tx: tx, stmts: stmts}
	anyTally, err := stmts.in(ctx, tx, tallyAnyQuery)
	if err != nil {
		return nil, err
	}
	defer anyTally.Close()
	if err := anyTally.QueryRowContext(ctx).Scan(&t.any); err != nil {
		return nil, err
	}
	return t, nil
}

// add writes the tally m unless its id is stored, as a message or a tally,
// and reports whether it did.
func (t *tallyWriter) add(ctx context.Context, m domain.Message) (bool, error) {
	if t.insert == nil {
		var err error
		t.insert, err = t.stmts.in(ctx, t.tx, tallyInsertQuery)
		if err != nil {
			return false, err
		}
	}
	var duration any
	if m.HasDuration {
		duration = m.Duration.Microseconds()
	}
	res, err := t.insert.ExecContext(ctx, m.Account, m.Domain, m.CreatedAt.UnixMicro(), m.ID, m.Name, m.IPAddress, m.Method, m.Path,
		nullRoute(m.Route), m.StatusCode, duration, m.VisibleAt.UnixMicro(), m.ExpiresAt.UnixMicro(), m.ID)
	if err != nil {
		return false, fmt.Errorf("tally %s: %w", m.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	t.any = true
	return true, t.addSubjects(ctx, m)
}

func (t *tallyWriter) addSubjects(ctx context.Context, m domain.Message) error {
	if len(m.Subjects) == 0 {
		return nil
	}
	if t.subjects == nil {
		var err error
		if t.subjects, err = t.stmts.in(ctx, t.tx, tallySubjectQuery); err != nil {
			return err
		}
	}
	for _, h := range m.Subjects {
		if _, err := t.subjects.ExecContext(ctx, h, m.ID); err != nil {
			return fmt.Errorf("tally %s: subjects: %w", m.ID, err)
		}
	}
	return nil
}

// holds reports whether id is a tally's.
func (t *tallyWriter) holds(ctx context.Context, id string) (bool, error) {
	if !t.any {
		return false, nil
	}
	if t.lookup == nil {
		var err error
		if t.lookup, err = t.stmts.in(ctx, t.tx, tallyHoldsQuery); err != nil {
			return false, err
		}
	}
	var held bool
	err := t.lookup.QueryRowContext(ctx, id).Scan(&held)
	return held, err
}

func (t *tallyWriter) close() {
	for _, stmt := range []*sql.Stmt{t.insert, t.subjects, t.lookup} {
		if stmt != nil {
			stmt.Close()
		}
	}
}

// EraseTallies deletes the tallies q selects (its Account, Domain, Hashes
// and CreatedBefore), with their subject index entries, in one transaction
// with secure_delete on, as Erase deletes messages; it returns how many it
// deleted. The rollups keep counting them, as they keep counting erased
// messages.
func (f *File) EraseTallies(ctx context.Context, q ports.SubjectQuery) (int64, error) {
	w := subjectWhere("id IN (SELECT id FROM tally_subjects WHERE hash IN (SELECT value FROM json_each(?)))", []any{jsonList(q.Hashes)}, q)
	var deleted int64
	err := sqlitedb.SecureTx(ctx, f.Write, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM tallies WHERE `+w.String(), w.Args...)
		if err != nil {
			return err
		}
		if deleted, err = res.RowsAffected(); err != nil || deleted == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tally_subjects WHERE id NOT IN (SELECT id FROM tallies)
			AND id IN (SELECT id FROM tally_subjects WHERE hash IN (SELECT value FROM json_each(?)))`, jsonList(q.Hashes)); err != nil {
			return fmt.Errorf("tally subjects: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE day SET messages = messages - ?`, deleted); err != nil {
			return err
		}
		return oweFreePages(ctx, tx)
	})
	if err != nil {
		return 0, f.Error(ctx, "erase tallies", err)
	}
	f.added(-deleted, 0)
	return deleted, nil
}

// TallyOf is the tally of a row of TallyColumns as sqlitedb.EachRow gives
// it: a message of scope without id, headers and bodies, what a filter's
// Matcher and the statistics read.
func TallyOf(scope domain.Scope, row []driver.Value) (domain.Message, error) {
	created, okCreated := row[0].(int64)
	status, okStatus := row[1].(int64)
	if !okCreated || !okStatus {
		return domain.Message{}, fmt.Errorf("a tally holds created %v, status %v: not integers", row[0], row[1])
	}
	m := domain.Message{Account: scope.Account, Domain: scope.Domain, CreatedAt: time.UnixMicro(created).UTC(), StatusCode: int(status),
		Name: sqlitedb.TextOf(row[3]), Path: sqlitedb.TextOf(row[4]), Route: sqlitedb.TextOf(row[5]),
		Method: sqlitedb.TextOf(row[6]), IPAddress: sqlitedb.TextOf(row[7]), Tally: true}
	if duration, ok := row[2].(int64); ok {
		m.Duration, m.HasDuration = time.Duration(duration)*time.Microsecond, true
	}
	return m, nil
}
