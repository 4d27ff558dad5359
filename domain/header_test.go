package domain

import (
	"net/textproto"
	"testing"
)

// The domain may not import net/textproto, so prove it agrees with it.
func TestCanonicalHeaderNameMatchesTextproto(t *testing.T) {
	for _, name := range []string{"content-type", "CONTENT-TYPE", "x-api-key", "X-API-KEY", "www-authenticate",
		"a", "-x-", "x--y", "accept-encoding", "dnt", "X_Under_score", "foo.bar", "1-a", "Ä"} {
		if !isToken(name) {
			continue
		}
		if got, want := CanonicalHeaderName(name), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Errorf("CanonicalHeaderName(%q) = %q, textproto says %q", name, got, want)
		}
	}
}

func FuzzCanonicalHeaderName(f *testing.F) {
	for _, seed := range []string{"content-type", "X-API-KEY", "a-b-c", "~!#"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !isToken(name) {
			return
		}
		if got, want := CanonicalHeaderName(name), textproto.CanonicalMIMEHeaderKey(name); got != want {
			t.Errorf("CanonicalHeaderName(%q) = %q, textproto says %q", name, got, want)
		}
	})
}

func TestMaskingIsConfigurable(t *testing.T) {
	p := DefaultPolicy()
	p.MaskedHeaders = []string{"x-secret"}
	b, err := p.ParseSubmissions([]byte(validItem("request", `{"header":{"X-Secret":"s","Authorization":"kept"}}`)), testNow)
	if err != nil {
		t.Fatal(err)
	}
	h := b.Submissions[0].Request.Header
	if h["X-Secret"][0] != Mask || h["Authorization"][0] != "kept" {
		t.Errorf("header = %v: want only X-Secret masked", h)
	}
}
