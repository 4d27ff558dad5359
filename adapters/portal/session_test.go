package portal_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func TestParseSessionRequest(t *testing.T) {
	for _, tc := range []struct {
		body string
		want portal.SessionRequest
	}{
		{`{"name":"shop"}`, portal.SessionRequest{Name: "shop"}},
		{`{"name":"  shop  ","expires_in":60}`, portal.SessionRequest{Name: "shop", ExpiresIn: time.Minute}},
		{`{"app":"sdk","expires_in":604800}`, portal.SessionRequest{Name: "sdk", ExpiresIn: 7 * 24 * time.Hour}},
		{`{"name":"shop","app":"other"}`, portal.SessionRequest{Name: "shop"}},
		{`{"name":null,"app":"sdk"}`, portal.SessionRequest{Name: "sdk"}},
		{`{"name":"shop","expires_in":3600.0,"extra":true}`, portal.SessionRequest{Name: "shop", ExpiresIn: time.Hour}},
		{`{"name":"shop","expires_in":null}`, portal.SessionRequest{Name: "shop"}},
		{`{"name":"` + strings.Repeat("é", 200) + `"}`, portal.SessionRequest{Name: strings.Repeat("é", 200)}},
		// Without a name: the whole account and domain.
		{`{}`, portal.SessionRequest{}},
		{``, portal.SessionRequest{}}, // no body at all: the defaults
		{" \n", portal.SessionRequest{}},
		{`{"name":null,"expires_in":600}`, portal.SessionRequest{ExpiresIn: 10 * time.Minute}},
	} {
		got, err := portal.ParseSessionRequest([]byte(tc.body))
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.body, got, err, tc.want)
		}
	}
}

func TestParseSessionRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		body   string
		fields []string
	}{
		{`null`, nil},
		{`[]`, nil},
		{`"shop"`, nil},
		{`{"name":"shop"`, nil},
		{`{"name":""}`, []string{"name"}},
		{`{"name":" \t "}`, []string{"name"}},
		{`{"app":""}`, []string{"app"}},
		{`{"name":["shop"]}`, []string{"name"}},
		{`{"name":"` + strings.Repeat("x", 201) + `"}`, []string{"name"}},
		{`{"name":"shop","expires_in":59}`, []string{"expires_in"}},
		{`{"name":"shop","expires_in":0}`, []string{"expires_in"}},
		{`{"name":"shop","expires_in":-3600}`, []string{"expires_in"}},
		{`{"name":"shop","expires_in":604801}`, []string{"expires_in"}},
		{`{"name":"shop","expires_in":90.5}`, []string{"expires_in"}},
		{`{"name":"shop","expires_in":"3600"}`, []string{"expires_in"}},
		{`{"name":"shop","expires_in":1e300}`, []string{"expires_in"}},
		{`{"expires_in":true}`, []string{"expires_in"}},
		{`{"name":7,"expires_in":true}`, []string{"name", "expires_in"}},
	} {
		_, err := portal.ParseSessionRequest([]byte(tc.body))
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) || invalid.Message == "" {
			t.Errorf("%s: %v, want a ValidationError", tc.body, err)
			continue
		}
		var fields []string
		for _, f := range invalid.Fields {
			fields = append(fields, f.Field)
			if f.Message == "" {
				t.Errorf("%s: field %s without a message", tc.body, f.Field)
			}
		}
		if !slices.Equal(fields, tc.fields) {
			t.Errorf("%s: fields %v, want %v", tc.body, fields, tc.fields)
		}
	}
}

func newPortal(t *testing.T, cfg portal.Config) (*portal.Portal, *conformance.FakeClock) {
	t.Helper()
	clock := conformance.NewFakeClock(time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC))
	if cfg.Secret == nil {
		cfg.Secret = []byte(secret)
	}
	p, err := portal.New(cfg, clock)
	if err != nil {
		t.Fatal(err)
	}
	return p, clock
}

func TestCreateSession(t *testing.T) {
	p, clock := newPortal(t, portal.Config{})
	key := domain.Principal{Scope: acme}
	r := httptest.NewRequest("POST", "http://reqlog.internal:8080/v1/portal/sessions", nil)

	s, err := p.CreateSession(key, portal.SessionRequest{Name: " shop "}, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://reqlog.internal:8080/portal#token=" + s.Token; s.URL != want {
		t.Errorf("URL %q, want %q", s.URL, want)
	}
	if want := clock.Now().Add(portal.DefaultSessionTTL); !s.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt %s, want %s", s.ExpiresAt, want)
	}
	principal, err := p.KeyStore(nil).Authenticate(t.Context(), s.Token)
	if err != nil || principal.Name != "shop" {
		t.Errorf("the token authenticates as %+v, %v; want application shop", principal, err)
	}

	// Without a name: a read-only session over the whole account and domain.
	all, err := p.CreateSession(key, portal.SessionRequest{}, r)
	if err != nil {
		t.Fatal(err)
	}
	principal, err = p.KeyStore(nil).Authenticate(t.Context(), all.Token)
	if want := (domain.Principal{Scope: acme, ReadOnly: true}); err != nil || principal != want {
		t.Errorf("the whole-account token authenticates as %+v, %v; want %+v", principal, err, want)
	}

	r.TLS = &tls.ConnectionState{}
	if s, _ := p.CreateSession(key, portal.SessionRequest{Name: "shop"}, r); !strings.HasPrefix(s.URL, "https://reqlog.internal:8080/portal#") {
		t.Errorf("over TLS: URL %q", s.URL)
	}

	for name, tc := range map[string]struct {
		principal domain.Principal
		req       portal.SessionRequest
		want      error
	}{
		"read-only principal":   {domain.Principal{Scope: acme, ReadOnly: true}, portal.SessionRequest{Name: "shop"}, ports.ErrForbidden},
		"one application's":     {domain.Principal{Scope: acme, Name: "shop"}, portal.SessionRequest{Name: "shop"}, ports.ErrForbidden},
		"blank name":            {key, portal.SessionRequest{Name: " \t "}, nil},
		"lifetime out of range": {key, portal.SessionRequest{Name: "shop", ExpiresIn: 8 * 24 * time.Hour}, nil},
		"fractional lifetime":   {key, portal.SessionRequest{Name: "shop", ExpiresIn: 90500 * time.Millisecond}, nil},
	} {
		_, err := p.CreateSession(tc.principal, tc.req, r)
		var invalid *domain.ValidationError
		if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && !errors.As(err, &invalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Every link carries the base path, after the public URL or the request's
// origin: session links and alert links alike.
func TestLinksCarryTheBasePath(t *testing.T) {
	r := httptest.NewRequest("POST", "http://shop.internal:8080/logs/v1/portal/sessions", nil)
	key := domain.Principal{Scope: acme}
	expires := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		cfg                    portal.Config
		session, alert, onBase string
	}{
		{portal.Config{BasePath: "/logs"}, "http://shop.internal:8080/logs/portal#token=", "", "http://10.0.0.1:80/logs/portal?status_code=5xx#token="},
		{portal.Config{BasePath: "/logs/"}, "http://shop.internal:8080/logs/portal#token=", "", "http://10.0.0.1:80/logs/portal?status_code=5xx#token="},
		{portal.Config{BasePath: "/", PublicURL: "https://shop.example.com"}, "https://shop.example.com/portal#token=",
			"https://shop.example.com/portal?status_code=5xx#token=", "https://shop.example.com/portal?status_code=5xx#token="},
		{portal.Config{BasePath: "/admin/logs", PublicURL: "https://shop.example.com/app/"}, "https://shop.example.com/app/admin/logs/portal#token=",
			"https://shop.example.com/app/admin/logs/portal?status_code=5xx#token=", "https://shop.example.com/app/admin/logs/portal?status_code=5xx#token="},
	} {
		p, _ := newPortal(t, tc.cfg)
		s, err := p.CreateSession(key, portal.SessionRequest{Name: "shop"}, r)
		if err != nil || s.URL != tc.session+s.Token {
			t.Errorf("%+v: session URL %q, %v; want %q and the token", tc.cfg, s.URL, err, tc.session)
		}
		view := url.Values{"status_code": {"5xx"}}
		if link := p.PortalLink(key, view, expires); !strings.HasPrefix(link, tc.alert) || tc.alert == "" && link != "" {
			t.Errorf("%+v: alert link %q, want %q and a token", tc.cfg, link, tc.alert)
		}
		if link := p.Link("http://10.0.0.1:80", key, view, expires); !strings.HasPrefix(link, tc.onBase) {
			t.Errorf("%+v: alert link on the listen address %q, want %q and a token", tc.cfg, link, tc.onBase)
		}
	}
}

func TestCleanBasePath(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "/logs": "/logs", "/logs/": "/logs", "/a/b-c_d.e~f": "/a/b-c_d.e~f"} {
		if got, err := portal.CleanBasePath(in); err != nil || got != want {
			t.Errorf("CleanBasePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"logs", "//logs", "/logs//x", "/a/../b", "/./a", "/logs?x=1", "/logs#x", "/my logs", "/l%20gs", "/logs\n", "https://x/logs"} {
		if got, err := portal.CleanBasePath(bad); err == nil {
			t.Errorf("CleanBasePath(%q) = %q, want an error", bad, got)
		}
	}
}

// An embedder may pass no logger: a missing secret is then made up silently.
func TestFromConfigWithoutALogger(t *testing.T) {
	p, err := portal.FromConfig(portal.Config{}, conformance.NewFakeClock(time.Now()), nil)
	if err != nil || p == nil {
		t.Fatalf("FromConfig without a secret nor a logger: %v", err)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	clock := conformance.NewFakeClock(time.Now())
	for _, tc := range []struct {
		cfg   portal.Config
		field string
	}{
		{portal.Config{Secret: []byte("short")}, "Secret"},
		{portal.Config{Secret: []byte{}}, "Secret"},
		{portal.Config{PublicURL: "logs.example.com"}, "PublicURL"},
		{portal.Config{PublicURL: "ftp://logs.example.com"}, "PublicURL"},
		{portal.Config{PublicURL: "https://logs.example.com/?x=1"}, "PublicURL"},
		{portal.Config{PublicURL: "https://user:pw@logs.example.com"}, "PublicURL"},
		{portal.Config{BasePath: "logs"}, "BasePath"},
		{portal.Config{BasePath: "/logs/../admin"}, "BasePath"},
		{portal.Config{FrameAncestors: []string{"https://a.example.com; script-src *"}}, "FrameAncestors"},
		{portal.Config{FrameAncestors: []string{"'unsafe-inline'"}}, "FrameAncestors"},
		{portal.Config{FrameAncestors: []string{"'none'", "'self'"}}, "FrameAncestors"},
		{portal.Config{FrameAncestors: []string{"https://a.example.com,https://b.example.com"}}, "FrameAncestors"},
	} {
		if tc.cfg.Secret == nil {
			tc.cfg.Secret = []byte(secret)
		}
		_, err := portal.New(tc.cfg, clock)
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) || len(invalid.Fields) != 1 || invalid.Fields[0].Field != tc.field {
			t.Errorf("%+v: %v, want a ValidationError on %s", tc.cfg, err, tc.field)
		}
		if len(tc.cfg.Secret) > 0 && strings.Contains(fmt.Sprint(err), string(tc.cfg.Secret)) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
	for _, sources := range [][]string{nil, {"'none'"}, {"'self'", "https://app.example.com:8443", "*.example.org", "https:"}, {"'self' http://[::1]:3000"}} {
		if _, err := portal.New(portal.Config{Secret: []byte(secret), FrameAncestors: sources}, clock); err != nil {
			t.Errorf("%q: %v", sources, err)
		}
	}
}
