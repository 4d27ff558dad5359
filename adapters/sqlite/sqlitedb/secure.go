package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// Physical removal, for erasures and re-scrubs: what a change deletes or
// replaces is overwritten with zeros (SecureTx, SecureDelete), and the WAL,
// which still holds the pages as they were, is checkpointed into the file
// and truncated (TruncateWAL).

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
	if err := SecureDelete(ctx, conn, true); err != nil {
		return err
	}
	defer func() {
		// With a context of its own: the connection goes back to the pool
		// either way, and must not keep the pragma.
		if offErr := SecureDelete(context.WithoutCancel(ctx), conn, false); offErr != nil {
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

// SecureDelete turns PRAGMA secure_delete on conn on, or back to FAST, the
// writer's setting (dsn). It holds for the connection, so a caller sets it
// back before giving conn back.
func SecureDelete(ctx context.Context, conn *sql.Conn, on bool) error {
	pragma := "PRAGMA secure_delete = FAST"
	if on {
		pragma = "PRAGMA secure_delete = ON"
	}
	_, err := conn.ExecContext(ctx, pragma)
	return err
}

// TruncateWAL checkpoints db's WAL into the file and truncates it to zero
// bytes (PRAGMA wal_checkpoint(TRUNCATE)), so that no page as it was before
// the last writes remains in it. A reader in the middle of a read keeps the
// checkpoint from finishing: it tries again every few milliseconds, for up
// to wait, then fails wrapping ports.ErrUnavailable.
func TruncateWAL(ctx context.Context, db *sql.DB, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var busy, frames, checkpointed int
		if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &checkpointed); err != nil {
			return err
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("readers kept the WAL from being truncated for %s: %w", wait, ports.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
