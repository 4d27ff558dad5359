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

// FreePagesOfDay reads the free pages and the pages of day's policy file.
func (s *Store) FreePagesOfDay(ctx context.Context, day time.Time) (free, pages int64, err error) {
	d, err := s.dir.Acquire(ctx, dayfile.Part{Day: dayfile.DayOf(day)}, false)
	if err != nil || d == nil {
		return 0, 0, errors.Join(err, errors.New("no such day"))
	}
	defer d.Release()
	if err := d.Write.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return 0, 0, err
	}
	err = d.Write.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	return free, pages, err
}

// RebuildDay rebuilds day's policy file: with vacuum, by VACUUM; otherwise
// by zeroing its free pages as an erasure's expunge does (owed first). Its
// WAL is truncated after, as the expunge does.
func (s *Store) RebuildDay(ctx context.Context, day time.Time, vacuum bool) error {
	d, err := s.dir.Acquire(ctx, dayfile.Part{Day: dayfile.DayOf(day)}, false)
	if err != nil || d == nil {
		return errors.Join(err, errors.New("no such day"))
	}
	defer d.Release()
	if vacuum {
		_, err = d.Write.ExecContext(ctx, "VACUUM")
	} else if _, err = d.Write.ExecContext(ctx, "UPDATE erasure SET free_owed = 1"); err == nil {
		err = d.ZeroFreePages(ctx)
	}
	if err != nil {
		return err
	}
	return sqlitedb.TruncateWAL(ctx, d.Write, time.Minute)
}
