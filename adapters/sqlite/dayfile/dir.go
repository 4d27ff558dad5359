package dayfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Options configure a data directory.
type Options struct {
	// Dir is the directory.
	Dir string
	// MinFreeBytes: CheckSpace fails while the directory's file system has
	// less free space than this; not at all when it is not positive.
	MinFreeBytes int64
	// Files are the connection settings of each day file; a file unused
	// for Files.IdleTime closes (zero: only MaxOpen closes files).
	Files sqlitedb.Options
	// MaxOpen is how many day files stay open once their users are done:
	// past it, the least recently used close (zero: no bound). A file in use
	// is never closed under its user, so a call holding more (a statistics
	// range is read one day at a time, so none does) goes past it for its
	// duration.
	MaxOpen int
	// CheckDays is how many of the newest day files are read whole (PRAGMA
	// quick_check) once the directory is open, in the background: a corrupt
	// one is a fault (faults.go), and Ping fails until they are checked.
	CheckDays int
	// Layout is how new rows and files are laid out; the zero Layout is
	// the store's.
	Layout Layout
}

// Layout is how a day file lays out what it stores: set only by the
// benchmark that measures the choices against each other
// (BenchmarkCompression). Every layout reads every other's files.
type Layout struct {
	// PageSize of a new file, in bytes; zero means DefaultPageSize.
	PageSize int
	// Plain stores headers and bodies as text (content NULL), as before
	// schema version 7.
	Plain bool
	// NoDictionary compresses them without a dictionary (codingZstd), as
	// before schema version 11.
	NoDictionary bool
	// WordConfig is run on each file opened: FTS5 settings of the word
	// index ("INSERT INTO words(words, rank) VALUES('automerge', 8)"),
	// which the file keeps.
	WordConfig string
}

// Dir is an open data directory: its lock held, a handle for each of its
// day files, the recently used ones open (cache.go). It is safe for
// concurrent use. The zero Dir is a closed one: it holds no day and
// creates none.
type Dir struct {
	opts Options

	mu     sync.Mutex
	lock   *dirLock // nil once closed
	days   map[Part]*File
	opened []*File // the files open, in no order

	stopJanitor chan struct{} // closed by Close; nil without a janitor
	janitorDone chan struct{}

	checking      atomic.Pointer[string] // the day file being checked; nil once done
	stopChecks    context.CancelFunc     // nil without checks
	checksStopped chan struct{}
}

// Open opens (creating if needed) the data directory and checks every day
// file in it, migrating older ones, each opened and closed again: the
// files open later, when used. Any file it cannot use is an error naming
// the file; nothing is reset. Close releases the files and the directory's
// lock.
func Open(ctx context.Context, o Options) (*Dir, error) {
	if info, err := os.Stat(o.Dir); err == nil && !info.IsDir() {
		return nil, fmt.Errorf("sqlite: data directory %s is not a directory", o.Dir)
	}
	lock, err := lockDir(o.Dir)
	if err != nil {
		return nil, err
	}
	d := &Dir{opts: o, lock: lock, days: map[Part]*File{}}
	if err := d.openDays(ctx); err != nil {
		return nil, errors.Join(err, d.Close())
	}
	d.startJanitor()
	d.startChecks()
	return d, nil
}

// openDays checks every day file of the directory, one at a time (opened,
// migrated if older, its totals read, closed), then records the
// directory's version if it was older.
func (d *Dir) openDays(ctx context.Context) error {
	days, older, err := readMeta(d.opts.Dir)
	if err != nil {
		return err
	}
	for _, part := range days {
		f := newFile(d.opts.Dir, part)
		if err := f.open(ctx, d.opts, false); err != nil {
			return err
		}
		if err := f.close(); err != nil {
			return fmt.Errorf("sqlite: closing %s: %w", f.path, err)
		}
		d.days[part] = f
	}
	if older {
		return writeMeta(d.opts.Dir)
	}
	return nil
}

// Close closes every day file and releases the directory, once the calls
// holding files have released them.
func (d *Dir) Close() error {
	d.stopTheChecks()
	d.stopTheJanitor()
	d.mu.Lock()
	files, lock := d.days, d.lock
	d.days, d.opened, d.lock = map[Part]*File{}, nil, nil // create refuses from here on
	d.mu.Unlock()
	var errs []error
	for _, f := range files {
		f.use.Lock()
		errs = append(errs, f.close())
		f.dropped = true
		f.use.Unlock()
	}
	if lock != nil {
		errs = append(errs, lock.release())
	}
	return errors.Join(errs...)
}

// Path is the directory.
func (d *Dir) Path() string { return d.opts.Dir }

// Len is how many day files the directory holds.
func (d *Dir) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.days)
}

// CheckSpace fails with sqlitedb.ErrNoSpace (and ports.ErrUnavailable) when
// the directory's file system has less than Options.MinFreeBytes free.
func (d *Dir) CheckSpace(ctx context.Context, op string) error {
	free, err := freeBytes(d.opts.Dir)
	if err != nil {
		return sqlitedb.Error(ctx, op, fmt.Errorf("data directory %s: %w", d.opts.Dir, errors.Join(err, ports.ErrUnavailable)))
	}
	if d.opts.MinFreeBytes > 0 && free < d.opts.MinFreeBytes {
		return sqlitedb.Error(ctx, op, fmt.Errorf("data directory %s has %d bytes free, less than %d: %w",
			d.opts.Dir, free, d.opts.MinFreeBytes, sqlitedb.ErrNoSpace))
	}
	return nil
}

// Range is the first and last day f's range can hold messages of (zero:
// unbounded), narrowed to the cursor's day.
func Range(f domain.Filter, after *domain.Cursor) (first, last time.Time) {
	if !f.From.IsZero() {
		first = DayOf(f.From)
	}
	if !f.To.IsZero() {
		last = DayOf(f.To.Add(-time.Nanosecond))
	}
	if after != nil && (last.IsZero() || DayOf(after.CreatedAt).Before(last)) {
		last = DayOf(after.CreatedAt)
	}
	return first, last
}

// NewestFirst lists the parts present of the days from last down to first
// (both included; a zero bound is unbounded), newest day first, a day's
// classes by name (the policy's first).
func (d *Dir) NewestFirst(first, last time.Time) []Part {
	d.mu.Lock()
	defer d.mu.Unlock()
	parts := make([]Part, 0, len(d.days))
	for part := range d.days {
		if (first.IsZero() || !part.Day.Before(first)) && (last.IsZero() || !part.Day.After(last)) {
			parts = append(parts, part)
		}
	}
	slices.SortFunc(parts, func(a, b Part) int {
		if c := b.Day.Compare(a.Day); c != 0 {
			return c
		}
		return strings.Compare(a.Class, b.Class)
	})
	return parts
}

// OfDay splits parts, as NewestFirst lists them, into the runs of one day.
func OfDay(parts []Part) [][]Part {
	var days [][]Part
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].Day.Equal(parts[i].Day) {
			j++
		}
		days = append(days, parts[i:j])
		i = j
	}
	return days
}

// The data directory holds, besides the day files and their -wal and -shm
// companions:
//   - lockName, locked with flock(2) for as long as a store has the directory
//     open: a second process refuses to start, and the kernel releases the
//     lock of a process that dies, even by kill -9;
//   - metaName, the schema version of the directory, written atomically.
//
// Other files are left alone, except that a file named like a database
// (*.db, messages-*) that is not a day file is refused: reqlog would not
// read it, and it may be one renamed by mistake.
const (
	lockName = "reqlog.lock"
	metaName = "reqlog-store.json"
	// storeKind marks the metadata file as this store's.
	storeKind = "reqlog-sqlite"
)

// meta is the content of metaName.
type meta struct {
	Store         string `json:"store"`
	SchemaVersion int    `json:"schema_version"`
}

// dirLock is the flock'd lock file of an open data directory.
type dirLock struct{ f *os.File }

// lockDir creates dir if needed and takes its lock, or says which process
// holds it.
func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: data directory %s: lock file: %w", dir, err)
	}
	if err := lockFile(f); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("sqlite: data directory %s is in use by another reqlog (pid %s): "+
				"one process per data directory", dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("sqlite: data directory %s: locking %s: %w", dir, path, err)
	}
	// The holder's pid, for the message above; best effort.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// Lock takes the lock of the data directory dir (created 0700 if needed)
// as a store does, for a tool that must not run beside one (a restore):
// an error names the process holding it. The returned func releases it.
func Lock(dir string) (release func() error, err error) {
	l, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

// Housekeeping reports whether a file name in a data directory is no
// data of the store's: its lock, or a -wal, -shm or -journal file of
// SQLite's beside a database.
func Housekeeping(name string) bool {
	return name == lockName || strings.HasSuffix(name, "-wal") || strings.HasSuffix(name, "-shm") || strings.HasSuffix(name, "-journal")
}

// errLocked: another open file description holds the lock.
var errLocked = errors.New("locked")

func (l *dirLock) release() error {
	return l.f.Close() // closing the descriptor releases the flock
}

// readMeta checks the directory's schema version, writing it into a new
// directory, and lists the days present. A directory of an older version is
// migrated by openFile, file by file, and its version written afterwards
// (writeMeta); a newer one is refused.
func readMeta(dir string) (days []Part, older bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: data directory %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if part, ok := parseDayName(name); ok {
			if !e.Type().IsRegular() {
				return nil, false, fmt.Errorf("sqlite: %s is not a regular file", filepath.Join(dir, name))
			}
			days = append(days, part)
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "-wal"), "-shm"), "-journal")
		if _, ok := parseDayName(base); ok {
			continue
		}
		if strings.HasSuffix(name, daySuffix) || strings.HasPrefix(name, dayPrefix) {
			return nil, false, fmt.Errorf("sqlite: %s is not a day file of reqlog (%syyyy-mm-dd[.class]%s): move it out of the data directory",
				filepath.Join(dir, name), dayPrefix, daySuffix)
		}
	}
	slices.SortFunc(days, func(a, b Part) int { return a.Day.Compare(b.Day) })

	path := filepath.Join(dir, metaName)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && len(days) == 0:
		return days, false, writeMeta(dir)
	case errors.Is(err, os.ErrNotExist):
		return nil, false, fmt.Errorf("sqlite: %s is missing but the directory holds day files: "+
			"it is not a data directory reqlog wrote, or the file was deleted", path)
	case err != nil:
		return nil, false, fmt.Errorf("sqlite: %w", err)
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil || m.Store != storeKind || m.SchemaVersion < 1 {
		return nil, false, fmt.Errorf("sqlite: %s is not reqlog's metadata file (want {\"store\":%q,\"schema_version\":n})", path, storeKind)
	}
	if m.SchemaVersion > Version() {
		return nil, false, fmt.Errorf("sqlite: %s: the data directory has schema version %d, newer than this reqlog's %d: run a newer reqlog",
			path, m.SchemaVersion, Version())
	}
	return days, m.SchemaVersion < Version(), nil
}

// writeMeta records this schema version: a new file written, synced and
// renamed over the old one, then the directory synced.
func writeMeta(dir string) error {
	data, err := json.Marshal(meta{Store: storeKind, SchemaVersion: Version()})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, metaName)
	tmp := path + ".tmp"
	if err := writeSynced(tmp, append(data, '\n')); err != nil {
		return fmt.Errorf("sqlite: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sqlite: writing %s: %w", path, err)
	}
	return syncDir(dir)
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// syncDir makes a rename or unlink in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sqlite: syncing %s: %w", dir, err)
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
