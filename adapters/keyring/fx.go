package keyring

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/ports"
)

// Module provides the keys of the graph's Config as the ports.KeyStore.
var Module = fx.Module("keyring",
	fx.Provide(fx.Annotate(FromConfig, fx.As(new(ports.KeyStore)))),
)
