package dayfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// PurgeExpired drops, whole, every day file whose messages have all expired
// at now (day.max_expires <= now): its connections closed, the file and its
// -wal and -shm deleted, so the space returns to the file system at once. No
// row is deleted and nothing is vacuumed. A day holding one unexpired
// message stays; reads never return the expired ones meanwhile. It returns
// how many messages the dropped files held. dropped is told of each file
// dropped, while no call uses it.
func (d *Dir) PurgeExpired(ctx context.Context, now time.Time, dropped func(*File)) (int64, error) {
	var purged int64
	for _, day := range d.NewestFirst(time.Time{}, DayOf(now)) {
		if err := ctx.Err(); err != nil {
			return purged, err
		}
		n, err := d.dropIfExpired(ctx, day, now, dropped)
		if err != nil {
			return purged, err
		}
		purged += n
	}
	return purged, nil
}

// dropIfExpired drops day's file if every message in it has expired, under
// its use lock held exclusively: no Append or read is using it then, and
// the totals read are final.
func (d *Dir) dropIfExpired(ctx context.Context, day time.Time, now time.Time, dropped func(*File)) (int64, error) {
	d.mu.RLock()
	f := d.days[day]
	d.mu.RUnlock()
	if f == nil || !f.expired(ctx, now) {
		return 0, nil // the cheap check first, without blocking anyone
	}
	f.use.Lock()
	defer f.use.Unlock()
	if f.dropped {
		return 0, nil
	}
	var messages, maxExpires int64
	if err := f.Write.QueryRowContext(ctx, `SELECT messages, max_expires FROM day`).Scan(&messages, &maxExpires); err != nil {
		return 0, f.Error(ctx, "purge", err)
	}
	if maxExpires > now.UnixMicro() {
		return 0, nil
	}
	d.mu.Lock()
	delete(d.days, day)
	d.mu.Unlock()
	f.dropped = true
	dropped(f)
	// Deleted before closing: the last close would checkpoint the WAL into a
	// file about to go.
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(f.Path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, f.Close(), syncDir(d.opts.Dir))
	if err := errors.Join(errs...); err != nil {
		return messages, fmt.Errorf("sqlite: purge: dropping %s: %w", f.Path, err)
	}
	return messages, nil
}

// expired reads the file's totals without locking it.
func (f *File) expired(ctx context.Context, now time.Time) bool {
	var maxExpires int64
	err := f.Read.QueryRowContext(ctx, `SELECT max_expires FROM day`).Scan(&maxExpires)
	return err == nil && maxExpires <= now.UnixMicro()
}
