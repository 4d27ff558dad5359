package sqlite

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
// how many messages the dropped files held.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	var purged int64
	for _, day := range s.daysNewestFirst(time.Time{}, dayOf(now)) {
		if err := ctx.Err(); err != nil {
			return purged, err
		}
		n, err := s.dropIfExpired(ctx, day, now)
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
func (s *Store) dropIfExpired(ctx context.Context, day time.Time, now time.Time) (int64, error) {
	s.mu.RLock()
	d := s.days[day]
	s.mu.RUnlock()
	if d == nil || !s.expired(ctx, d, now) {
		return 0, nil // the cheap check first, without blocking anyone
	}
	d.use.Lock()
	defer d.use.Unlock()
	if d.dropped {
		return 0, nil
	}
	var messages, maxExpires int64
	if err := d.Write.QueryRowContext(ctx, `SELECT messages, max_expires FROM day`).Scan(&messages, &maxExpires); err != nil {
		return 0, d.Error(ctx, "purge", err)
	}
	if maxExpires > now.UnixMicro() {
		return 0, nil
	}
	s.mu.Lock()
	delete(s.days, day)
	s.mu.Unlock()
	d.dropped = true
	s.hours.forgetDay(d)
	// Deleted before closing: the last close would checkpoint the WAL into a
	// file about to go.
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(d.Path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, d.Close(), syncDir(s.cfg.Dir))
	if err := errors.Join(errs...); err != nil {
		return messages, fmt.Errorf("sqlite: purge: dropping %s: %w", d.Path, err)
	}
	return messages, nil
}

// expired reads day's totals without locking it.
func (s *Store) expired(ctx context.Context, d *dayFile, now time.Time) bool {
	var maxExpires int64
	err := d.Read.QueryRowContext(ctx, `SELECT max_expires FROM day`).Scan(&maxExpires)
	return err == nil && maxExpires <= now.UnixMicro()
}
