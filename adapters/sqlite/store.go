package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.HealthChecker = (*Store)(nil)
	_ ports.StatsWarmer   = (*Store)(nil)
)

// Store is the SQLite ports.MessageStore: one database file per UTC day of
// the messages' CreatedAt in one data directory. It is safe for concurrent
// use; one Store per directory (the directory is locked).
type Store struct {
	cfg  Config
	lock *dirLock

	mu   sync.RWMutex
	days map[time.Time]*dayFile // by UTC midnight

	hours *hourCache // statistics: whole hours kept between calls

	skipWords bool // no word index: only in the benchmark that prices it
}

// New opens (creating if needed) the data directory cfg.Dir and every day
// file in it. Any file it cannot use is an error naming the file; nothing is
// reset. Close releases the files and the directory's lock.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(cfg.Dir); err == nil && !info.IsDir() {
		return nil, fmt.Errorf("sqlite: data directory %s is not a directory", cfg.Dir)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, lock: lock, days: map[time.Time]*dayFile{}, hours: newHourCache()}
	if err := s.openDays(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// openDays opens every day file of the directory, migrating older ones.
func (s *Store) openDays(ctx context.Context) error {
	days, older, err := readMeta(s.cfg.Dir)
	if err != nil {
		return err
	}
	for _, day := range days {
		d, err := openDay(ctx, s.cfg, day, false)
		if err != nil {
			return err
		}
		s.days[day] = d
	}
	if older {
		return writeMeta(s.cfg.Dir)
	}
	return nil
}

// Close closes every day file and releases the directory.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for day, d := range s.days {
		d.use.Lock()
		errs = append(errs, d.Close())
		d.dropped = true
		d.use.Unlock()
		delete(s.days, day)
	}
	if s.lock != nil {
		errs = append(errs, s.lock.release())
		s.lock = nil
	}
	return errors.Join(errs...)
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.cfg.Dir }

// ReadLag is zero: a committed transaction is visible to every later read.
func (s *Store) ReadLag() time.Duration { return 0 }

// Ping reports whether the store can take writes: the data directory is
// there and its file system has Config.MinFreeBytes free.
func (s *Store) Ping(ctx context.Context) error {
	return s.checkSpace(ctx, "ping")
}

// checkSpace fails with sqlitedb.ErrNoSpace (and ports.ErrUnavailable) when the data
// directory's file system has less than Config.MinFreeBytes free.
func (s *Store) checkSpace(ctx context.Context, op string) error {
	free, err := freeBytes(s.cfg.Dir)
	if err != nil {
		return sqlitedb.Error(ctx, op, fmt.Errorf("data directory %s: %w", s.cfg.Dir, errors.Join(err, ports.ErrUnavailable)))
	}
	if s.cfg.MinFreeBytes > 0 && free < s.cfg.MinFreeBytes {
		return sqlitedb.Error(ctx, op, fmt.Errorf("data directory %s has %d bytes free, less than %d: %w",
			s.cfg.Dir, free, s.cfg.MinFreeBytes, sqlitedb.ErrNoSpace))
	}
	return nil
}

// acquire returns day's file with its use lock held shared, creating the file
// when create is set; nil (and no lock) when there is no such file. The
// caller releases d.use.
func (s *Store) acquire(ctx context.Context, day time.Time, create bool) (*dayFile, error) {
	for {
		s.mu.RLock()
		d := s.days[day]
		s.mu.RUnlock()
		if d == nil {
			if !create {
				return nil, nil
			}
			var err error
			if d, err = s.create(ctx, day); err != nil {
				return nil, err
			}
		}
		d.use.RLock()
		if !d.dropped {
			return d, nil
		}
		d.use.RUnlock() // dropped by a purge meanwhile: look again
	}
}

// create opens day's file, creating it, unless another call did first.
func (s *Store) create(ctx context.Context, day time.Time) (*dayFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.days[day]; d != nil {
		return d, nil
	}
	if s.lock == nil {
		return nil, fmt.Errorf("sqlite: the store is closed: %w", ports.ErrUnavailable)
	}
	d, err := openDay(ctx, s.cfg, day, true)
	if err != nil {
		return nil, err
	}
	s.days[day] = d
	return d, nil
}

// daysNewestFirst lists the days present from last down to first (both
// included; a zero bound is unbounded).
func (s *Store) daysNewestFirst(first, last time.Time) []time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	days := make([]time.Time, 0, len(s.days))
	for day := range s.days {
		if (first.IsZero() || !day.Before(first)) && (last.IsZero() || !day.After(last)) {
			days = append(days, day)
		}
	}
	slices.SortFunc(days, func(a, b time.Time) int { return b.Compare(a) })
	return days
}

// adopt takes over opened's directory and files: fx hands out the Store
// before its start hook opens the directory.
func (s *Store) adopt(opened *Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.lock, s.days, s.hours = opened.cfg, opened.lock, opened.days, opened.hours
}

func (s *Store) dayCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.days)
}

// NewAlertStore opens (creating if needed) the alert file in s's data
// directory. s must hold the directory (opened, or about to be by its
// module); Close releases the file.
func NewAlertStore(ctx context.Context, s *Store) (*AlertStore, error) {
	return OpenAlertStore(ctx, s.cfg.Dir, s.cfg.fileOptions())
}
