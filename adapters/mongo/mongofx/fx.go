// Package mongofx wires the MongoDB store into an fx graph (cmd/reqlogd's): a
// program that embeds reqlog without fx opens the store with mongo.New and
// does not import it.
package mongofx

import (
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the MongoDB store as the service's ports.MessageStore (and as
// *mongo.Store). It needs a mongo.Config from the graph and uses a *zap.Logger
// if there is one. It connects, pings and creates indexes on start and
// disconnects on stop. Callers discover optional capabilities such as
// ports.HealthChecker by type assertion, as with every store.
var Module = fx.Module("mongo",
	fx.Provide(fx.Annotate(provide, fx.As(fx.Self()), fx.As(new(ports.MessageStore)))),
)

type moduleParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    mongo.Config
	Log       *zap.Logger `optional:"true"`
}

// provide checks the configuration at once but connects only on start: fx
// builds the whole graph before any OnStart hook runs.
func provide(p moduleParams) (*mongo.Store, error) {
	store, start, stop, err := mongo.Deferred(p.Config, p.Log)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{OnStart: start, OnStop: stop})
	return store, nil
}

// AlertModule provides the alert store on the MongoDB store's database as the
// service's ports.AlertStore, and as its ports.RuleSetStore (the accounts' rule
// sets, in a collection beside alerting's). Its indexes are created on start,
// after the store connects.
var AlertModule = fx.Module("mongo.alerts",
	fx.Provide(fx.Annotate(func(lc fx.Lifecycle, s *mongo.Store) *mongo.AlertStore {
		a, start := mongo.DeferredAlertStore(s)
		lc.Append(fx.Hook{OnStart: start})
		return a
	}, fx.As(new(ports.AlertStore)), fx.As(new(ports.RuleSetStore)), fx.As(new(ports.ErasureJournal)))),
)
