package keyring_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/keyring/keyringfx"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// The module's KeyStore holds the keys of the graph's keyring.Config, and no other.
func TestModuleProvidesTheConfiguredKeys(t *testing.T) {
	key, err := app.NewAPIKey("acme", "live", "rk_module_test_key")
	if err != nil {
		t.Fatal(err)
	}
	var keys ports.KeyStore
	fxtest.New(t, fx.NopLogger, keyringfx.Module, fx.Supply(keyring.Config{Keys: []app.APIKey{key}}), fx.Populate(&keys)).
		RequireStart().RequireStop()
	p, err := keys.Authenticate(context.Background(), "rk_module_test_key")
	if err != nil || p.Scope != (domain.Scope{Account: "acme", Domain: "live"}) {
		t.Errorf("Authenticate = %+v, %v; want acme/live", p, err)
	}
	if _, err := keys.Authenticate(context.Background(), "rk_some_other_key"); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("an unconfigured key: %v, want ports.ErrUnauthenticated", err)
	}
}
