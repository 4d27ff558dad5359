// Package elasticfx wires the Elasticsearch store into an fx graph
// (cmd/reqlogd's): a program that embeds reqlog without fx opens the store
// with elastic.New and does not import it.
package elasticfx

import (
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the Elasticsearch store as the service's ports.MessageStore,
// as ports.HealthChecker (its Ping backs /readyz) and as *elastic.Store. It
// needs an elastic.Config from the graph and uses a *zap.Logger if there is
// one. On start it sets the cluster up (elastic.Deferred says how); on stop it
// closes the client.
var Module = fx.Module("elastic",
	fx.Provide(fx.Annotate(provide,
		fx.As(fx.Self()), fx.As(new(ports.MessageStore)), fx.As(new(ports.HealthChecker)))),
)

type moduleParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    elastic.Config
	Log       *zap.Logger `optional:"true"`
}

// provide checks the configuration at once but talks to the cluster only on
// start: fx builds the whole graph before any OnStart hook runs.
func provide(p moduleParams) (*elastic.Store, error) {
	store, start, stop, err := elastic.Deferred(p.Config, p.Log)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{OnStart: start, OnStop: stop})
	return store, nil
}

// AlertModule provides the alert store on the Elasticsearch store's cluster and
// index prefix as the service's ports.AlertStore, as its ports.RuleSetStore
// (the accounts' rule sets, in an index beside alerting's) and as its
// ports.ErasureJournal (the journal of erasures, there too). Its indices
// are created on start, after the store's set-up.
var AlertModule = fx.Module("elastic.alerts",
	fx.Provide(fx.Annotate(func(lc fx.Lifecycle, s *elastic.Store) *elastic.AlertStore {
		a, start := elastic.DeferredAlertStore(s)
		lc.Append(fx.Hook{OnStart: start})
		return a
	}, fx.As(new(ports.AlertStore)), fx.As(new(ports.RuleSetStore)), fx.As(new(ports.ErasureJournal)))),
)
