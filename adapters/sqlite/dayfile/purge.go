package dayfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
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
	var (
		purged int64
		errs   []error // one file that cannot be dropped holds back no other
	)
	for _, f := range d.expired(now) {
		if err := ctx.Err(); err != nil {
			return purged, errors.Join(append(errs, err)...)
		}
		n, err := d.dropIfExpired(ctx, f, now, beforeDrop)
		purged += n
		errs = append(errs, err)
	}
	return purged, errors.Join(errs...)
}

// expired lists, newest first, the day files whose totals say that every
// message has expired at now.
func (d *Dir) expired(now time.Time) []*File {
	d.mu.Lock()
	defer d.mu.Unlock()
	var files []*File
	for day, f := range d.days {
		if !day.After(DayOf(now)) && f.expiredAt(now) {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, func(a, b *File) int { return b.Day.Compare(a.Day) })
	return files
}

// dropIfExpired drops f if every message in it has expired, under its use
// lock held exclusively: no Append or read is using it then, and the
// totals read from the file are final.
func (d *Dir) dropIfExpired(ctx context.Context, f *File, now time.Time, beforeDrop func(context.Context, *File) error) (int64, error) {
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
	if maxExpires > now.UnixMicro() {
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
