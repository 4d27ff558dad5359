package sqlite

import (
	"context"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/ports"
)

// Module provides the SQLite store as the service's ports.MessageStore (and
// as *Store). It needs a Config from the graph and uses a *zap.Logger if
// there is one. It opens the data directory on start and closes it on stop;
// app's Core warms its statistics (a ports.StatsWarmer) in between.
var Module = fx.Module("sqlite",
	fx.Provide(fx.Annotate(provide, fx.As(fx.Self()), fx.As(new(ports.MessageStore)))),
)

type moduleParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    Config
	Log       *zap.Logger `optional:"true"`
}

// provide checks the configuration at once but opens the directory only on
// start: fx builds the whole graph before any OnStart hook runs.
func provide(p moduleParams) (*Store, error) {
	cfg, err := p.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	log := p.Log
	if log == nil {
		log = zap.NewNop()
	}
	s := &Store{cfg: cfg}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			opened, err := New(ctx, cfg)
			if err != nil {
				return err
			}
			s.adopt(opened)
			log.Named("sqlite").Info("SQLite store ready", zap.String("dir", cfg.Dir), zap.Int("day_files", s.dayCount()))
			return nil
		},
		OnStop: func(context.Context) error { return s.Close() },
	})
	return s, nil
}

// AlertModule provides the alert store in the SQLite store's data directory
// (reqlog-alerts.sqlite) as the service's ports.AlertStore. It opens the file
// on start, after the store has locked the directory, and closes it on stop,
// before the store lets the directory go.
var AlertModule = fx.Module("sqlite.alerts",
	fx.Provide(fx.Annotate(func(lc fx.Lifecycle, s *Store) *AlertStore {
		a := &AlertStore{}
		lc.Append(fx.Hook{
			OnStart: func(ctx context.Context) error {
				opened, err := NewAlertStore(ctx, s)
				if err != nil {
					return err
				}
				*a = *opened
				return nil
			},
			OnStop: func(context.Context) error { return a.Close() },
		})
		return a
	}, fx.As(new(ports.AlertStore)))),
)
