package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers DriverName
)

// DriverName is modernc.org/sqlite's database/sql driver.
const DriverName = "sqlite"

// Options are the connection settings of a file (the SQLite store's
// Config). Zero IdleTime keeps connections open.
type Options struct {
	// Readers is how many read connections the file may hold open.
	Readers int
	// BusyTimeout bounds SQLite's wait for a lock.
	BusyTimeout time.Duration
	// WALBytes bounds the file's WAL after each checkpoint.
	WALBytes int64
	// WriterCacheBytes is the page cache of the writer connection.
	WriterCacheBytes int64
	// IdleTime closes a connection unused for this long.
	IdleTime time.Duration
}

// DB is one open database file: one writer connection (BEGIN IMMEDIATE)
// and a pool of read-only ones. WAL lets readers read while the writer
// writes; read connections run with query_only, so no read ever needs the
// write lock.
type DB struct {
	Path  string
	Write *sql.DB
	Read  *sql.DB
}

// Open opens the file at path, creating it when create is set (or when
// schema's files may be created at any open, as the alert file), and
// brings it to schema's version: created, migrated, or checked to be of
// that kind and version. Anything else is an error naming the file. Close
// releases it.
func Open(ctx context.Context, path string, o Options, schema Schema, create bool) (*DB, error) {
	if create {
		if err := CreatePrivate(path); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", path, err)
		}
	}
	if err := KeepPrivate(path); err != nil {
		return nil, err
	}
	db, err := Reopen(path, o)
	if err != nil {
		return nil, err
	}
	if err := db.prepare(ctx, schema); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return db, nil
}

// Reopen opens path again, a file Open has brought to its schema's version
// in this process: its connections open when first used, with no check.
// A file that is no longer there is an error of the first use
// (SQLITE_CANTOPEN): no connection ever creates one (mode=rw), so a file
// deleted under the store is not made again empty, nor with SQLite's
// mode 0644.
func Reopen(path string, o Options) (*DB, error) {
	db := &DB{Path: path}
	var err error
	if db.Write, err = sql.Open(DriverName, dsn(path, o, true)); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	db.Write.SetMaxOpenConns(1)
	db.Write.SetConnMaxIdleTime(o.IdleTime)
	if db.Read, err = sql.Open(DriverName, dsn(path, o, false)); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: %s: %w", path, err), db.Close())
	}
	db.Read.SetMaxOpenConns(o.Readers)
	db.Read.SetMaxIdleConns(o.Readers)
	db.Read.SetConnMaxIdleTime(o.IdleTime)
	return db, nil
}

// dsn is the connection string of path with SQLite's settings: durable
// commits in WAL mode for the writer, query_only for readers.
func dsn(path string, o Options, writer bool) string {
	q := url.Values{}
	q.Set("mode", "rw") // never create it: CreatePrivate does, 0600
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	if writer {
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "synchronous(FULL)")
		// What a page frees or rebuilds is zeroed, so that a message erased
		// later leaves no copy in a page's free space (SecureTx).
		q.Add("_pragma", "secure_delete(FAST)")
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", o.WALBytes))
		// A batch's dirty pages fit in the writer's cache, so they are written
		// once, at commit, rather than spilled midway; and the indexes' inner
		// pages stay cached between batches (cache_size in KiB when negative).
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", o.WriterCacheBytes>>10))
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Error wraps err from what was done to the file, naming it; SQLite finding
// the file corrupt is a *FileFault.
func (db *DB) Error(ctx context.Context, what string, err error) error {
	if Corrupt(err) {
		return &FileFault{Path: db.Path, Problem: "is corrupt", Err: fmt.Errorf("%s: %w", what, err)}
	}
	return Error(ctx, fmt.Sprintf("%s: %s", db.Path, what), err)
}

// QuickCheck runs SQLite's PRAGMA quick_check on a read connection of the
// file (every page read, the b-trees' structure checked, not the indexes
// against their tables): a *FileFault when it finds the file corrupt.
func (db *DB) QuickCheck(ctx context.Context) error {
	rows, err := db.Read.QueryContext(ctx, "PRAGMA quick_check(3)")
	if err != nil {
		return db.Error(ctx, "quick_check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return db.Error(ctx, "quick_check", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return db.Error(ctx, "quick_check", err)
	}
	if len(problems) > 0 {
		return &FileFault{Path: db.Path, Problem: "is corrupt", Err: fmt.Errorf("quick_check: %s", strings.Join(problems, "; "))}
	}
	return nil
}

// Close closes both pools, waiting for their last connections (CloseDBs).
func (db *DB) Close() error {
	return CloseDBs(db.Read, db.Write)
}

// CreatePrivate makes path an empty file readable by its owner only, unless
// it exists: SQLite would create it 0644, and its -wal and -shm take the
// database file's mode, so the messages stay the owner's even if the data
// directory's 0700 is loosened.
func CreatePrivate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// KeepPrivate takes group and other permissions off an existing file and
// its -wal and -shm (files an older reqlog let SQLite create 0644). A file
// that does not exist is the caller's error, as os.Stat's.
func KeepPrivate(path string) error {
	for i, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if err != nil {
			if i > 0 && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("sqlite: %s: %w", p, err)
			}
		}
	}
	return nil
}

// CloseDBs closes the pools and waits, up to closeWait, for their last
// connections: database/sql closes a connection still in use (a query
// cancelled an instant before, whose rows a driver goroutine releases) only
// when it is released, and until then SQLite keeps the file's -wal and -shm.
// Waiting lets Close mean that the files are released.
func CloseDBs(dbs ...*sql.DB) error {
	var errs []error
	for _, db := range dbs {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	deadline := time.Now().Add(closeWait)
	for _, db := range dbs {
		for db != nil && db.Stats().OpenConnections > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// closeWait bounds how long Close waits for connections released late.
const closeWait = 5 * time.Second
