// Package sqlitefx wires the SQLite store into an fx graph (cmd/reqlogd's): a
// program that embeds reqlog without fx opens the store with sqlite.New and
// does not import it.
package sqlitefx

import (
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the SQLite store as the service's ports.MessageStore (and
// as *sqlite.Store). It needs a sqlite.Config from the graph and uses a
// *zap.Logger if there is one. It opens the data directory on start and
// closes it on stop; app's Core warms its statistics (a ports.StatsWarmer) in
// between.
var Module = fx.Module("sqlite",
	fx.Provide(fx.Annotate(provide, fx.As(fx.Self()), fx.As(new(ports.MessageStore)))),
)

type moduleParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    sqlite.Config
	Log       *zap.Logger `optional:"true"`
}

// provide checks the configuration at once but opens the directory only on
// start: fx builds the whole graph before any OnStart hook runs.
func provide(p moduleParams) (*sqlite.Store, error) {
	s, start, stop, err := sqlite.Deferred(p.Config, p.Log)
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{OnStart: start, OnStop: stop})
	return s, nil
}

// AlertModule provides the alert store in the SQLite store's data directory
// (reqlog-alerts.sqlite) as the service's ports.AlertStore, and as its
// ports.RuleSetStore (the accounts' rule sets, in the same file) and its
// ports.ErasureJournal (the journal of erasures, there too). It opens the file
// on start, after the store has locked the directory, and closes it on stop,
// before the store lets the directory go.
var AlertModule = fx.Module("sqlite.alerts",
	fx.Provide(fx.Annotate(func(lc fx.Lifecycle, s *sqlite.Store) *sqlitealert.AlertStore {
		a, start, stop := sqlite.DeferredAlertStore(s)
		lc.Append(fx.Hook{OnStart: start, OnStop: stop})
		return a
	}, fx.As(new(ports.AlertStore)), fx.As(new(ports.RuleSetStore)), fx.As(new(ports.ErasureJournal)))),
)
