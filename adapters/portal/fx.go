package portal

import (
	"go.uber.org/fx"
	"go.uber.org/zap"

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

// FromConfig returns the portal of cfg. Without a secret it makes a random one and
// warns: sessions then end with the process and other replicas refuse them.
func FromConfig(cfg Config, clock ports.Clock, log *zap.Logger) (*Portal, error) {
	if len(cfg.Secret) == 0 {
		cfg.Secret = RandomSecret()
		log.Warn("REQLOG_PORTAL_SECRET is not set: portal sessions are signed with a random secret, " +
			"so they end when reqlogd restarts and other replicas refuse them")
	}
	return New(cfg, clock)
}
