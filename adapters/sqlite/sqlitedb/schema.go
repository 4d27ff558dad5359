package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
)

// A Schema is one kind of reqlog's database files: its mark and the one
// ordered list of migrations that makes a file of that kind, a new one from
// nothing (version 0) and an older one from its version.
type Schema struct {
	// Kind names the file in errors: "day file", "alert file".
	Kind string
	// ApplicationID marks a file of this kind (PRAGMA application_id), so
	// that a foreign SQLite file is refused instead of read.
	ApplicationID int32
	// Migrations take a file from version To-1 to To, listed in the order of
	// To from 1; the last one's To is the version this reqlog writes (PRAGMA
	// user_version).
	Migrations []Migration
	// AdoptUnmarked takes a file that has tables but neither mark for one of
	// version 0 instead of refusing it: the alert file, marked only since
	// its version 1.
	AdoptUnmarked bool
	// PageSize is the page size, in bytes, of a file this creates (PRAGMA
	// page_size, a power of two from 512 to 65536); zero keeps SQLite's.
	// A file in WAL mode keeps the page size it was created with.
	PageSize int
}

// A Migration takes a file from version To-1 to To: SQL, then Then if set,
// in the migration's transaction.
type Migration struct {
	To   int
	SQL  string
	Then func(ctx context.Context, tx *sql.Tx) error
}

// Version is the schema version this reqlog writes.
func (s Schema) Version() int {
	if len(s.Migrations) == 0 {
		return 0
	}
	return s.Migrations[len(s.Migrations)-1].To
}

// prepare sets WAL mode and makes a new file of s's kind, migrates an older
// one, or checks that an existing one is of s's kind and version.
func (db *DB) prepare(ctx context.Context, s Schema) error {
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		return db.Error(ctx, "open", err)
	}
	defer conn.Close()
	var app, version int
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return db.Error(ctx, "read its header", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return db.Error(ctx, "read its header", err)
	}
	if app == 0 && version == 0 {
		var tables int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return db.Error(ctx, "read its schema", err)
		}
		if tables == 0 || s.AdoptUnmarked {
			return db.migrate(ctx, conn, s, 0, tables == 0)
		}
	}
	switch {
	case app != int(s.ApplicationID):
		return fmt.Errorf("sqlite: %s is not a reqlog %s (application_id %#x): move it out of the data directory", db.Path, s.Kind, app)
	case version > s.Version():
		return fmt.Errorf("sqlite: %s has schema version %d, newer than this reqlog's %d: run a newer reqlog", db.Path, version, s.Version())
	case version < s.Version():
		return db.migrate(ctx, conn, s, version, false)
	}
	return db.setWAL(ctx, conn)
}

// setWAL puts the file in WAL mode (kept in the file; only the writer sets it).
func (db *DB) setWAL(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil || mode != "wal" {
		return db.Error(ctx, "set WAL mode", errors.Join(err, fmt.Errorf("journal mode %q", mode)))
	}
	return nil
}

// migrate puts the file in WAL mode (a new one with s's page size first),
// then takes it from version to s's (a new file from 0) and marks it, in
// one transaction: a failure leaves the file as it was.
func (db *DB) migrate(ctx context.Context, conn *sql.Conn, s Schema, version int, create bool) error {
	what := "migrate"
	if create {
		what = "create its schema"
		// Before WAL mode and the first table: the one time it takes.
		if s.PageSize > 0 {
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size=%d", s.PageSize)); err != nil {
				return db.Error(ctx, what, err)
			}
		}
	}
	if err := db.setWAL(ctx, conn); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return db.Error(ctx, what, err)
	}
	defer tx.Rollback()
	next := version + 1
	for _, m := range s.Migrations {
		if m.To < next {
			continue
		}
		if m.To > next {
			break
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return db.Error(ctx, fmt.Sprintf("%s from schema version %d", what, m.To-1), err)
		}
		if m.Then != nil {
			if err := m.Then(ctx, tx); err != nil {
				return db.Error(ctx, fmt.Sprintf("%s from schema version %d", what, m.To-1), err)
			}
		}
		next++
	}
	if next <= s.Version() {
		return fmt.Errorf("sqlite: %s has schema version %d, which this reqlog cannot migrate", db.Path, version)
	}
	marks := fmt.Sprintf("PRAGMA application_id=%d; PRAGMA user_version=%d", s.ApplicationID, s.Version())
	if _, err := tx.ExecContext(ctx, marks); err != nil {
		return db.Error(ctx, what, err)
	}
	if err := tx.Commit(); err != nil {
		return db.Error(ctx, what, err)
	}
	return nil
}

// SQLFile is the text of the file name in fsys, a package's embedded
// schema files: a name that is not there is the build's mistake, and
// panics.
func SQLFile(fsys fs.FS, name string) string {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(fmt.Sprintf("sqlitedb: schema file %s: %v", name, err))
	}
	return string(data)
}
