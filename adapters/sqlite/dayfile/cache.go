package dayfile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/ports"
)

// The directory keeps a handle of every day file (a few hundred bytes:
// the day, its totals) and opens a file only for its users: an open file
// costs its connections' page caches and file descriptors (the database,
// its -wal and -shm, once per connection). Once released, a file stays
// open for the next call, until it has been unused for
// Options.Files.IdleTime (the janitor) or Options.MaxOpen others were
// used since (trim). The memory and descriptors of the store are so
// bounded by the days in use and MaxOpen, whatever the days on disk.

// Acquire returns part's file held for use and open, creating the file when
// create is set; nil when there is no such file. The caller releases it
// (File.Release).
func (d *Dir) Acquire(ctx context.Context, part Part, create bool) (*File, error) {
	for {
		d.mu.Lock()
		f := d.days[part]
		d.mu.Unlock()
		if f == nil {
			if !create {
				return nil, nil
			}
			var err error
			if f, err = d.create(ctx, part); err != nil {
				return nil, err
			}
		}
		f.use.RLock()
		if f.dropped {
			f.use.RUnlock() // dropped by a purge meanwhile: look again
			continue
		}
		if err := d.ensureOpen(ctx, f); err != nil {
			f.use.RUnlock()
			return nil, err
		}
		return f, nil
	}
}

// Release ends a use of the file that Dir.Acquire began.
func (f *File) Release() {
	f.lastUsed.Store(time.Now().UnixNano())
	f.use.RUnlock()
}

// Each calls fn with the file of each of parts in turn, each held for fn's
// call alone, so that a range of any length holds one file at a time. A
// part dropped meanwhile is skipped; fn's first error ends it.
func (d *Dir) Each(ctx context.Context, parts []Part, fn func(*File) error) error {
	for _, part := range parts {
		f, err := d.Acquire(ctx, part, false)
		if err != nil {
			return err
		}
		if f == nil {
			continue
		}
		err = fn(f)
		f.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// create opens part's file, creating it, unless another call did first.
func (d *Dir) create(ctx context.Context, part Part) (*File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f := d.days[part]; f != nil {
		return f, nil
	}
	if d.lock == nil {
		return nil, fmt.Errorf("sqlite: the store is closed: %w", ports.ErrUnavailable)
	}
	f := newFile(d.opts.Dir, part)
	if err := f.open(ctx, d.opts, true); err != nil {
		return nil, err
	}
	d.days[part] = f
	d.openedLocked(f)
	return f, nil
}

// ensureOpen opens f, which the caller holds, if the cache closed it, and
// notes its use.
func (d *Dir) ensureOpen(ctx context.Context, f *File) error {
	f.opening.Lock()
	var err error
	if f.DB == nil {
		err = f.reopen(d.opts)
	}
	f.opening.Unlock()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.openedLocked(f)
	over := d.opts.MaxOpen > 0 && len(d.opened) > d.opts.MaxOpen
	d.mu.Unlock()
	if over {
		d.trim(d.opts.MaxOpen, time.Time{})
	}
	return nil
}

// openedLocked notes a use of f, open, under d.mu.
func (d *Dir) openedLocked(f *File) {
	f.lastUsed.Store(time.Now().UnixNano())
	if !f.isOpen {
		f.isOpen = true
		d.opened = append(d.opened, f)
	}
}

// trim closes the least recently used files that no call holds until at
// most keep are open, and every such file unused since idleBefore (zero:
// none for that alone).
func (d *Dir) trim(keep int, idleBefore time.Time) {
	for {
		f := d.closable(keep, idleBefore)
		if f == nil {
			return
		}
		_ = f.close() // a close of connections that have committed cannot lose anything
		f.use.Unlock()
	}
}

// closable takes the next file trim closes out of the open ones, held
// exclusively; nil when there is none.
func (d *Dir) closable(keep int, idleBefore time.Time) *File {
	d.mu.Lock()
	defer d.mu.Unlock()
	slices.SortFunc(d.opened, func(a, b *File) int { return cmp.Compare(a.lastUsed.Load(), b.lastUsed.Load()) })
	for i, f := range d.opened {
		if len(d.opened) <= keep && (idleBefore.IsZero() || f.lastUsed.Load() >= idleBefore.UnixNano()) {
			return nil
		}
		if f.fault.Load() != nil {
			continue // kept open (faults.go)
		}
		if f.use.TryLock() { // no call holds it, and none can until it is closed
			d.opened = slices.Delete(d.opened, i, i+1)
			f.isOpen = false
			return f
		}
	}
	return nil
}

// forgetLocked takes f out of the directory, under d.mu: the purge dropped it.
func (d *Dir) forgetLocked(f *File) {
	delete(d.days, f.Part())
	if i := slices.Index(d.opened, f); i >= 0 {
		d.opened = slices.Delete(d.opened, i, i+1)
	}
	f.isOpen = false
}

// OpenFiles is how many day files are open.
func (d *Dir) OpenFiles() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.opened)
}

// startJanitor closes, every half of Options.Files.IdleTime, the files
// unused for that long, and keeps at most MaxOpen open.
func (d *Dir) startJanitor() {
	idle := d.opts.Files.IdleTime
	if idle <= 0 {
		return
	}
	d.stopJanitor, d.janitorDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.janitorDone)
		tick := time.NewTicker(max(idle/2, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-d.stopJanitor:
				return
			case now := <-tick.C:
				keep := d.opts.MaxOpen
				if keep <= 0 {
					keep = int(^uint(0) >> 1)
				}
				d.trim(keep, now.Add(-idle))
			}
		}
	}()
}

// stopTheJanitor stops the janitor and waits for it.
func (d *Dir) stopTheJanitor() {
	if d.stopJanitor != nil {
		close(d.stopJanitor)
		<-d.janitorDone
		d.stopJanitor = nil
	}
}
