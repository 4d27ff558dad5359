package dayfile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// A retention rule's messages are kept in their class's day files, apart
// from the policy's (file.go names them), so that the purge drops a class's
// day whole once the class's current retention has passed it, and takes out
// the bodies of its days past its bodies retention (ClearBodies): a class
// shortened since is purged as its rule now says.

// readClass reads the file's retention class, if it has one.
func (f *File) readClass(ctx context.Context, db *sqlitedb.DB) error {
	var (
		class   domain.RetentionClass
		cleared int64
	)
	err := db.Write.QueryRowContext(ctx, `SELECT account, rule, bodies_cleared FROM class`).Scan(&class.Account, &class.Rule, &cleared)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	f.class.Store(&class)
	f.bodiesCleared.Store(cleared)
	return nil
}

// RetentionClass is the class of the file's messages, false for the
// policy's class and a class's file no Append has written yet.
func (f *File) RetentionClass() (domain.RetentionClass, bool) {
	if c := f.class.Load(); c != nil {
		return *c, true
	}
	return domain.RetentionClass{}, false
}

// noteClass records, in an Append's transaction, the class of msgs in a
// class's file that does not know its class yet; it returns it, to keep
// once the transaction commits (nil: nothing to keep).
func (f *File) noteClass(ctx context.Context, tx *sql.Tx, msgs []domain.Message) (*domain.RetentionClass, error) {
	if f.Class == "" || f.class.Load() != nil || len(msgs) == 0 {
		return nil, nil
	}
	class := msgs[0].RetentionClass()
	if _, err := tx.ExecContext(ctx, `INSERT INTO class(account, rule) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM class)`,
		class.Account, class.Rule); err != nil {
		return nil, fmt.Errorf("its retention class: %w", err)
	}
	return &class, nil
}

// clearBodiesPage is how many messages ClearBodies rewrites a transaction.
const clearBodiesPage = 500

// ClearBodies takes out the bodies of every message the file holds that it
// has not taken out before (seq past class.bodies_cleared): each page one
// transaction of Rewrite (secure_delete on, the words of the bodies deleted
// from the word index), then the file rebuilt and its WAL truncated
// (Expunge), so that the bodies leave the file's bytes and the space they
// held goes back to the file system. The caller holds the file. It returns
// how many messages it rewrote.
func (f *File) ClearBodies(ctx context.Context) (int64, error) {
	var cleared int64
	total := f.messages.Load() // before: a message appended meanwhile is checked next time
	for {
		rows, err := f.Read.QueryContext(ctx, "SELECT "+MessageColumns+", seq FROM messages WHERE seq > ? ORDER BY seq LIMIT ?",
			f.bodiesCleared.Load(), clearBodiesPage)
		if err != nil {
			return cleared, f.Error(ctx, "clear bodies", err)
		}
		var (
			page []domain.Message
			last int64
		)
		for rows.Next() {
			m, err := ScanMessage(rows, &last)
			if err != nil {
				rows.Close()
				return cleared, f.Error(ctx, "clear bodies", err)
			}
			m.Request.Body, m.Response.Body = "", ""
			page = append(page, m)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return cleared, f.Error(ctx, "clear bodies", err)
		}
		if len(page) == 0 {
			break
		}
		if _, err := f.Rewrite(ctx, page); err != nil {
			return cleared, err
		}
		if _, err := f.Write.ExecContext(ctx, `UPDATE class SET bodies_cleared = ?`, last); err != nil {
			return cleared, f.Error(ctx, "clear bodies", err)
		}
		f.bodiesCleared.Store(last)
		cleared += int64(len(page))
	}
	if cleared > 0 {
		if err := f.Expunge(ctx); err != nil {
			return cleared, err
		}
	}
	f.clearedOf.Store(total)
	return cleared, nil
}

// unclearedBodies reports whether messages may have come into the file
// since ClearBodies last took out their bodies.
func (f *File) unclearedBodies() bool { return f.messages.Load() != f.clearedOf.Load() }
