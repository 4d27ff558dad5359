package keyring

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the keys of the graph's Config as the ports.KeyStore.
var Module = fx.Module("keyring",
	fx.Provide(fx.Annotate(FromConfig, fx.As(new(ports.KeyStore)))),
)

// Config is the keys the service accepts: cmd/reqlogd parses them from
// REQLOG_API_KEYS.
type Config struct {
	Keys []app.APIKey
}

// FromConfig returns a keyring of the configured keys.
func FromConfig(cfg Config) *Keyring {
	entries := make([]Entry, len(cfg.Keys))
	for i, k := range cfg.Keys {
		entries[i] = Entry{Account: k.Account, Domain: k.Domain, Digest: k.Digest}
	}
	return New(entries)
}
