// Package keyringfx wires the configured keys into an fx graph
// (cmd/reqlogd's); a program without fx calls keyring.New.
package keyringfx

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the keys of the graph's keyring.Config as the
// ports.KeyStore.
var Module = fx.Module("keyring",
	fx.Provide(fx.Annotate(keyring.FromConfig, fx.As(new(ports.KeyStore)))),
)
