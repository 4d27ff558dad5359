package dayfile

import (
	"context"
	"embed"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
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

// DayOf is the UTC midnight starting t's day: the day of the file that holds
// a message created at t.
func DayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// CeilMicro is t in Unix microseconds, as the files hold times, rounded up.
func CeilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

// daySchemaFiles are the day file's migrations, one file a version.
//
//go:embed schema/day-*.sql
var daySchemaFiles embed.FS

// Version is the day files' schema version this reqlog writes, and the data
// directory's.
func Version() int { return daySchema().Version() }

// daySchema is the day file's kind: its mark and its one ordered list of
// migrations, which a new file runs from the first.
func daySchema() sqlitedb.Schema {
	sql := func(name string) string { return sqlitedb.SQLFile(daySchemaFiles, "schema/"+name) }
	return sqlitedb.Schema{Kind: "day file", ApplicationID: applicationID, Migrations: []sqlitedb.Migration{
		{To: 1, SQL: sql("day-1.sql")},                    // messages, their indexes, the word index, the day's totals
		{To: 2, SQL: sql("day-2.sql")},                    // the statistics index
		{To: 3, SQL: sql("day-3.sql"), Then: fillRollups}, // the rollups, of the messages stored too
		{To: 4, SQL: sql("day-4.sql")},                    // the route column, in the statistics index too
		{To: 5, SQL: sql("day-5.sql")},                    // the rules record column
	}}
}

// File is one day's database file (sqlitedb.DB: one writer connection,
// readers beside it), held by the calls using it (Dir.Acquire, Release).
type File struct {
	*sqlitedb.DB
	// Day is the UTC day of its messages' CreatedAt.
	Day time.Time

	// use is held shared by every call using the file, exclusively by the
	// purge that drops it; dropped is set then, under it.
	use     sync.RWMutex
	dropped bool
}

// openFile opens day's file, creating it when create is set. An existing
// file must be one of reqlog's day files of this schema version or an older
// one, migrated then: anything else is an error naming the file.
func openFile(ctx context.Context, o Options, day time.Time, create bool) (*File, error) {
	db, err := sqlitedb.Open(ctx, filepath.Join(o.Dir, dayName(day)), o.Files, daySchema(), create)
	if err != nil {
		return nil, err
	}
	return &File{DB: db, Day: day}, nil
}
