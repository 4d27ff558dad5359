package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// Physical removal: a value deleted or replaced in a file is gone from its
// bytes once SecureDelete was on for the change and TruncateWAL has run.

// SecureDelete turns PRAGMA secure_delete on or off on conn: with it on,
// SQLite overwrites with zeros the content it deletes or replaces (cells,
// freed pages), rather than leaving it in free space. It holds for the
// connection, so a caller turns it off again before giving conn back.
func SecureDelete(ctx context.Context, conn *sql.Conn, on bool) error {
	pragma := "PRAGMA secure_delete = OFF"
	if on {
		pragma = "PRAGMA secure_delete = ON"
	}
	_, err := conn.ExecContext(ctx, pragma)
	return err
}

// TruncateWAL checkpoints db's WAL into the file and truncates the WAL to
// nothing (wal_checkpoint(TRUNCATE)), so that neither holds the pages the
// changes before it replaced. A reader in the middle of a read keeps the
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
