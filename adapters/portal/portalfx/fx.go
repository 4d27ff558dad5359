// Package portalfx wires the customer portal into an fx graph
// (cmd/reqlogd's); a program without fx calls portal.FromConfig or portal.New.
package portalfx

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the *portal.Portal from the graph's portal.Config and
// decorates the graph's ports.KeyStore to accept its session tokens. It needs a
// ports.Clock, a *zap.Logger and a ports.KeyStore; httpapi serves the portal
// when the graph has it.
var Module = fx.Options(
	fx.Module("portal", fx.Provide(portal.FromConfig)),
	// Outside the module: decorations apply to the scope they are declared in, and
	// the API that consumes the KeyStore lives in another module.
	fx.Decorate(func(keys ports.KeyStore, p *portal.Portal) ports.KeyStore { return p.KeyStore(keys) }),
)
