package portal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var acme = domain.Scope{Account: "acme", Domain: domain.DomainLive}

func newSigner(t *testing.T, clock ports.Clock) *portal.Signer {
	t.Helper()
	s, err := portal.NewSigner([]byte(secret), clock)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignerRoundTrip(t *testing.T) {
	clock := conformance.NewFakeClock(time.Date(2025, 3, 14, 12, 0, 0, 500, time.UTC))
	s := newSigner(t, clock)
	token, expiresAt, err := s.Issue(acme, "shop", clock.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, 3, 14, 13, 0, 0, 0, time.UTC); !expiresAt.Equal(want) {
		t.Errorf("expiresAt %s, want %s (whole seconds)", expiresAt, want)
	}
	p, err := s.Verify(token)
	if err != nil {
		t.Fatal(err)
	}
	if want := (domain.Principal{Scope: acme, Name: "shop", ReadOnly: true}); p != want {
		t.Errorf("principal %+v, want %+v", p, want)
	}

	whole, _, err := s.Issue(acme, "", clock.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Verify(whole); err != nil || p != (domain.Principal{Scope: acme, ReadOnly: true}) {
		t.Errorf("whole-account token: %+v, %v; want the read-only principal of acme without a name", p, err)
	}

	clock.Set(expiresAt)
	_, err = s.Verify(token)
	if !errors.Is(err, ports.ErrUnauthenticated) || !errors.Is(err, portal.ErrSessionExpired) ||
		errors.Is(err, portal.ErrSessionInvalid) || !errors.Is(err, jwt.ErrTokenExpired) {
		t.Errorf("at expiry: %v, want ErrUnauthenticated, ErrSessionExpired and ErrTokenExpired", err)
	}
}

func TestSignerRefusesShortSecrets(t *testing.T) {
	if _, err := portal.NewSigner(make([]byte, portal.MinSecretBytes-1), conformance.NewFakeClock(time.Now())); err == nil {
		t.Error("a 31-byte secret was accepted")
	}
}

// Tokens that are not what Issue makes: other algorithms, issuers, audiences,
// missing claims, a future issue time.
func TestSignerRefusesForeignTokens(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	s := newSigner(t, conformance.NewFakeClock(now))
	valid := jwt.MapClaims{"acc": "acme", "dom": "live", "app": "shop", "iss": "reqlog", "aud": "reqlog-portal",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	sign := func(method jwt.SigningMethod, key any, edits jwt.MapClaims) string {
		claims := jwt.MapClaims{}
		for k, v := range valid {
			claims[k] = v
		}
		for k, v := range edits {
			if v == nil {
				delete(claims, k)
			} else {
				claims[k] = v
			}
		}
		signed, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return portal.TokenPrefix + signed
	}
	hs := func(edits jwt.MapClaims) string { return sign(jwt.SigningMethodHS256, []byte(secret), edits) }
	if _, err := s.Verify(hs(nil)); err != nil {
		t.Fatalf("the baseline token is refused: %v", err)
	}
	if p, err := s.Verify(hs(jwt.MapClaims{"app": nil, "all": true})); err != nil || p.Name != "" {
		t.Fatalf("the whole-account token is refused: %+v, %v", p, err)
	}
	for name, token := range map[string]string{
		"alg none":          sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil),
		"HS512":             sign(jwt.SigningMethodHS512, []byte(secret), nil),
		"other issuer":      hs(jwt.MapClaims{"iss": "someone"}),
		"other audience":    hs(jwt.MapClaims{"aud": "reqlog-admin"}),
		"no expiry":         hs(jwt.MapClaims{"exp": nil}),
		"issued later":      hs(jwt.MapClaims{"iat": now.Add(time.Minute).Unix()}),
		"no application":    hs(jwt.MapClaims{"app": nil}),
		"empty application": hs(jwt.MapClaims{"app": ""}),
		"app and all":       hs(jwt.MapClaims{"all": true}),
		"all false, no app": hs(jwt.MapClaims{"app": nil, "all": false}),
		"no account":        hs(jwt.MapClaims{"acc": ""}),
		"unknown domain":    hs(jwt.MapClaims{"dom": "staging"}),
		"without prefix":    strings.TrimPrefix(hs(nil), portal.TokenPrefix),
		"wrong secret":      sign(jwt.SigningMethodHS256, []byte(strings.Repeat("k", 32)), nil),
		"padded base64 sig": hs(nil) + "=",
		// Forged and expired: invalid, never "expired", which would tell that
		// the forgery got as far as the claims.
		"wrong secret, expired": sign(jwt.SigningMethodHS256, []byte(strings.Repeat("k", 32)), jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()}),
		"alg none, expired":     sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()}),
	} {
		_, err := s.Verify(token)
		if !errors.Is(err, ports.ErrUnauthenticated) || !errors.Is(err, portal.ErrSessionInvalid) || errors.Is(err, portal.ErrSessionExpired) {
			t.Errorf("%s: %v, want ErrUnauthenticated and ErrSessionInvalid, not ErrSessionExpired", name, err)
		}
	}
}

func TestKeyStore(t *testing.T) {
	clock := conformance.NewFakeClock(time.Now())
	s := newSigner(t, clock)
	const prefixedKey = portal.TokenPrefix + "an-api-key-that-looks-like-a-token"
	keys := portal.NewKeyStore(keyring.New([]keyring.Entry{
		{Account: "acme", Domain: "live", Digest: keyring.Digest("rk_live")},
		{Account: "acme", Domain: "test", Digest: keyring.Digest(prefixedKey)},
	}), s)
	ctx := context.Background()

	if p, err := keys.Authenticate(ctx, "rk_live"); err != nil || p != (domain.Principal{Scope: acme, KeyID: keyring.KeyID(keyring.Digest("rk_live"))}) {
		t.Errorf("API key: %+v, %v", p, err)
	}
	token, _, err := s.Issue(acme, "shop", clock.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := keys.Authenticate(ctx, token); err != nil || p != (domain.Principal{Scope: acme, Name: "shop", ReadOnly: true}) {
		t.Errorf("token: %+v, %v", p, err)
	}
	// A configured key with the token prefix is not shadowed.
	if p, err := keys.Authenticate(ctx, prefixedKey); err != nil || p.Domain != domain.DomainTest || p.ReadOnly {
		t.Errorf("prefixed API key: %+v, %v", p, err)
	}
	for _, key := range []string{"", "rk_unknown", portal.TokenPrefix + "x.y.z"} {
		if _, err := keys.Authenticate(ctx, key); !errors.Is(err, ports.ErrUnauthenticated) {
			t.Errorf("%q: %v, want ErrUnauthenticated", key, err)
		}
	}
	clock.Advance(2 * time.Hour)
	if _, err := keys.Authenticate(ctx, token); !errors.Is(err, portal.ErrSessionExpired) {
		t.Errorf("expired token: %v, want the token's own error (ErrSessionExpired)", err)
	}
}
