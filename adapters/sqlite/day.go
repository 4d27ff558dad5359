package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Day files are named after the UTC day of their messages' CreatedAt.
const (
	dayPrefix = "messages-"
	daySuffix = ".db"
	dayLayout = "2006-01-02"
)

// applicationID marks a database file as one of reqlog's day files
// (PRAGMA application_id, "rqlg"), so a foreign SQLite file in the data
// directory is refused instead of read.
const applicationID = 0x72716c67

// dayName is the file name of the day holding messages created at t.
func dayName(t time.Time) string { return dayPrefix + t.UTC().Format(dayLayout) + daySuffix }

// parseDayName returns the day a file name stands for.
func parseDayName(name string) (time.Time, bool) {
	date, ok := strings.CutPrefix(name, dayPrefix)
	if !ok {
		return time.Time{}, false
	}
	if date, ok = strings.CutSuffix(date, daySuffix); !ok {
		return time.Time{}, false
	}
	day, err := time.Parse(dayLayout, date)
	return day, err == nil
}

// dayOf is the UTC midnight starting t's day.
func dayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// schema creates the tables of a day file. Times are Unix microseconds;
// duration is microseconds, NULL without one; headers are JSON objects of
// name -> values; route is the route template, NULL without one (version 4,
// added last so that a migrated file has the same columns). words is the word index (words.go): contentless, keyed by
// the message's seq, without positions. day holds one row: how many
// messages the file has and the latest ExpiresAt among them, so that
// retention decides to drop the file without reading it.
const schema = `
CREATE TABLE messages (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL,
	reference TEXT NOT NULL,
	account TEXT NOT NULL,
	domain TEXT NOT NULL,
	name TEXT NOT NULL,
	ip_address TEXT NOT NULL,
	method TEXT NOT NULL,
	path TEXT NOT NULL,
	status INTEGER NOT NULL,
	duration INTEGER,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	visible INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	request_header TEXT NOT NULL,
	request_body TEXT NOT NULL,
	request_type TEXT NOT NULL,
	request_size INTEGER NOT NULL,
	response_header TEXT NOT NULL,
	response_body TEXT NOT NULL,
	response_type TEXT NOT NULL,
	response_size INTEGER NOT NULL,
	route TEXT
);
CREATE UNIQUE INDEX messages_id ON messages(id);
CREATE INDEX messages_reference ON messages(reference);
CREATE INDEX messages_scope ON messages(account, domain, created, id);
CREATE INDEX messages_name ON messages(account, domain, name, created, id);
` + statsIndex + `;
CREATE VIRTUAL TABLE words USING fts5(w, content='', columnsize=0, detail=none, tokenize='ascii');
` + rollupsTable + `;
CREATE TABLE day (messages INTEGER NOT NULL, max_expires INTEGER NOT NULL);
INSERT INTO day VALUES (0, 0);
`

// statsIndex holds what the statistics read of each message, so that they
// scan an index rather than the rows (version 4: with the route; version 2
// made it without, statsIndexV2).
const (
	statsIndex   = `CREATE INDEX messages_stats ON messages(account, domain, created, visible, expires, status, duration, name, path, route)`
	statsIndexV2 = `CREATE INDEX messages_stats ON messages(account, domain, created, visible, expires, status, duration, name, path)`
)

// migrations[v] takes a day file from schema version v to v+1, inside the
// migration's transaction.
var migrations = map[int]func(ctx context.Context, tx *sql.Tx) error{
	1: func(ctx context.Context, tx *sql.Tx) error { _, err := tx.ExecContext(ctx, statsIndexV2); return err },
	2: addRollupsTable,
	3: addRouteColumn,
}

// addRouteColumn is the migration to schema version 4: the route template
// column, NULL for the messages already stored (sent before routes were
// kept), and the statistics index rebuilt with it. The rollups need nothing:
// those written before read as minutes without routes (stats.Rollup's
// encoding version 1), which they are.
func addRouteColumn(ctx context.Context, tx *sql.Tx) error {
	for _, stmt := range []string{`ALTER TABLE messages ADD COLUMN route TEXT`, `DROP INDEX messages_stats`, statsIndex} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// dayFile is one day's database: one writer connection (BEGIN IMMEDIATE) and
// a pool of read-only ones. WAL lets readers read while the writer writes;
// read connections run with query_only, so no read ever needs the write lock.
type dayFile struct {
	day   time.Time
	path  string
	write *sql.DB
	read  *sql.DB

	// use is held shared by every call using the file, exclusively by the
	// purge that drops it; dropped is set then, under it.
	use     sync.RWMutex
	dropped bool

	// versions says which hours a write touched since a kept hour was read.
	versions hourVersions
}

// dsn is the connection string of path with SQLite's settings: durable
// commits in WAL mode for the writer, query_only for readers.
func dsn(path string, cfg Config, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	if writer {
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", cfg.WALBytes))
		// A batch's dirty pages fit in the writer's cache, so they are written
		// once, at commit, rather than spilled midway; and the indexes' inner
		// pages stay cached between batches (cache_size in KiB when negative).
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", cfg.WriterCacheBytes>>10))
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// openDay opens the day file at path, creating it (and its schema) when
// create is set. An existing file must be one of reqlog's of this schema
// version: anything else is an error naming the file.
func openDay(ctx context.Context, cfg Config, day time.Time, create bool) (*dayFile, error) {
	path := filepath.Join(cfg.Dir, dayName(day))
	if create {
		if err := createPrivate(path); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", path, err)
		}
	} else if err := keepPrivate(path); err != nil {
		return nil, err
	}
	write, err := sql.Open(driverName, dsn(path, cfg, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(cfg.IdleTime)
	d := &dayFile{day: day, path: path, write: write}
	if err := d.prepare(ctx); err != nil {
		_ = write.Close()
		return nil, err
	}
	d.read, err = sql.Open(driverName, dsn(path, cfg, false))
	if err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	d.read.SetMaxOpenConns(cfg.Readers)
	d.read.SetMaxIdleConns(cfg.Readers)
	d.read.SetConnMaxIdleTime(cfg.IdleTime)
	return d, nil
}

// createPrivate makes path an empty file readable by its owner only, unless
// it exists: SQLite would create it 0644, and its -wal and -shm take the
// database file's mode, so the messages stay the owner's even if the data
// directory's 0700 is loosened.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// keepPrivate takes group and other permissions off an existing day file and
// its -wal and -shm (files an older reqlog let SQLite create 0644). A file
// that does not exist is the caller's error, as os.Stat's.
func keepPrivate(path string) error {
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

// prepare sets WAL mode and creates the schema of a new file, or checks that
// an existing one is a day file of this schema version.
func (d *dayFile) prepare(ctx context.Context) error {
	conn, err := d.write.Conn(ctx)
	if err != nil {
		return d.fileError(ctx, "open", err)
	}
	defer conn.Close()
	var app, version int
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return d.fileError(ctx, "read its header", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return d.fileError(ctx, "read its header", err)
	}
	if app == 0 && version == 0 {
		var tables int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return d.fileError(ctx, "read its schema", err)
		}
		if tables == 0 {
			return d.create(ctx, conn)
		}
	}
	switch {
	case app != applicationID:
		return fmt.Errorf("sqlite: %s is not a reqlog day file (application_id %#x): move it out of the data directory", d.path, app)
	case version > schemaVersion:
		return fmt.Errorf("sqlite: %s has schema version %d, newer than this reqlog's %d: run a newer reqlog", d.path, version, schemaVersion)
	case version < schemaVersion:
		return d.migrate(ctx, conn, version)
	}
	return d.setWAL(ctx, conn)
}

// setWAL puts the file in WAL mode (kept in the file; only the writer sets it).
func (d *dayFile) setWAL(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil || mode != "wal" {
		return d.fileError(ctx, "set WAL mode", errors.Join(err, fmt.Errorf("journal mode %q", mode)))
	}
	return nil
}

// create makes a new day file: WAL mode, then the schema and the marks of a
// day file in one transaction.
func (d *dayFile) create(ctx context.Context, conn *sql.Conn) error {
	if err := d.setWAL(ctx, conn); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return d.fileError(ctx, "create", err)
	}
	defer tx.Rollback()
	stmts := schema + fmt.Sprintf("PRAGMA application_id=%d; PRAGMA user_version=%d;", applicationID, schemaVersion)
	if _, err := tx.ExecContext(ctx, stmts); err != nil {
		return d.fileError(ctx, "create its schema", err)
	}
	if err := tx.Commit(); err != nil {
		return d.fileError(ctx, "create its schema", err)
	}
	return nil
}

// migrate brings a day file of an older schema version to this one, in one
// transaction: a failure leaves it as it was.
func (d *dayFile) migrate(ctx context.Context, conn *sql.Conn, version int) error {
	if err := d.setWAL(ctx, conn); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return d.fileError(ctx, "migrate", err)
	}
	defer tx.Rollback()
	for v := version; v < schemaVersion; v++ {
		step, ok := migrations[v]
		if !ok {
			return fmt.Errorf("sqlite: %s has schema version %d, which this reqlog cannot migrate", d.path, version)
		}
		if err := step(ctx, tx); err != nil {
			return d.fileError(ctx, fmt.Sprintf("migrate from schema version %d", v), err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version=%d", schemaVersion)); err != nil {
		return d.fileError(ctx, "migrate", err)
	}
	if err := tx.Commit(); err != nil {
		return d.fileError(ctx, "migrate", err)
	}
	return nil
}

func (d *dayFile) fileError(ctx context.Context, what string, err error) error {
	return storeError(ctx, fmt.Sprintf("%s: %s", d.path, what), err)
}

// close closes both pools.
func (d *dayFile) close() error {
	return closeDBs(d.read, d.write)
}

// closeDBs closes the pools and waits, up to closeWait, for their last
// connections: database/sql closes a connection still in use (a query
// cancelled an instant before, whose rows a driver goroutine releases) only
// when it is released, and until then SQLite keeps the file's -wal and -shm.
// Waiting lets Close mean that the files are released.
func closeDBs(dbs ...*sql.DB) error {
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
