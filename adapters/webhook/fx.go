package webhook

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/ports"
)

// Module provides the sender as the service's ports.WebhookSender; it needs a
// Config from the graph.
var Module = fx.Module("webhook",
	fx.Provide(fx.Annotate(func(cfg Config) (*Sender, error) {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		return New(cfg), nil
	}, fx.As(new(ports.WebhookSender)))),
)
