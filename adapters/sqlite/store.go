package sqlite

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/adapters/sqlite/rollupfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.TallyLookup   = (*Store)(nil)
	_ ports.HealthChecker = (*Store)(nil)
	_ ports.StatsWarmer   = (*Store)(nil)
	_ ports.RollupKeeper  = (*Store)(nil)
)

// Store is the SQLite ports.MessageStore: one database file per UTC day of
// the messages' CreatedAt in one data directory (dayfile.Dir). It is safe
// for concurrent use; one Store per directory (the directory is locked).
type Store struct {
	cfg   Config
	dir   *dayfile.Dir
	kept  *rollupfile.File // the rollups of the day files retention dropped
	stats *daystats.Reader

	skipWords bool // no word index: only in the benchmark that prices it
}

// New opens (creating if needed) the data directory cfg.Dir and checks every
// day file in it (dayfile.Open); the files open when used. Any file it
// cannot use is an error naming the file; nothing is reset. Close releases
// the files and the directory's lock.
func New(ctx context.Context, cfg Config) (*Store, error) {
	return newWithLayout(ctx, cfg, dayfile.Layout{})
}

// newWithLayout is New with a day file layout other than the store's, for
// the benchmark that measures them.
func newWithLayout(ctx context.Context, cfg Config, layout dayfile.Layout) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	dir, err := dayfile.Open(ctx, dayfile.Options{Dir: cfg.Dir, MinFreeBytes: cfg.MinFreeBytes, Files: cfg.fileOptions(),
		MaxOpen: cfg.MaxOpenDays, CheckDays: cfg.CheckDays, Layout: layout})
	if err != nil {
		return nil, err
	}
	kept, err := rollupfile.Open(ctx, cfg.Dir, cfg.fileOptions())
	if err != nil {
		return nil, errors.Join(err, dir.Close())
	}
	return &Store{cfg: cfg, dir: dir, kept: kept, stats: daystats.New(dir, kept, cfg.Stats)}, nil
}

// Close closes every day file and the rollups file, and releases the
// directory.
func (s *Store) Close() error {
	var err error
	if s.kept != nil {
		err = s.kept.Close()
	}
	return errors.Join(err, s.dir.Close())
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.cfg.Dir }

// ReadLag is zero: a committed transaction is visible to every later read.
func (s *Store) ReadLag() time.Duration { return 0 }

// Ping reports whether the store can take writes: the data directory is
// there, its file system has Config.MinFreeBytes free, the newest
// Config.CheckDays day files have been checked since start-up, and no day
// file was found deleted, replaced or corrupt (each such fault a
// ports.Fault naming the file).
func (s *Store) Ping(ctx context.Context) error {
	return errors.Join(append([]error{s.dir.CheckSpace(ctx, "ping"), s.dir.Checking()}, s.dir.Faults()...)...)
}

// Append stores msgs, in a transaction of each day file they fall in (a
// day and a retention class: dayfile.PartOf), the files written at the same
// time, and returns nil only once every one has committed
// (dayfile.File.Append; Appends to a file that meet there share its
// transaction). A message whose id its day file already holds is left as
// stored, so a retry converges; the id's file is a function of CreatedAt
// and the retention rule, which a retry keeps (unless the rule set changed
// between: then the retry is stored again in the other class's file, and
// reads show the message once).
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := s.dir.CheckSpace(ctx, "append"); err != nil {
		return err
	}
	groups := dayfile.ByPart(msgs)
	// The largest part first: there the batches of concurrent Appends meet
	// and share a transaction, and they leave it together, to meet again in
	// the files of the other parts, written at the same time.
	largest := 0
	for i, group := range groups {
		if len(group.Messages) > len(groups[largest].Messages) {
			largest = i
		}
	}
	if err := s.appendPart(ctx, groups[largest]); err != nil || len(groups) == 1 {
		return err
	}
	groups = append(groups[:largest:largest], groups[largest+1:]...)
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, group := range groups {
		wg.Go(func() { errs[i] = s.appendPart(ctx, group) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// appendPart stores group's messages in its part's day file.
func (s *Store) appendPart(ctx context.Context, group dayfile.Group) error {
	f, err := s.dir.Acquire(ctx, group.Part, true)
	if err != nil {
		return err
	}
	defer f.Release()
	err = f.Append(ctx, group.Messages, !s.skipWords)
	// Whatever the transaction's end: once it has ended, the hours it may
	// have written are read again.
	s.stats.Wrote(f, group.Messages)
	return err
}

// PurgeExpired drops, whole, every day file whose messages have all expired
// at now (dayfile.Dir.PurgeExpired), once its rollups are kept in the
// rollups file (keepRollupsOf), and the hours kept of it, and returns how
// many messages the dropped files held.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	return s.dir.PurgeExpired(ctx, now, s.keepRollupsOf)
}

// keepRollupsOf copies the rollups of f, a day file about to be dropped,
// into the rollups file under its part (its class: a day's other class
// files keep theirs beside), in one transaction committed before f goes: a
// purge that stops anywhere loses none (a copy made again replaces its
// rows). Then the reader forgets f.
func (s *Store) keepRollupsOf(ctx context.Context, f *dayfile.File) error {
	if _, err := s.kept.Keep(ctx, f.Read, f.Class); err != nil {
		return err
	}
	s.stats.Forget(f)
	return nil
}

// PurgeRollups deletes the kept rollups of the minutes before before
// (ports.RollupKeeper): those of the day files still present go with them.
func (s *Store) PurgeRollups(ctx context.Context, before time.Time) (int64, error) {
	return s.kept.Purge(ctx, before)
}

var _ ports.RetentionPurger = (*Store)(nil)

// PurgeRetention is PurgeExpired that also applies each retention class's
// current retention to its day files (dayfile.Dir.PurgeRetention): a
// class's day dropped whole once its keep has passed, its rollups kept
// first (keepRollupsOf), its bodies taken out of the file once its bodies
// retention has.
func (s *Store) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	return s.dir.PurgeRetention(ctx, now, current, s.keepRollupsOf)
}

// Stats counts q at now from the day files of its range (daystats.Reader):
// through the statistics engine, from the rollups when they answer it and
// from the statistics index otherwise; from the word index for a q of one
// word. A daystats.Trace in ctx (daystats.WithTrace) is told what it read.
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	return s.stats.Stats(ctx, q, now)
}

// WarmStats counts the default statistics view of the busiest scopes, so
// that its whole hours are kept in the engine's cache before the first
// chart asks for them (daystats.Reader.Warm). app's Core runs it in the background after start
// (ports.StatsWarmer); it stops when ctx ends.
func (s *Store) WarmStats(ctx context.Context, now time.Time) error {
	return s.stats.Warm(ctx, now)
}

// adopt takes over opened's directory and files: fx hands out the Store
// before its start hook opens the directory, and nothing uses it before.
func (s *Store) adopt(opened *Store) {
	s.cfg, s.dir, s.kept, s.stats = opened.cfg, opened.dir, opened.kept, opened.stats
}

// NewAlertStore opens (creating if needed) the alert file in s's data
// directory. s must hold the directory (opened, or about to be by its
// module); Close releases the file.
func NewAlertStore(ctx context.Context, s *Store) (*sqlitealert.AlertStore, error) {
	return sqlitealert.OpenAlertStore(ctx, s.cfg.Dir, s.cfg.fileOptions())
}
