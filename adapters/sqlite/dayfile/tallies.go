package dayfile

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// A tally is an exchange an ingest rule dropped (domain.Message.Tally): one
// row of the table tallies (schema version 5), its metadata alone, counted in
// the rollups with the messages of its transaction and read by the
// statistics alone (TallyColumns). An id is a message's or a tally's in a
// file, never both: whichever was appended first stays, as a retry of
// either leaves the stored one.

// TallyColumns are the columns the statistics read of a tally, in
// TallyOf's order; every column a ReadableWhere names is one of the
// table's.
const TallyColumns = `created, status, duration, name, path, route, method, ip_address`

// tallyWriter writes one transaction's tallies.
type tallyWriter struct {
	tx     *sql.Tx
	insert *sql.Stmt
	// any is false while the file is known to hold no tally: a message's id
	// then needs no look-up.
	any bool
}

func newTallyWriter(ctx context.Context, tx *sql.Tx) (*tallyWriter, error) {
	t := &tallyWriter{tx: tx}
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tallies)`).Scan(&t.any); err != nil {
		return nil, err
	}
	return t, nil
}

// add writes the tally m unless its id is stored, as a message or a tally,
// and reports whether it did.
func (t *tallyWriter) add(ctx context.Context, m domain.Message) (bool, error) {
	if t.insert == nil {
		var err error
		t.insert, err = t.tx.PrepareContext(ctx, `INSERT INTO tallies(account, domain, created, id, name, ip_address, method, path,
			route, status, duration, visible, expires)
			SELECT ?,?,?,?,?,?,?,?,?,?,?,?,? WHERE NOT EXISTS (SELECT 1 FROM messages WHERE id = ?) ON CONFLICT DO NOTHING`)
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
	t.any = t.any || n > 0
	return n > 0, nil
}

// holds reports whether id is a tally's.
func (t *tallyWriter) holds(ctx context.Context, id string) (bool, error) {
	if !t.any {
		return false, nil
	}
	var held bool
	err := t.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tallies WHERE id = ?)`, id).Scan(&held)
	return held, err
}

func (t *tallyWriter) close() {
	if t.insert != nil {
		t.insert.Close()
	}
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
