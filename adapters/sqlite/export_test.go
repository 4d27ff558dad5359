package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
)

// NewWithoutWordIndex is New for the benchmark that prices the word index:
// the store it opens indexes no message's words (a q then finds nothing).
func NewWithoutWordIndex(ctx context.Context, cfg Config) (*Store, error) {
	s, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.skipWords = true
	return s, nil
}

// NewWithLayout is New writing day files laid out as layout says, for the
// benchmark that measures the layouts.
func NewWithLayout(ctx context.Context, cfg Config, layout dayfile.Layout) (*Store, error) {
	return newWithLayout(ctx, cfg, layout)
}

// WriterSettings reads journal_mode and synchronous on the writer
// connection of day's file, and query_only on a reader's.
func (s *Store) WriterSettings(ctx context.Context, day time.Time) (journal string, synchronous, readerQueryOnly int, err error) {
	d, err := s.dir.Acquire(ctx, dayfile.Part{Day: dayfile.DayOf(day)}, false)
	if err != nil || d == nil {
		return "", 0, 0, errors.Join(err, errors.New("no such day"))
	}
	defer d.Release()
	if err = d.Write.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&journal); err == nil {
		err = d.Write.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&synchronous)
	}
	if err == nil {
		err = d.Read.QueryRowContext(ctx, "PRAGMA query_only").Scan(&readerQueryOnly)
	}
	return journal, synchronous, readerQueryOnly, err
}

// OpenDayFiles is how many day files are open.
func (s *Store) OpenDayFiles() int { return s.dir.OpenFiles() }

// ReadStatsColumns reads the statistics columns of day's messages, through
// rows.Scan or eachRow, and returns how many rows it read.
func (s *Store) ReadStatsColumns(ctx context.Context, day time.Time, raw bool) (int, error) {
	d, err := s.dir.Acquire(ctx, dayfile.Part{Day: dayfile.DayOf(day)}, false)
	if err != nil || d == nil {
		return 0, errors.Join(err, errors.New("no such day"))
	}
	defer d.Release()
	const query = `SELECT seq, created, status, duration, name, path, route FROM messages INDEXED BY messages_stats`
	n := 0
	if raw {
		err := sqlitedb.EachRow(ctx, d.Read, query, nil, func(row []driver.Value) error {
			_, _, _ = sqlitedb.TextOf(row[4]), sqlitedb.TextOf(row[5]), sqlitedb.TextOf(row[6])
			n++
			return nil
		})
		return n, err
	}
	rows, err := d.Read.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq, created, status int64
			duration             sql.NullInt64
			name, path           string
			route                sql.NullString
		)
		if err := rows.Scan(&seq, &created, &status, &duration, &name, &path, &route); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// CloseRollupsFile closes the rollups file under the store, for the test of
// a purge that cannot keep a day file's rollups.
func (s *Store) CloseRollupsFile() error { return s.kept.Close() }
