package sqlite

import (
	"context"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"go.uber.org/zap"
)

// Deferred returns a store of cfg, checked at once but opened only by start
// (as New opens one) and closed by stop, for a framework that hands the store
// out before anything starts (sqlitefx). start logs on log (nil: nowhere).
func Deferred(cfg Config, log *zap.Logger) (s *Store, start, stop func(context.Context) error, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, nil, nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	// Closed until start opens the directory: the zero Dir.
	closed := &dayfile.Dir{}
	s = &Store{cfg: cfg, dir: closed, stats: daystats.New(closed, nil, cfg.Stats)}
	start = func(ctx context.Context) error {
		opened, err := New(ctx, cfg)
		if err != nil {
			return err
		}
		s.adopt(opened)
		log.Named("sqlite").Info("SQLite store ready", zap.String("dir", cfg.Dir), zap.Int("day_files", s.dir.Len()))
		return nil
	}
	return s, start, func(context.Context) error { return s.Close() }, nil
}

// DeferredAlertStore is the alert store in s's data directory, opened by
// start (after s's own start has locked the directory) and closed by stop
// (before s lets the directory go).
func DeferredAlertStore(s *Store) (a *sqlitealert.AlertStore, start, stop func(context.Context) error) {
	a = &sqlitealert.AlertStore{}
	start = func(ctx context.Context) error {
		opened, err := NewAlertStore(ctx, s)
		if err != nil {
			return err
		}
		*a = *opened
		return nil
	}
	return a, start, func(context.Context) error { return a.Close() }
}
