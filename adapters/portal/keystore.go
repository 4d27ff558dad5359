package portal

import (
	"context"
	"errors"
	"strings"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// KeyStore accepts portal session tokens besides the API keys of the KeyStore it
// decorates, so the API serves the portal page with its ordinary endpoints.
type KeyStore struct {
	keys   ports.KeyStore
	signer *Signer
}

var _ ports.KeyStore = (*KeyStore)(nil)

// NewKeyStore returns keys that also accept the tokens of signer.
func NewKeyStore(keys ports.KeyStore, signer *Signer) *KeyStore {
	return &KeyStore{keys: keys, signer: signer}
}

// Authenticate returns the read-only principal of a portal token (TokenPrefix) or
// the principal of an API key. A credential with the prefix that is not a valid
// token is still tried as an API key, so no configured key can be shadowed; if it
// is none, the token's error is returned (it says, for one, that it expired).
func (k *KeyStore) Authenticate(ctx context.Context, key string) (domain.Principal, error) {
	if !strings.HasPrefix(key, TokenPrefix) {
		return k.keys.Authenticate(ctx, key)
	}
	principal, tokenErr := k.signer.Verify(key)
	if tokenErr == nil {
		return principal, nil
	}
	principal, err := k.keys.Authenticate(ctx, key)
	if errors.Is(err, ports.ErrUnauthenticated) {
		return domain.Principal{}, tokenErr
	}
	return principal, err
}
