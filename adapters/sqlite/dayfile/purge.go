package dayfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// PurgeExpired drops, whole, every day file whose messages have all expired
// at now (day.max_expires <= now): its connections closed, the file and its
// -wal and -shm deleted, so the space returns to the file system at once. No
// row is deleted and nothing is vacuumed. A day holding one unexpired
// message stays; reads never return the expired ones meanwhile. It decides
// from the days' totals in memory, so it opens no file but those it drops.
// It returns how many messages the dropped files held, and the errors of
// those it could not drop. beforeDrop is given each file about to be
// dropped, open, while no call uses it: the file is dropped only once it
// returns nil (what it keeps of the file is kept before the file goes), and
// stays otherwise, its error reported.
func (d *Dir) PurgeExpired(ctx context.Context, now time.Time, beforeDrop func(context.Context, *File) error) (int64, error) {
	return d.PurgeRetention(ctx, now, nil, beforeDrop)
}

// PurgeRetention is PurgeExpired that also applies each retention class's
// current retention (current; nil: none) to the class's files: a file is
// dropped once the day it holds plus its class's keep has passed, whatever
// its messages' stamped expiry (a class shortened since they were stored),
// and the bodies of a class's files whose day plus the class's bodies
// retention has passed are taken out (File.ClearBodies). A class current
// cannot tell of is left for the next purge, with an error.
func (d *Dir) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf, beforeDrop func(context.Context, *File) error) (int64, error) {
	p := &purge{now: now, current: current, classes: map[domain.RetentionClass]classRetention{}}
	var (
		purged int64
		errs   []error // one file that cannot be dropped holds back no other
	)
	for _, f := range d.newestFiles() {
		if err := ctx.Err(); err != nil {
			return purged, errors.Join(append(errs, err)...)
		}
		if !p.expired(ctx, f, f.maxExpires.Load()) {
			continue
		}
		n, err := d.dropIfExpired(ctx, f, p, beforeDrop)
		purged += n
		errs = append(errs, err)
	}
	for _, f := range d.newestFiles() {
		if err := ctx.Err(); err != nil {
			return purged, errors.Join(append(errs, err)...)
		}
		if p.bodiesPast(ctx, f) {
			errs = append(errs, d.clearBodies(ctx, f.Part()))
		}
	}
	return purged, errors.Join(append(errs, p.errs...)...)
}

// newestFiles lists the day files of days up to today, newest first.
func (d *Dir) newestFiles() []*File {
	d.mu.Lock()
	defer d.mu.Unlock()
	files := make([]*File, 0, len(d.days))
	for _, f := range d.days {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b *File) int { return b.Day.Compare(a.Day) })
	return files
}

// purge is one purge's decisions: each class's current retention, asked
// once.
type purge struct {
	now     time.Time
	current ports.RetentionOf
	classes map[domain.RetentionClass]classRetention
	errs    []error // of the classes current could not tell of
}

// classRetention is a class's current retention; ok false: the class's
// messages keep their stamped expiry.
type classRetention struct {
	keep, bodies time.Duration
	ok           bool
}

// retentionOf is f's class's current retention.
func (p *purge) retentionOf(ctx context.Context, f *File) classRetention {
	class, ok := f.RetentionClass()
	if !ok || p.current == nil {
		return classRetention{}
	}
	r, asked := p.classes[class]
	if !asked {
		var err error
		if r.keep, r.bodies, r.ok, err = p.current(ctx, class); err != nil {
			p.errs = append(p.errs, fmt.Errorf("sqlite: purge: the retention of account %s's rule %s: %w", class.Account, class.Rule, err))
			r = classRetention{}
		}
		p.classes[class] = r
	}
	return r
}

// expired reports whether every message of f has expired at the purge's
// now: by the latest expiry stamped on them (maxExpires, Unix
// microseconds), or by their class's current keep after the end of f's day.
func (p *purge) expired(ctx context.Context, f *File, maxExpires int64) bool {
	if f.Day.After(DayOf(p.now)) {
		return false
	}
	if maxExpires <= p.now.UnixMicro() {
		return true
	}
	r := p.retentionOf(ctx, f)
	return r.ok && !f.Day.Add(24*time.Hour+r.keep).After(p.now)
}

// bodiesPast reports whether f's class keeps bodies for less than its
// messages and that time has passed for all of f's day, with messages whose
// bodies are still in the file.
func (p *purge) bodiesPast(ctx context.Context, f *File) bool {
	if f.Class == "" {
		return false
	}
	r := p.retentionOf(ctx, f)
	return r.ok && r.bodies < r.keep && !f.Day.Add(24*time.Hour+r.bodies).After(p.now) && f.unclearedBodies()
}

// clearBodies takes out the bodies of part's file, held for it.
func (d *Dir) clearBodies(ctx context.Context, part Part) error {
	f, err := d.Acquire(ctx, part, false)
	if err != nil || f == nil {
		return err // nil: dropped meanwhile
	}
	defer f.Release()
	_, err = f.ClearBodies(ctx)
	return err
}

// dropIfExpired drops f if every message in it has expired, under its use
// lock held exclusively: no Append or read is using it then, and the
// totals read from the file are final.
func (d *Dir) dropIfExpired(ctx context.Context, f *File, p *purge, beforeDrop func(context.Context, *File) error) (int64, error) {
	f.use.Lock()
	defer f.use.Unlock()
	if f.dropped {
		return 0, nil
	}
	if f.DB == nil {
		if err := f.reopen(d.opts); err != nil {
			return 0, err
		}
		d.mu.Lock()
		d.openedLocked(f) // closed with the others if it stays
		d.mu.Unlock()
	}
	var messages, maxExpires int64
	if err := f.Write.QueryRowContext(ctx, `SELECT messages, max_expires FROM day`).Scan(&messages, &maxExpires); err != nil {
		return 0, f.Error(ctx, "purge", err)
	}
	if !p.expired(ctx, f, maxExpires) {
		return 0, nil
	}
	if err := beforeDrop(ctx, f); err != nil {
		return 0, fmt.Errorf("sqlite: purge: keeping %s: %w", f.path, err)
	}
	// Deleted before closing: the last close would checkpoint the WAL into a
	// file about to go. Forgotten last: a write of the day meanwhile waits
	// for the use lock, then finds no file and creates a new one.
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(f.path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, f.close(), syncDir(d.opts.Dir))
	f.dropped = true
	d.mu.Lock()
	d.forgetLocked(f)
	d.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return messages, fmt.Errorf("sqlite: purge: dropping %s: %w", f.path, err)
	}
	return messages, nil
}
