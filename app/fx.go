package app

import (
	"context"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the policy, the clock and the use cases, and runs the purge job.
// It needs a Config, a *zap.Logger and a ports.MessageStore from the graph.
var Module = fx.Module("app",
	fx.Provide(
		Config.Policy,
		fx.Annotate(func() SystemClock { return SystemClock{} }, fx.As(new(ports.Clock))),
		func(s ports.MessageStore, p domain.Policy, c ports.Clock) *Ingester { return NewIngester(s, p, c) },
		func(s ports.MessageStore, p domain.Policy, c ports.Clock) *Reader { return NewReader(s, p, c) },
		func(s ports.MessageStore, c ports.Clock, cfg Config, log *zap.Logger) *Purger {
			return NewPurger(s, c, cfg.PurgeInterval, log)
		},
	),
	fx.Invoke(
		CheckReadLag,
		func(lc fx.Lifecycle, p *Purger) {
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { p.Start(); return nil },
				OnStop:  p.Stop,
			})
		},
	),
)
