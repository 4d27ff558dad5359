package keyring_test

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func TestAuthenticate(t *testing.T) {
	ring := keyring.New([]keyring.Entry{
		{Account: "acme", Domain: "live", Digest: keyring.Digest("live-key")},
		{Account: "acme", Domain: "test", Digest: keyring.Digest("test-key")},
		{Account: "globex", Domain: "live", Digest: keyring.Digest("globex-key")},
	})
	for _, tc := range []struct {
		key  string
		want domain.Scope
	}{
		{"live-key", domain.Scope{Account: "acme", Domain: "live"}},
		{"test-key", domain.Scope{Account: "acme", Domain: "test"}},
		{"globex-key", domain.Scope{Account: "globex", Domain: "live"}},
	} {
		p, err := ring.Authenticate(context.Background(), tc.key)
		if err != nil {
			t.Fatalf("Authenticate(%q): %v", tc.key, err)
		}
		if p.Scope != tc.want || p.Name != "" || p.ReadOnly {
			t.Errorf("Authenticate(%q) = %+v, want scope %+v", tc.key, p, tc.want)
		}
		digest := keyring.Digest(tc.key)
		if want := "key_" + hex.EncodeToString(digest[:])[:12]; p.KeyID != want {
			t.Errorf("Authenticate(%q): key id %q, want %q: the start of the key's sha256 entry", tc.key, p.KeyID, want)
		}
	}
	for _, key := range []string{"", "live-ke", "live-key ", "LIVE-KEY", "unknown"} {
		if p, err := ring.Authenticate(context.Background(), key); !errors.Is(err, ports.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %+v, %v; want ErrUnauthenticated", key, p, err)
		}
	}
}

func TestEmptyKeyringRefusesEverything(t *testing.T) {
	ring := keyring.New(nil)
	for _, key := range []string{"", "anything"} {
		if _, err := ring.Authenticate(context.Background(), key); !errors.Is(err, ports.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) on an empty keyring: %v, want ErrUnauthenticated", key, err)
		}
	}
}

func TestNewCopiesEntries(t *testing.T) {
	entries := []keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest("k")}}
	ring := keyring.New(entries)
	entries[0].Account = "changed"
	p, err := ring.Authenticate(context.Background(), "k")
	if err != nil || p.Account != "acme" {
		t.Fatalf("Authenticate after the caller changed its slice = %+v, %v; want account acme", p, err)
	}
}

// FromConfig must accept both plaintext and pre-hashed configured keys.
func TestFromConfig(t *testing.T) {
	keys, err := app.ParseAPIKeys("acme:live:plain-key,globex:test:sha256:" + hexDigest("hashed-key"))
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.FromConfig(keyring.Config{Keys: keys})
	for key, want := range map[string]domain.Scope{
		"plain-key":  {Account: "acme", Domain: "live"},
		"hashed-key": {Account: "globex", Domain: "test"},
	} {
		p, err := ring.Authenticate(context.Background(), key)
		if err != nil || p.Scope != want {
			t.Errorf("Authenticate(%q) = %+v, %v; want %+v", key, p, err, want)
		}
	}
}

func hexDigest(key string) string {
	d := keyring.Digest(key)
	return hex.EncodeToString(d[:])
}
