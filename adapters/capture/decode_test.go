package capture_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/conformance"
)

// encode is text compressed with coding as a server sends it.
func encode(t *testing.T, coding string, text []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	case "br":
		w = brotli.NewWriter(&buf)
	}
	if _, err := w.Write(text); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Bodies with a content coding are recorded as their text, the request's
// and the response's, so that the rules and a reader see what was sent; the
// cap bounds what is decoded, however far the stream would inflate.
func TestEncodedBodiesAreRecordedDecoded(t *testing.T) {
	const limit = 64 << 10
	secret := []byte(`{"email": "canary-decoded@example.com", "note": "` + strings.Repeat("words ", 50) + `"}`)
	zeros := make([]byte, 5<<20) // inflates 5 MiB from a few KB: decoded to the cap, no further
	random := make([]byte, 4<<10)
	_, _ = rand.Read(random)
	for _, tc := range []struct {
		name, coding, header string
		sent                 []byte
		want                 func(body string) bool
	}{
		{"gzip", "gzip", "gzip", secret, func(b string) bool { return b == string(secret) }},
		{"x-gzip, in capitals", "gzip", "X-GZIP", secret, func(b string) bool { return b == string(secret) }},
		{"deflate (zlib)", "deflate", "deflate", secret, func(b string) bool { return b == string(secret) }},
		{"deflate sent raw", "raw-deflate", "deflate", secret, func(b string) bool { return b == string(secret) }},
		{"br", "br", "br", secret, func(b string) bool { return b == string(secret) }},
		{"a bomb stops at the cap", "gzip", "gzip", zeros, func(b string) bool {
			return strings.HasPrefix(b, string(zeros[:limit])+"…[truncated by reqlog capture: gzip body, at least") && len(b) < limit+200
		}},
		{"incompressible bytes", "gzip", "gzip", random, func(b string) bool { return b == string(random) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			encoded := encode(t, tc.coding, tc.sent)
			sub := &fakeSubmitter{}
			decoders := capture.StandardDecoders()
			decoders["br"] = func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil } // as the proxy adds it
			rec, srv := startRecorder(t, sub, capture.Options{MaxBodyBytes: limit, Decoders: decoders}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Encoding", tc.header)
				_, _ = w.Write(encoded)
			}))
			req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(encoded))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Encoding", tc.header)
			send(t, req)
			conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
			closeRecorder(t, rec)
			e := sub.exchanges()[0]
			if !tc.want(e.Request.Body) || !tc.want(e.Response.Body) {
				t.Errorf("recorded request %.200q, response %.200q", e.Request.Body, e.Response.Body)
			}
		})
	}
}

// A compressed body cut at the cap is decoded as far as it goes, marked cut;
// one that does not decode at all, or names a coding not decoded, is recorded
// as it was captured.
func TestEncodedBodiesCutOrBroken(t *testing.T) {
	text := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 2000))
	encoded := encode(t, "gzip", text)
	random := make([]byte, 8<<10)
	_, _ = rand.Read(random)
	randomEncoded := encode(t, "gzip", random)
	for _, tc := range []struct {
		name, header string
		sent         []byte
		limit        int
		want         func(body string) bool
	}{
		{"cut at the cap", "gzip", encoded, len(encoded) / 2, func(b string) bool {
			return strings.HasPrefix(b, "the quick brown fox") && strings.Contains(b, "…[truncated by reqlog capture: gzip body, ")
		}},
		{"incompressible, cut at the cap", "gzip", randomEncoded, len(randomEncoded) / 2, func(b string) bool {
			return strings.Contains(b, "bytes decoded before it was cut]")
		}},
		{"not gzip at all", "gzip", []byte("plain text, mislabelled"), 1 << 10, func(b string) bool { return b == "plain text, mislabelled" }},
		{"a chain of codings", "gzip, br", []byte("kept as sent"), 1 << 10, func(b string) bool { return b == "kept as sent" }},
		{"an unknown coding", "zstd", []byte("kept as sent"), 1 << 10, func(b string) bool { return b == "kept as sent" }},
		{"br, which the middleware alone does not decode", "br", []byte("kept as sent"), 1 << 10, func(b string) bool { return b == "kept as sent" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &fakeSubmitter{}
			rec, srv := startRecorder(t, sub, capture.Options{MaxBodyBytes: tc.limit}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Encoding", tc.header)
				_, _ = w.Write(tc.sent)
			}))
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("Accept-Encoding", "identity") // the client reads the reply as sent
			send(t, req)
			conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
			closeRecorder(t, rec)
			if body := sub.exchanges()[0].Response.Body; !tc.want(body) {
				t.Errorf("recorded %.300q", body)
			}
		})
	}
}
