package dayfile

import (
	"cmp"
	"context"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// Day files are named after the UTC day of their messages' CreatedAt and,
// for a retention rule's messages, after their class (ClassName):
// messages-2026-11-28.db holds the day's messages kept for the policy's
// retention, messages-2026-11-28.r0f3a9c2e4b7d6a18.db those of one account's
// retention rule, so that each class's days are dropped whole at its own
// retention.
const (
	dayPrefix = "messages-"
	daySuffix = ".db"
	dayLayout = "2006-01-02"
)

// applicationID marks a database file as one of reqlog's day files
// (PRAGMA application_id, "rqlg"), so a foreign SQLite file in the data
// directory is refused instead of read.
const applicationID = 0x72716c67

// A Part is one day file's place: its day and its retention class ("" for
// the policy's; otherwise ClassName of an account's retention rule).
type Part struct {
	Day   time.Time
	Class string
}

// Name is the file's name in the data directory: an erasure's receipt
// counts by it.
func (f *File) Name() string { return dayName(Part{Day: f.Day, Class: f.Class}) }

// PartOf is the part a message is stored in.
func PartOf(m domain.Message) Part {
	return Part{Day: DayOf(m.CreatedAt), Class: ClassName(m.RetentionClass())}
}

// ClassName is the name of class's files (domain.RetentionClass.Tag).
func ClassName(class domain.RetentionClass) string { return class.Tag() }

// dayName is the file name of part.
func dayName(part Part) string {
	name := dayPrefix + part.Day.UTC().Format(dayLayout)
	if part.Class != "" {
		name += "." + part.Class
	}
	return name + daySuffix
}

// parseDayName returns the part a file name stands for.
func parseDayName(name string) (Part, bool) {
	date, ok := strings.CutPrefix(name, dayPrefix)
	if !ok {
		return Part{}, false
	}
	if date, ok = strings.CutSuffix(date, daySuffix); !ok {
		return Part{}, false
	}
	date, class, classed := strings.Cut(date, ".")
	if classed && !isClassName(class) {
		return Part{}, false
	}
	day, err := time.Parse(dayLayout, date)
	return Part{Day: day, Class: class}, err == nil
}

// isClassName reports whether s is a name ClassName makes.
func isClassName(s string) bool {
	rest, ok := strings.CutPrefix(s, "r")
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil && strings.ToLower(rest) == rest
}

// IsDayFile reports whether name is a day file's.
func IsDayFile(name string) bool {
	_, ok := parseDayName(name)
	return ok
}

// DayOf is the UTC midnight starting t's day: the day of the file that holds
// a message created at t.
func DayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// DefaultPageSize is the page size of a new day file: on the load tool's
// traffic, compressed, 16 KiB pages take 6 % less disk than 4 KiB or
// 8 KiB ones, and 32 KiB pages with the dictionary 3 % less than 16 KiB,
// at the same CPU and read speed (docs/benchmarks.md, "Compressed
// exchanges", "Dictionaries"): fewer rows spill into overflow pages, and
// less of each page is left over past its last row.
const DefaultPageSize = 32768

// daySchemaFiles are the day file's migrations, one file a version.
//
//go:embed schema/day-*.sql
var daySchemaFiles embed.FS

// Version is the day files' schema version this reqlog writes, and the data
// directory's.
func Version() int { return daySchema(0).Version() }

// daySchema is the day file's kind: its mark and its one ordered list of
// migrations, which a new file runs from the first, with pageSize (zero:
// DefaultPageSize).
func daySchema(pageSize int) sqlitedb.Schema {
	sql := func(name string) string { return sqlitedb.SQLFile(daySchemaFiles, "schema/"+name) }
	return sqlitedb.Schema{Kind: "day file", ApplicationID: applicationID, PageSize: cmp.Or(pageSize, DefaultPageSize), Migrations: []sqlitedb.Migration{
		{To: 1, SQL: sql("day-1.sql")},                    // messages, their indexes, the word index, the day's totals
		{To: 2, SQL: sql("day-2.sql")},                    // the statistics index
		{To: 3, SQL: sql("day-3.sql"), Then: fillRollups}, // the rollups, of the messages stored too
		{To: 4, SQL: sql("day-4.sql")},                    // the route column, in the statistics index too
		{To: 5, SQL: sql("day-5.sql")},                    // the rules record column
		{To: 6, SQL: sql("day-6.sql")},                    // the subject index
		{To: 7, SQL: sql("day-7.sql")},                    // headers and bodies compressed (content.go)
		{To: 8, SQL: sql("day-8.sql")},                    // the tallies of what ingest rules drop, a message's sample rate
		{To: 9, SQL: sql("day-9.sql")},                    // retention classes: the file's class, a message's bodies' expiry
		{To: 10, SQL: sql("day-10.sql")},                  // the word index's optimize an erasure owes
		{To: 11, SQL: sql("day-11.sql")},                  // the compression dictionary (dictionary.go)
		{To: 12, SQL: sql("day-12.sql")},                  // the free pages an erasure owes zeroed (freepages.go)
		{To: 13, SQL: sql("day-13.sql")},                  // subject hashes as terms of the word index (subjects.go)
	}}
}

// File is one day's database file, and the handle the directory keeps of
// that day while the file exists, open or not. Between Dir.Acquire and
// Release its sqlitedb.DB (one writer connection, readers beside it) is
// open; otherwise the directory may close it (Dir's open-file cache) and
// the next Acquire opens it again. What the purge needs of the day (its
// summary) stays in memory while the file is closed.
type File struct {
	*sqlitedb.DB // nil while the file is closed; set for a holder
	// Day is the UTC day of its messages' CreatedAt, Class their retention
	// class's name (ClassName).
	Day   time.Time
	Class string

	path string
	// use is held shared by every call using the file, exclusively by the
	// purge that drops it and by the cache closing it; dropped is set then,
	// under it.
	use     sync.RWMutex
	dropped bool
	// opening serializes the holders that find the file closed.
	opening sync.Mutex

	// The day's totals (its table day), read when the file opens and
	// added to by each Append: retention decides from them without opening
	// the file.
	messages, maxExpires atomic.Int64
	// class is the retention class of a Class's file (its table class),
	// read when the file opens or written by its first Append; nil until
	// then, and for the policy's class (retention.go).
	class atomic.Pointer[domain.RetentionClass]
	// clearedOf is the day's messages total when ClearBodies last ran to
	// its end (-1: not in this process): while it is the total, no message
	// has come with bodies to take out.
	clearedOf atomic.Int64

	// id is the file's device and inode when it was first opened, held
	// open by identity while the file is: a file deleted or replaced under
	// the store no longer matches it (faults.go).
	id       fileID
	identity *os.File
	// fault is what was found wrong with the file, kept: its writes are
	// refused from then on, and the store's Ping names it.
	fault atomic.Pointer[sqlitedb.FileFault]

	// plain: headers and bodies are written as text (Layout.Plain);
	// noDictionary: compressed without a dictionary (Layout.NoDictionary).
	plain, noDictionary bool
	// dicts are the file's compression dictionaries, read at their first
	// use after it opened (dictionary.go); nil while not read.
	dicts   atomic.Pointer[fileDictionaries]
	dictsMu sync.Mutex

	// stmts are the Append statements prepared on its writer (nil until
	// the first Append after it opened).
	stmts   *statements
	stmtsMu sync.Mutex
	// appends are the Appends waiting for its writer (appendQueue).
	appends appendQueue

	// When a holder last used it (Unix nanoseconds), and, under Dir.mu,
	// whether it is open.
	lastUsed atomic.Int64
	isOpen   bool
}

// packer is what compresses the headers and bodies the file's writes
// store, with its newest dictionary: nil, as text, under Layout.Plain.
func (f *File) packer(ctx context.Context) (*packer, error) {
	if f.plain {
		return nil, nil
	}
	d, err := f.dictionaries(ctx)
	if err != nil {
		return nil, err
	}
	if f.noDictionary {
		return &packer{}, nil
	}
	return &packer{dict: d.byID.newest()}, nil
}

// newFile is the handle of part's file in the data directory dir.
func newFile(dir string, part Part) *File {
	f := &File{Day: part.Day, Class: part.Class, path: filepath.Join(dir, dayName(part))}
	f.clearedOf.Store(-1)
	return f
}

// Part is the file's place.
func (f *File) Part() Part { return Part{Day: f.Day, Class: f.Class} }

// open opens the file the first time in this process, creating it when
// create is set, migrating an older one, and reads its totals. An existing
// file must be one of reqlog's day files of this schema version or an
// older one: anything else is an error naming the file.
func (f *File) open(ctx context.Context, o Options, create bool) error {
	db, err := sqlitedb.Open(ctx, f.path, o.Files, daySchema(o.Layout.PageSize), create)
	if err != nil {
		return err
	}
	if o.Layout.WordConfig != "" {
		if _, err := db.Write.ExecContext(ctx, o.Layout.WordConfig); err != nil {
			return errors.Join(db.Error(ctx, "configure its word index", err), db.Close())
		}
	}
	var messages, maxExpires int64
	if err := db.Write.QueryRowContext(ctx, `SELECT messages, max_expires FROM day`).Scan(&messages, &maxExpires); err != nil {
		return errors.Join(db.Error(ctx, "read its totals", err), db.Close())
	}
	if err := f.readClass(ctx, db); err != nil {
		return errors.Join(db.Error(ctx, "read its retention class", err), db.Close())
	}
	identity, err := os.Open(f.path)
	if err == nil {
		f.id, err = identityOf(identity)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("sqlite: %s: %w", f.path, err), closeIfOpen(identity), db.Close())
	}
	f.messages.Store(messages)
	f.maxExpires.Store(maxExpires)
	f.DB, f.identity, f.plain, f.noDictionary = db, identity, o.Layout.Plain, o.Layout.NoDictionary
	return nil
}

// reopen opens the file again, as open left it: its connections open when
// first used. A file no longer the one open found is a fault. The caller
// holds f.opening, or f.use exclusively.
func (f *File) reopen(o Options) error {
	identity, err := os.Open(f.path)
	if err != nil {
		return f.moved(err)
	}
	if id, err := identityOf(identity); err != nil || id != f.id {
		return errors.Join(f.moved(err), identity.Close())
	}
	db, err := sqlitedb.Reopen(f.path, o.Files)
	if err != nil {
		return errors.Join(err, identity.Close())
	}
	f.DB, f.identity = db, identity
	return nil
}

// close closes the file's connections; the handle stays. The caller holds
// f.use exclusively (or is the only user).
func (f *File) close() error {
	if f.DB == nil {
		return nil
	}
	f.stmtsMu.Lock()
	stmtsErr := f.stmts.close()
	f.stmts = nil
	f.stmtsMu.Unlock()
	err := errors.Join(stmtsErr, f.DB.Close(), f.identity.Close())
	f.DB, f.identity = nil, nil
	f.dicts.Store(nil) // their codecs' memory goes with the file's
	return err
}

// closeIfOpen closes f unless it is nil.
func closeIfOpen(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}

// added adds a committed transaction's new messages to the totals.
func (f *File) added(messages, maxExpires int64) {
	f.messages.Add(messages)
	for {
		old := f.maxExpires.Load()
		if maxExpires <= old || f.maxExpires.CompareAndSwap(old, maxExpires) {
			return
		}
	}
}

// appendStatements are the Append statements prepared on the file's
// writer, prepared now if they are not (statements.go).
func (f *File) appendStatements(ctx context.Context) *statements {
	f.stmtsMu.Lock()
	if f.stmts == nil || f.stmts.db != f.Write {
		f.stmts = &statements{db: f.Write}
	}
	s := f.stmts
	f.stmtsMu.Unlock()
	s.prepare(ctx)
	return s
}
