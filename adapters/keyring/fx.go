package keyring

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the configured keys (app.Config.APIKeys) as the ports.KeyStore.
var Module = fx.Module("keyring",
	fx.Provide(fx.Annotate(FromConfig, fx.As(new(ports.KeyStore)))),
)

// FromConfig returns a keyring of the configured keys.
func FromConfig(cfg app.Config) *Keyring {
	entries := make([]Entry, len(cfg.APIKeys))
	for i, k := range cfg.APIKeys {
		entries[i] = Entry{Account: k.Account, Domain: k.Domain, Digest: k.Digest}
	}
	return New(entries)
}
