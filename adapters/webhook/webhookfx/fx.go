// Package webhookfx wires the webhook sender into an fx graph
// (cmd/reqlogd's); a program without fx calls webhook.New.
package webhookfx

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the sender as the service's ports.WebhookSender; it needs a
// webhook.Config from the graph.
var Module = fx.Module("webhook",
	fx.Provide(fx.Annotate(func(cfg webhook.Config) (*webhook.Sender, error) {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		return webhook.New(cfg), nil
	}, fx.As(new(ports.WebhookSender)))),
)
