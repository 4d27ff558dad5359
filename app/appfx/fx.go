// Package appfx wires app's use cases into an fx graph (cmd/reqlogd's): a
// program that embeds reqlog without fx (adapters/embedded) does not import
// it, so fx is not linked into it.
package appfx

import (
	"context"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the policy, the clock and the use cases of an app.Core
// (app.NewCore, as an embedder's constructor builds it), started and stopped
// with the service. It needs an app.Config and a ports.MessageStore from the
// graph. It uses an app.Metrics, a *zap.Logger, and for alerting a
// ports.AlertStore (without one alerting is off and *app.Alerts nil) with a
// ports.WebhookSender, an app.AlertConfig and a ports.PortalLinker, and a
// ports.RuleSetStore for the accounts' rule sets, where the graph has them.
var Module = fx.Module("app",
	fx.Provide(
		app.Config.Policy,
		fx.Annotate(func() app.SystemClock { return app.SystemClock{} }, fx.As(new(ports.Clock))),
		newCore,
		func(c *app.Core) *app.Ingester { return c.Ingester },
		func(c *app.Core) *app.Reader { return c.Reader },
		func(c *app.Core) *app.Statistics { return c.Statistics },
		func(c *app.Core) *app.Exporter { return c.Exporter },
		func(c *app.Core) *app.Alerts { return c.Alerts },
		func(c *app.Core) *app.RuleSets { return c.RuleSets },
		func(c *app.Core) *app.Rescrubs { return c.Rescrubs },
		func(c *app.Core) *app.Erasures { return c.Erasures },
	),
	// Built, checked and started even when nothing in the graph asks for a use
	// case.
	fx.Invoke(func(*app.Core) {}),
)

type coreParams struct {
	fx.In
	Lifecycle   fx.Lifecycle
	Config      app.Config
	Policy      domain.Policy
	Clock       ports.Clock
	Store       ports.MessageStore
	Metrics     app.Metrics          `optional:"true"`
	Log         *zap.Logger          `optional:"true"`
	AlertStore  ports.AlertStore     `optional:"true"`
	AlertConfig app.AlertConfig      `optional:"true"`
	Sender      ports.WebhookSender  `optional:"true"`
	Links       ports.PortalLinker   `optional:"true"`
	RuleSets    ports.RuleSetStore   `optional:"true"`
	Erasures    ports.ErasureJournal `optional:"true"`
}

func newCore(p coreParams) (*app.Core, error) {
	c, err := app.NewCore(p.Config, app.CoreDeps{Store: p.Store, Policy: &p.Policy, Clock: p.Clock, Metrics: p.Metrics, Log: p.Log,
		Alerting: app.AlertingDeps{Store: p.AlertStore, Config: p.AlertConfig, Sender: p.Sender, Links: p.Links}, RuleSets: p.RuleSets, Erasures: p.Erasures})
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error { c.Start(); return nil },
		OnStop:  c.Stop,
	})
	return c, nil
}
