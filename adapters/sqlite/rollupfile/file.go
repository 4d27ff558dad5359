// Package rollupfile keeps the SQLite store's rollups past their day files:
// one database file, reqlog-rollups.sqlite, in the data directory. Before
// retention drops a day file, its rollups are copied here in one
// transaction (Keep), so the statistics of a range whose messages are gone
// still count it (domain.Policy.RollupRetention); they are deleted past
// the rollup retention (Purge).
package rollupfile

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// FileName is the rollups file in the data directory: not a day file (no
// "messages-" prefix, no ".db" suffix), so the message store leaves it
// alone, and under the directory's lock like the day files.
const FileName = "reqlog-rollups.sqlite"

// applicationID marks a database file as reqlog's rollups file (PRAGMA
// application_id, "rqlr").
const applicationID = 0x72716c72

//go:embed schema/rollups-*.sql
var schemaFiles embed.FS

// schema is the rollups file's kind: its mark and its migrations.
func schema() sqlitedb.Schema {
	sql := func(name string) string { return sqlitedb.SQLFile(schemaFiles, "schema/"+name) }
	return sqlitedb.Schema{Kind: "rollups file", ApplicationID: applicationID,
		Migrations: []sqlitedb.Migration{
			{To: 1, SQL: sql("rollups-1.sql")}, // rollups, as a day file's
			{To: 2, SQL: sql("rollups-2.sql")}, // rollups by part
		}}
}

// File is the open rollups file. It is safe for concurrent use.
type File struct {
	db *sqlitedb.DB
	// changes counts the transactions that changed the file since it was
	// opened: the version of its hours (Version).
	changes atomic.Uint64
}

// Open opens (creating if needed) the rollups file in the data directory
// dir, which the caller holds (the message store's lock), with o's
// connection settings: its connections close when idle, as a day file's,
// since it is read only for ranges past the messages' retention. Close
// releases it.
func Open(ctx context.Context, dir string, o sqlitedb.Options) (*File, error) {
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, FileName), o, schema(), true)
	if err != nil {
		return nil, err
	}
	return &File{db: db}, nil
}

// Close closes the file.
func (k *File) Close() error { return k.db.Close() }

// Version is the version of every hour the file holds, as
// ports.RollupSource.RollupHours tells it: an hour's rollups change only
// by Keep and Purge, each of which takes another. Its top bit is set, which
// no day file's version has (daystats), so that an hour read from a day
// file and later from here is read again.
func (k *File) Version() uint64 { return 1<<63 | k.changes.Load() }

// Keep copies every rollup of a day file, read through day (the rollups
// table of schema/day-3.sql), in one transaction: all of them or, on an
// error, none, under the file's part (its retention class's name, "" for
// the policy's: dayfile.Part.Class), beside the rollups of the same
// minutes kept of the day's other parts. A rollup already kept of the part
// is replaced, so keeping a day file again (a purge that stopped between
// Keep and the file's removal) counts nothing twice. It returns how many
// it kept.
func (k *File) Keep(ctx context.Context, day *sql.DB, part string) (int64, error) {
	rows, err := day.QueryContext(ctx, `SELECT account, domain, minute, name, data FROM rollups`)
	if err != nil {
		return 0, fmt.Errorf("reading the rollups to keep: %w", err)
	}
	defer rows.Close()
	tx, err := k.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return 0, k.db.Error(ctx, "keep rollups", err)
	}
	defer tx.Rollback()
	insert, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO rollups(account, domain, minute, name, part, data) VALUES (?,?,?,?,?,?)`)
	if err != nil {
		return 0, k.db.Error(ctx, "keep rollups", err)
	}
	defer insert.Close()
	var (
		kept               int64
		account, dom, name string
		minute             int64
		data               sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&account, &dom, &minute, &name, &data); err != nil {
			return 0, fmt.Errorf("reading the rollups to keep: %w", err)
		}
		if _, err := insert.ExecContext(ctx, account, dom, minute, name, part, []byte(data)); err != nil {
			return 0, k.db.Error(ctx, "keep rollups", err)
		}
		kept++
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reading the rollups to keep: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, k.db.Error(ctx, "keep rollups", err)
	}
	k.changes.Add(1)
	return kept, nil
}

// Purge deletes the rollups of the minutes that end by before, and returns
// how many.
func (k *File) Purge(ctx context.Context, before time.Time) (int64, error) {
	res, err := k.db.Write.ExecContext(ctx, `DELETE FROM rollups WHERE minute + 60 <= ?`, before.Unix())
	if err != nil {
		return 0, k.db.Error(ctx, "purge rollups", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, k.db.Error(ctx, "purge rollups", err)
	}
	if n > 0 {
		k.changes.Add(1)
	}
	return n, nil
}

// Hours calls yield with each hour (Unix seconds) of [from, to) (Unix
// seconds) and part in which scope (name alone when not "") has kept
// rollups, with how many, oldest first, an hour's parts by name.
func (k *File) Hours(ctx context.Context, scope domain.Scope, name string, from, to int64, yield func(hour int64, part string, rollups int64) error) error {
	query, args := k.where(`SELECT minute - minute % 3600, part, count(*) FROM rollups`, scope, name, from-from%3600, to)
	rows, err := k.db.Read.QueryContext(ctx, query+` GROUP BY 1, 2 ORDER BY 1, 2`, args...)
	if err != nil {
		return k.db.Error(ctx, "stats: kept rollup hours", err)
	}
	defer rows.Close()
	var (
		hour, rollups int64
		part          string
	)
	for rows.Next() {
		if err := rows.Scan(&hour, &part, &rollups); err != nil {
			return k.db.Error(ctx, "stats: kept rollup hours", err)
		}
		if err := yield(hour, part, rollups); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return k.db.Error(ctx, "stats: kept rollup hours", err)
	}
	return nil
}

// Each calls yield with the encoded rollup of each minute in [from, to)
// (Unix seconds), application of scope (of name alone when not "") and
// part, by minute, then application, then part: a minute's rollups of one
// application are yielded one after the other, for the caller to merge.
// data is valid until yield returns.
func (k *File) Each(ctx context.Context, scope domain.Scope, name string, from, to int64, yield func(minute int64, name, part string, data []byte) error) error {
	query, args := k.where(`SELECT minute, name, part, data FROM rollups`, scope, name, from, to)
	rows, err := k.db.Read.QueryContext(ctx, query+` ORDER BY minute, name, part`, args...)
	if err != nil {
		return k.db.Error(ctx, "stats: kept rollups", err)
	}
	defer rows.Close()
	var (
		minute    int64
		app, part string
		data      sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&minute, &app, &part, &data); err != nil {
			return k.db.Error(ctx, "stats: kept rollups", err)
		}
		if err := yield(minute, app, part, data); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return k.db.Error(ctx, "stats: kept rollups", err)
	}
	return nil
}

// Holds reports whether scope (name alone when not "") has a kept rollup
// of a minute in [from, to) (Unix seconds).
func (k *File) Holds(ctx context.Context, scope domain.Scope, name string, from, to int64) (bool, error) {
	query, args := k.where(`SELECT 1 FROM rollups`, scope, name, from, to)
	var held bool
	if err := k.db.Read.QueryRowContext(ctx, `SELECT EXISTS (`+query+`)`, args...).Scan(&held); err != nil {
		return false, k.db.Error(ctx, "stats: kept rollups", err)
	}
	return held, nil
}

// where is query narrowed to scope's rollups (of name alone when not "")
// of the minutes in [from, to).
func (k *File) where(query string, scope domain.Scope, name string, from, to int64) (string, []any) {
	query += ` WHERE account = ? AND domain = ? AND minute >= ? AND minute < ?`
	args := []any{scope.Account, scope.Domain, from, to}
	if name != "" {
		query += ` AND name = ?`
		args = append(args, name)
	}
	return query, args
}
