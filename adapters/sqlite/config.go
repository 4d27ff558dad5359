package sqlite

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
)

// Defaults of Config.
const (
	DefaultDir = "./reqlog-data"
	// DefaultMinFreeBytes keeps room on the disk for SQLite's own needs (a
	// checkpoint, the WAL of a batch) and for the operator: writes are refused
	// below it, before the disk is full, as Elasticsearch's flood-stage
	// watermark makes its indices read-only.
	DefaultMinFreeBytes = 64 << 20
	// DefaultReaders is how many read connections each day file keeps open.
	DefaultReaders = 4
	// DefaultBusyTimeout bounds a wait for a lock SQLite needs briefly even in
	// WAL mode (recovering the WAL index after a crash).
	DefaultBusyTimeout = 5 * time.Second
	// DefaultWriterCacheBytes is the page cache of each day file's writer
	// connection: a batch of 500 messages of 6 KB dirties about 4 MiB, and
	// the indexes of a day of a million messages take tens of MiB.
	DefaultWriterCacheBytes = 32 << 20
	// DefaultIdleTime is how long a day file stays open unused: a day no
	// longer written or read gives back its page caches and descriptors.
	DefaultIdleTime = time.Minute
	// DefaultMaxOpenDays is how many day files stay open between uses:
	// today's and yesterday's, and a week's chart.
	DefaultMaxOpenDays = 8
	// DefaultCheckDays is how many of the newest day files are checked page
	// by page after start-up: the ones written to.
	DefaultCheckDays = 2
	// DefaultMaxRetention is the longest retention the service runs the
	// store with: ten years of day files, the rules' own bound.
	DefaultMaxRetention = 3660 * 24 * time.Hour
	// DefaultWALBytes is what a day's WAL is truncated back to after a checkpoint.
	DefaultWALBytes = 64 << 20
)

// Config configures the SQLite store. The zero value of every field but Dir
// means its default.
type Config struct {
	// Dir is the data directory: one database file per UTC day, a lock file
	// and the schema version (required; the service's default is DefaultDir).
	Dir string
	// MinFreeBytes: writes fail with ports.ErrUnavailable while the data
	// directory's file system has less free space than this, and Ping fails.
	// Zero means DefaultMinFreeBytes; a negative value turns the check off.
	MinFreeBytes int64
	// Readers is how many read connections each day file may hold open.
	Readers int
	// BusyTimeout bounds SQLite's wait for a lock.
	BusyTimeout time.Duration
	// WALBytes bounds a day's WAL file after each checkpoint.
	WALBytes int64
	// WriterCacheBytes is the page cache of each day file's writer connection.
	WriterCacheBytes int64
	// IdleTime closes a day file unused for this long, and a read
	// connection of an open one (each opens again when next needed).
	IdleTime time.Duration
	// MaxOpenDays is how many day files stay open once used: past it the
	// least recently used closes, whatever the days on disk. A file in use
	// is never closed under its user.
	MaxOpenDays int
	// CheckDays is how many of the newest day files are read whole (PRAGMA
	// quick_check) after start-up, in the background, Ping failing until
	// they are: a corrupt one is then refused as damaged, named by Ping.
	// Zero means DefaultCheckDays; a negative value checks none.
	CheckDays int
	// BackupDir is where the service backs the data directory up when
	// asked to while it runs (Backup; reqlogd: SIGUSR1); empty for nowhere.
	// The store itself does not use it.
	BackupDir string
	// MaxRetention is the longest retention (app.Config.Retention) the
	// service may run the store with: each day of it is a file on disk, which
	// start-up checks and Get and Lookup visit. The store itself keeps
	// messages as their ExpiresAt says; CheckRetention is the service's check.
	MaxRetention time.Duration
	// Stats is the plan of the statistics of a q of one word: the costs of
	// its reads and the probe that tells whether they hold (daystats.Config;
	// its zero fields mean their defaults).
	Stats daystats.Config
}

// DefaultConfig returns the service's defaults.
func DefaultConfig() Config {
	return Config{Dir: DefaultDir, MinFreeBytes: DefaultMinFreeBytes, Readers: DefaultReaders,
		BusyTimeout: DefaultBusyTimeout, WALBytes: DefaultWALBytes,
		WriterCacheBytes: DefaultWriterCacheBytes, IdleTime: DefaultIdleTime, MaxOpenDays: DefaultMaxOpenDays,
		CheckDays: DefaultCheckDays, MaxRetention: DefaultMaxRetention}
}

// Validate reports the first unusable field of a configuration with its
// defaults filled in as a *domain.ValidationError naming the field.
func (cfg Config) Validate() error {
	bad := func(field, message string) error {
		return &domain.ValidationError{Message: "sqlite: config", Fields: []domain.FieldError{{Field: field, Message: message}}}
	}
	switch {
	case strings.TrimSpace(cfg.Dir) == "":
		return bad("Dir", "must name a directory")
	case strings.ContainsRune(cfg.Dir, 0):
		return bad("Dir", "must not contain NUL")
	case cfg.Readers < 0:
		return bad("Readers", "must not be negative")
	case cfg.BusyTimeout < 0:
		return bad("BusyTimeout", "must not be negative")
	case cfg.WALBytes < 0:
		return bad("WALBytes", "must not be negative")
	case cfg.WriterCacheBytes < 0:
		return bad("WriterCacheBytes", "must not be negative")
	case cfg.IdleTime < 0:
		return bad("IdleTime", "must not be negative")
	case cfg.MaxOpenDays < 0:
		return bad("MaxOpenDays", "must not be negative")
	case cfg.MaxRetention < 0:
		return bad("MaxRetention", "must not be negative")
	}
	if fields := cfg.Stats.Validate("Stats."); len(fields) > 0 {
		return &domain.ValidationError{Message: "sqlite: config", Fields: fields}
	}
	return nil
}

// CheckRetention refuses a retention longer than cfg's MaxRetention (its
// default when zero), as a *domain.ValidationError naming MaxRetention.
func (cfg Config) CheckRetention(retention time.Duration) error {
	limit := cmp.Or(cfg.MaxRetention, DefaultMaxRetention)
	if retention <= limit {
		return nil
	}
	return &domain.ValidationError{Message: "sqlite: config", Fields: []domain.FieldError{{Field: "MaxRetention",
		Message: fmt.Sprintf("is %s, shorter than the retention of %s: raise it, knowing that each day kept is a file", inDays(limit), inDays(retention))}}}
}

// inDays writes whole days as "30d", other durations as Go does.
func inDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// withDefaults fills every zero field with its default and validates.
func (cfg Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if cfg.MinFreeBytes == 0 {
		cfg.MinFreeBytes = d.MinFreeBytes
	}
	if cfg.Readers == 0 {
		cfg.Readers = d.Readers
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = d.BusyTimeout
	}
	if cfg.WALBytes == 0 {
		cfg.WALBytes = d.WALBytes
	}
	if cfg.WriterCacheBytes == 0 {
		cfg.WriterCacheBytes = d.WriterCacheBytes
	}
	if cfg.IdleTime == 0 {
		cfg.IdleTime = d.IdleTime
	}
	if cfg.MaxOpenDays == 0 {
		cfg.MaxOpenDays = d.MaxOpenDays
	}
	if cfg.MaxRetention == 0 {
		cfg.MaxRetention = d.MaxRetention
	}
	if cfg.CheckDays == 0 {
		cfg.CheckDays = d.CheckDays
	}
	return cfg, cfg.Validate()
}

// fileOptions are cfg's connection settings of each file.
func (cfg Config) fileOptions() sqlitedb.Options {
	return sqlitedb.Options{Readers: cfg.Readers, BusyTimeout: cfg.BusyTimeout, WALBytes: cfg.WALBytes,
		WriterCacheBytes: cfg.WriterCacheBytes, IdleTime: cfg.IdleTime}
}
