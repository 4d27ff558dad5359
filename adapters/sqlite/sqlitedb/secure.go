package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// Secure removal, for erasures: what a transaction deletes is overwritten
// with zeros (SecureTx), and the WAL, which still holds the pages as they
// were, is checkpointed into the file and truncated (TruncateWAL).

// SecureTx runs fn in a write transaction on one of db's connections (the
// writer: BEGIN IMMEDIATE) with PRAGMA secure_delete on, and sets it back
// to FAST after (the writer's setting, dsn): deleted rows and freed pages,
// overflow pages too, are overwritten in the file and in the pages the WAL
// writes, not left in free space. FAST, on every other write, zeroes what
// a page frees or rebuilds without the extra I/O of zeroing freed pages.
func SecureTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
		return err
	}
	defer func() {
		// With a context of its own: the connection goes back to the pool
		// either way, and must not keep the pragma.
		if _, offErr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA secure_delete = FAST"); offErr != nil {
			// ErrBadConn: database/sql discards the connection.
			err = errors.Join(err, offErr, conn.Raw(func(any) error { return driver.ErrBadConn }))
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// TruncateWAL checkpoints db's WAL into the file and truncates it to zero
// bytes (PRAGMA wal_checkpoint(TRUNCATE)), so that no page as it was before
// the last writes remains in it. A reader holding an older snapshot makes
// the checkpoint busy; it is tried again until within, then is an error.
func TruncateWAL(ctx context.Context, db *sql.DB, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var busy, logFrames, checkpointed int
		if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
			return err
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the WAL could not be truncated within %s: readers hold it", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
