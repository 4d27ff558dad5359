package app

import (
	"context"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the policy, the clock and the use cases of a Core (NewCore,
// as an embedder's constructor builds it), started and stopped with the
// service. It needs a Config and a ports.MessageStore from the graph. It uses
// a Metrics, a *zap.Logger, and for alerting a ports.AlertStore (without one
// alerting is off and *Alerts nil) with a ports.WebhookSender, an AlertConfig
// and a ports.PortalLinker, where the graph has them.
var Module = fx.Module("app",
	fx.Provide(
		Config.Policy,
		fx.Annotate(func() SystemClock { return SystemClock{} }, fx.As(new(ports.Clock))),
		newCore,
		func(c *Core) *Ingester { return c.Ingester },
		func(c *Core) *Reader { return c.Reader },
		func(c *Core) *Statistics { return c.Statistics },
		func(c *Core) *Exporter { return c.Exporter },
		func(c *Core) *Alerts { return c.Alerts },
	),
	// Built, checked and started even when nothing in the graph asks for a use
	// case.
	fx.Invoke(func(*Core) {}),
)

type coreParams struct {
	fx.In
	Lifecycle   fx.Lifecycle
	Config      Config
	Policy      domain.Policy
	Clock       ports.Clock
	Store       ports.MessageStore
	Metrics     Metrics             `optional:"true"`
	Log         *zap.Logger         `optional:"true"`
	AlertStore  ports.AlertStore    `optional:"true"`
	AlertConfig AlertConfig         `optional:"true"`
	Sender      ports.WebhookSender `optional:"true"`
	Links       ports.PortalLinker  `optional:"true"`
}

func newCore(p coreParams) (*Core, error) {
	c, err := NewCore(p.Config, CoreDeps{Store: p.Store, Policy: &p.Policy, Clock: p.Clock, Metrics: p.Metrics, Log: p.Log,
		Alerting: AlertingDeps{Store: p.AlertStore, Config: p.AlertConfig, Sender: p.Sender, Links: p.Links}})
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error { c.Start(); return nil },
		OnStop:  c.Stop,
	})
	return c, nil
}
