package portal

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/ports"
)

// Module provides the *Portal from the graph's Config and decorates the graph's
// ports.KeyStore to accept its session tokens. It needs a ports.Clock, a
// *zap.Logger and a ports.KeyStore; httpapi serves the portal when the graph has it.
var Module = fx.Options(
	fx.Module("portal", fx.Provide(FromConfig)),
	// Outside the module: decorations apply to the scope they are declared in, and
	// the API that consumes the KeyStore lives in another module.
	fx.Decorate(func(keys ports.KeyStore, p *Portal) ports.KeyStore { return p.KeyStore(keys) }),
)
