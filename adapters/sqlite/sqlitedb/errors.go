package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

// A FileFault is a file of the store that cannot be used as it is: deleted
// or replaced under the store, or corrupt. It wraps ports.ErrUnavailable
// and its cause, and is a ports.Fault, so the API's 503 and /readyz name
// the file.
type FileFault struct {
	Path string
	// Problem says what is wrong, after the file's name: "is corrupt".
	Problem string
	// Err is the cause, if any.
	Err error
}

func (f *FileFault) Error() string {
	msg := fmt.Sprintf("sqlite: %s %s", f.Path, f.Problem)
	if f.Err != nil {
		msg += ": " + f.Err.Error()
	}
	return msg
}

// Fault names the file by its name alone.
func (f *FileFault) Fault() string { return filepath.Base(f.Path) + " " + f.Problem }

func (f *FileFault) Unwrap() []error {
	if f.Err == nil {
		return []error{ports.ErrUnavailable}
	}
	return []error{ports.ErrUnavailable, f.Err}
}

// Corrupt reports whether err is SQLite finding a file corrupt, or not a
// database at all.
func Corrupt(err error) bool {
	var e *sqlitedrv.Error
	if !errors.As(err, &e) {
		return false
	}
	code := e.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}
