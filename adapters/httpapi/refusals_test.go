package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// A 401 says why: an unknown API key, an expired portal session, or a portal
// token that is not valid; never more (no claim, account or part of the token).
func TestUnauthorizedSaysWhy(t *testing.T) {
	clock := conformance.NewFakeClock(start)
	signer, err := portal.NewSigner([]byte(strings.Repeat("s", portal.MinSecretBytes)), clock)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := portal.NewSigner([]byte(strings.Repeat("f", portal.MinSecretBytes)), clock)
	if err != nil {
		t.Fatal(err)
	}
	keys := portal.NewKeyStore(keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}}), signer)
	f := newFixture(t, setup{keys: keys})
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	session, _, err := signer.Issue(scope, "shop", start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	forged, _, err := forger.Issue(scope, "shop", start.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	call := func(credential string) *errorJSON {
		rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: map[string]string{"Authorization": "Bearer " + credential}})
		if rec.Code == http.StatusOK {
			return nil
		}
		e := decodeError(t, rec, http.StatusUnauthorized)
		for _, part := range strings.Split(credential, ".") {
			if len(part) >= 8 && strings.Contains(rec.Body.String(), part) {
				t.Errorf("the refusal %s repeats part of the credential", rec.Body)
			}
		}
		if strings.Contains(rec.Body.String(), "acme") || len(e.Errors) > 0 {
			t.Errorf("the refusal %s says more than why", rec.Body)
		}
		return &e
	}
	if e := call(session); e != nil {
		t.Fatalf("a fresh session is refused: %s", e.Message)
	}
	wants := map[string]string{
		"forged":         "the portal session token is not valid",
		"garbled":        "the portal session token is not valid",
		"unknown key":    "the API key is not valid",
		"expired":        "the portal session has expired: open a new portal link",
		"forged, later":  "the portal session token is not valid",
		"garbled, later": "the portal session token is not valid",
	}
	for name, credential := range map[string]string{"forged": forged, "garbled": session[:len(session)-3] + "abc", "unknown key": "rk_live_nope"} {
		if e := call(credential); e == nil || e.Message != wants[name] {
			t.Errorf("%s: %+v, want %q", name, e, wants[name])
		}
	}
	clock.Advance(time.Minute)
	for name, credential := range map[string]string{"expired": session, "forged, later": forged, "garbled, later": session[:len(session)-3] + "abc"} {
		if e := call(credential); e == nil || e.Message != wants[name] {
			t.Errorf("%s: %+v, want %q", name, e, wants[name])
		}
	}
}
