// Package keyring authenticates API keys against the keys of the configuration. It
// holds only SHA-256 digests and compares them in constant time.
package keyring

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Entry is one accepted key: the scope it acts in and the SHA-256 digest of the key.
type Entry struct {
	Account string
	Domain  string
	Digest  [sha256.Size]byte
}

// Digest returns what an Entry holds for key.
func Digest(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// KeyID names the key whose digest is digest in records of who did what:
// "key_" and the digest's first 12 hex digits, which an operator finds at the
// start of the key's sha256:<hex> entry and which tell nothing of the key.
func KeyID(digest [sha256.Size]byte) string { return "key_" + hex.EncodeToString(digest[:6]) }

// Keyring is a fixed set of keys.
type Keyring struct {
	entries []Entry
}

var _ ports.KeyStore = (*Keyring)(nil)

// New returns a keyring of entries (copied).
func New(entries []Entry) *Keyring {
	return &Keyring{entries: append([]Entry(nil), entries...)}
}

// Authenticate returns the principal of key, or an error wrapping
// ports.ErrUnauthenticated. Every entry is compared, whether or not an earlier one
// matched, so the time taken does not depend on which key was presented.
func (k *Keyring) Authenticate(_ context.Context, key string) (domain.Principal, error) {
	digest := Digest(key)
	matched, index := 0, 0
	for i := range k.entries {
		eq := subtle.ConstantTimeCompare(digest[:], k.entries[i].Digest[:])
		index = subtle.ConstantTimeSelect(eq&^matched, i, index)
		matched |= eq
	}
	if matched == 0 || key == "" {
		return domain.Principal{}, fmt.Errorf("unknown API key: %w", ports.ErrUnauthenticated)
	}
	e := k.entries[index]
	return domain.Principal{Scope: domain.Scope{Account: e.Account, Domain: e.Domain}, KeyID: KeyID(e.Digest)}, nil
}

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
