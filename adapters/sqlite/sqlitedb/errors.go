package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reqlog/reqlog/ports"
)

// ErrNoSpace is wrapped (with ports.ErrUnavailable) by writes refused because
// the data directory's file system has less free space than the store's
// Config.MinFreeBytes.
var ErrNoSpace = errors.New("not enough free disk space")

// Error wraps err from op, adding ports.ErrUnavailable when the same
// call may succeed later: a lock (never expected: one writer, WAL), a full
// disk, an I/O error, a file that cannot be opened or written for now. A
// cancelled caller keeps only its context's error.
func Error(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) || errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("sqlite: %s: %w", op, ctx.Err())
	}
	if Transient(err) {
		return fmt.Errorf("sqlite: %s: %w: %w", op, ports.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// Transient is the one classifier of SQLite and file system errors: true
// when the same call may succeed later.
func Transient(err error) bool {
	var e *sqlitedrv.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOMEM:
			return true
		}
		return false
	}
	return errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO) ||
		errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, context.DeadlineExceeded)
}
