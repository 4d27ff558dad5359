package elastic

import (
	"context"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the Elasticsearch store as the service's ports.MessageStore,
// as ports.HealthChecker (its Ping backs /readyz) and as *Store. It needs a
// Config from the graph and uses a *zap.Logger if there is one. On start it
// checks the cluster, installs the index template, creates the daily indices
// of today and tomorrow, waits for their replicas and warms the cluster's
// indexing path (esindex.Indices.PrepareWrites, within Config.WarmUp); on stop
// it closes the client.
var Module = fx.Module("elastic",
	fx.Provide(fx.Annotate(provide,
		fx.As(fx.Self()), fx.As(new(ports.MessageStore)), fx.As(new(ports.HealthChecker)))),
)

type moduleParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    Config
	Log       *zap.Logger `optional:"true"`
}

// provide checks the configuration at once but talks to the cluster only on
// start: fx builds the whole graph before any OnStart hook runs.
func provide(p moduleParams) (*Store, error) {
	store, err := newUnopened(p.Config)
	if err != nil {
		return nil, err
	}
	log := p.Log
	if log == nil {
		log = zap.NewNop()
	}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := store.indices.SetUp(ctx); err != nil {
				return err
			}
			// Not fatal: the first write of a day creates its index anyway.
			warm, err := store.indices.PrepareWrites(ctx, time.Now())
			if err != nil {
				log.Named("elastic").Warn("preparing the daily indices of today and tomorrow", zap.Error(err))
			}
			esindex.LogWarmUp(log.Named("elastic"), warm)
			names := store.indices.Names()
			log.Named("elastic").Info("Elasticsearch store ready",
				zap.String("template", names.Template()),
				zap.String("indices", names.ReadPattern()),
				zap.Duration("read_lag", store.ReadLag()))
			return nil
		},
		OnStop: store.Close,
	})
	return store, nil
}

// AlertModule provides the alert store on the Elasticsearch store's cluster and
// index prefix as the service's ports.AlertStore. Its indices are created on
// start, after the store's set-up.
var AlertModule = fx.Module("elastic.alerts",
	fx.Provide(fx.Annotate(func(lc fx.Lifecycle, s *Store) *AlertStore {
		a := s.alertStore()
		lc.Append(fx.Hook{OnStart: a.SetUp})
		return a
	}, fx.As(new(ports.AlertStore)))),
)
