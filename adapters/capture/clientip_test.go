package capture_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/reqlog/reqlog/adapters/capture"
)

func TestClientIP(t *testing.T) {
	private := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tc := range []struct {
		name      string
		opts      capture.Options
		remote    string
		forwarded []string
		want      string
	}{
		{"peer", capture.Options{}, "203.0.113.5:1234", nil, "203.0.113.5"},
		{"peer IPv6", capture.Options{}, "[2001:DB8::1]:443", nil, "2001:db8::1"},
		{"peer IPv4-mapped", capture.Options{}, "[::ffff:10.1.2.3]:80", nil, "10.1.2.3"},
		{"peer not an address", capture.Options{}, "@", nil, ""},
		{"header ignored unless asked", capture.Options{}, "10.0.0.1:1", []string{"198.51.100.7"}, "10.0.0.1"},
		{"one proxy assumed", capture.Options{ClientIPHeader: "X-Forwarded-For"}, "10.0.0.1:1",
			[]string{"1.1.1.1, 198.51.100.7"}, "198.51.100.7"},
		{"trusted chain", capture.Options{ClientIPHeader: "X-Forwarded-For", TrustedProxies: private}, "10.0.0.1:1",
			[]string{"1.1.1.1, 198.51.100.7", "10.0.0.9,fd00::2"}, "198.51.100.7"},
		{"untrusted peer", capture.Options{ClientIPHeader: "X-Forwarded-For", TrustedProxies: private}, "203.0.113.5:1",
			[]string{"198.51.100.7"}, "203.0.113.5"},
		{"all trusted", capture.Options{ClientIPHeader: "X-Forwarded-For", TrustedProxies: private}, "10.0.0.1:1",
			[]string{"10.0.0.3, 10.0.0.9"}, "10.0.0.3"},
		{"garbage voids the header", capture.Options{ClientIPHeader: "X-Forwarded-For", TrustedProxies: private}, "10.0.0.1:1",
			[]string{"198.51.100.7, unknown, 10.0.0.9"}, "10.0.0.1"},
		{"real ip with port", capture.Options{ClientIPHeader: "X-Real-Ip"}, "10.0.0.1:1",
			[]string{"198.51.100.7:5555"}, "198.51.100.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &fakeSubmitter{}
			rec := capture.New(sub, tc.opts)
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tc.remote
			for _, v := range tc.forwarded {
				req.Header.Add(tc.opts.ClientIPHeader, v)
			}
			if tc.opts.ClientIPHeader == "" {
				req.Header["X-Forwarded-For"] = tc.forwarded
			}
			rec.Middleware(http.HandlerFunc(okHandler)).ServeHTTP(httptest.NewRecorder(), req)
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := sub.exchanges()[0].IPAddress; got != tc.want {
				t.Errorf("client IP %q, want %q", got, tc.want)
			}
		})
	}
}
