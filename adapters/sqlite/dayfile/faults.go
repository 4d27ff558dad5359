package dayfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/ports"
)

// A day file deleted, renamed or replaced under the store, or found corrupt,
// is a fault of its File (a *sqlitedb.FileFault, kept): its writes are
// refused from then on with ports.ErrUnavailable naming it, the store's
// Ping names it (/readyz), and it stays as it is until an operator restarts
// reqlogd (README, "Damaged day files"). An open file keeps the inode it
// was opened on (File.identity), so its number cannot be reused meanwhile;
// Append compares the path's inode with it before and after each commit,
// so nothing is acknowledged into a file that is no longer the day's. A
// faulted file stays open: its reads go on where the damage is not, and a
// backup can still copy what a deleted one holds.

// startChecks reads the newest Options.CheckDays day files whole (PRAGMA
// quick_check on a read connection), one at a time, in the background: a
// check of a day of a million messages (2.5 GB) takes seconds, which
// start-up's deadline has no room for. A corrupt one is a fault; until the
// last is checked, Checking says which is.
func (d *Dir) startChecks() {
	days := d.NewestFirst(time.Time{}, time.Time{})
	days = days[:max(0, min(len(days), d.opts.CheckDays))]
	if len(days) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stopChecks, d.checksStopped = cancel, make(chan struct{})
	name := dayName(days[0])
	d.checking.Store(&name)
	go func() {
		defer close(d.checksStopped)
		defer d.checking.Store(nil)
		for _, day := range days {
			name := dayName(day)
			d.checking.Store(&name)
			// Its error, a fault, is kept by the file; any other is the next
			// call's to meet.
			_ = d.Each(ctx, []Part{day}, func(f *File) error {
				err := f.DB.QuickCheck(ctx)
				if fault := (*sqlitedb.FileFault)(nil); errors.As(err, &fault) {
					f.setFault(fault)
				}
				return err
			})
		}
	}()
}

// stopTheChecks cancels the checks and waits for them.
func (d *Dir) stopTheChecks() {
	if d.stopChecks != nil {
		d.stopChecks()
		<-d.checksStopped
		d.stopChecks = nil
	}
}

// Checking is an error wrapping ports.ErrUnavailable while the newest
// day files are being checked (startChecks), naming the one; nil after.
func (d *Dir) Checking() error {
	if name := d.checking.Load(); name != nil {
		return fmt.Errorf("sqlite: checking %s (PRAGMA quick_check) before taking traffic: %w", *name, ports.ErrUnavailable)
	}
	return nil
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// identityOf is the device and inode of the open file f.
func identityOf(f *os.File) (fileID, error) {
	info, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	id, _ := fileIDOf(info)
	return id, nil
}

// What the store finds of a day file changed under it.
const (
	problemDeleted  = "was deleted while reqlogd was running"
	problemReplaced = "was replaced while reqlogd was running"
)

// unmoved checks that the file's path still names the file opened: a file
// deleted, renamed or replaced is a fault, kept.
func (f *File) unmoved() error {
	info, err := os.Stat(f.path)
	if err != nil {
		return f.moved(err)
	}
	if id, ok := fileIDOf(info); ok && id != f.id {
		return f.moved(nil)
	}
	return nil
}

// moved keeps and returns the fault of a file whose path os.Stat or os.Open
// failed on with err, or names another file (err nil). An error that does
// not tell (EIO, EMFILE) is only that: the same call may succeed later.
func (f *File) moved(err error) error {
	problem := problemReplaced
	switch {
	case errors.Is(err, fs.ErrNotExist):
		problem = problemDeleted
	case err != nil:
		return sqlitedb.Error(context.Background(), f.path, err)
	}
	return f.setFault(&sqlitedb.FileFault{Path: f.path, Problem: problem})
}

// setFault keeps the first fault found, and returns fault.
func (f *File) setFault(fault *sqlitedb.FileFault) error {
	f.fault.CompareAndSwap(nil, fault)
	return fault
}

// Fault is what was found wrong with the file; nil when nothing was.
func (f *File) Fault() error {
	if fault := f.fault.Load(); fault != nil {
		return fault
	}
	return nil
}

// Error wraps err from what was done to the file (sqlitedb.DB.Error), and
// keeps the fault of a file SQLite found corrupt.
func (f *File) Error(ctx context.Context, what string, err error) error {
	err = f.DB.Error(ctx, what, err)
	if fault := (*sqlitedb.FileFault)(nil); errors.As(err, &fault) {
		f.setFault(fault)
	}
	return err
}

// Faults lists the faults of the directory's day files, oldest day first.
func (d *Dir) Faults() []error {
	d.mu.Lock()
	var faulted []*File
	for _, f := range d.days {
		if f.fault.Load() != nil {
			faulted = append(faulted, f)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(faulted, func(a, b *File) int { return a.Day.Compare(b.Day) })
	faults := make([]error, len(faulted))
	for i, f := range faulted {
		faults[i] = f.Fault()
	}
	return faults
}
