package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A POST body is JSON, in UTF-8 (RFC 8259), uncompressed. Anything else is a 415
// that names the problem, and nothing is stored.
func TestBodyMustBeUncompressedUTF8JSON(t *testing.T) {
	body := submission(start.Add(-time.Minute))
	var gzipped bytes.Buffer
	zw := gzip.NewWriter(&gzipped)
	if _, err := io.WriteString(zw, body); err != nil || zw.Close() != nil {
		t.Fatal("gzip failed")
	}
	for _, tc := range []struct {
		name, header, value, body string
		refusal                   string // "" when accepted
		codingRefused             bool
	}{
		{"no charset", "Content-Type", "application/json", body, "", false},
		{"utf-8", "Content-Type", "application/json; charset=utf-8", body, "", false},
		{"utf8, a common spelling", "Content-Type", "application/json; charset=UTF8", body, "", false},
		{"quoted UTF-8", "Content-Type", `Application/JSON;Charset="UTF-8"`, body, "", false},
		{"identity", "Content-Encoding", "identity", body, "", false},
		{"IDENTITY", "Content-Encoding", "IDENTITY", body, "", false},
		{"latin1", "Content-Type", "application/json;charset=latin1", body, "charset latin1 is not supported", false},
		{"quoted ISO-8859-1", "Content-Type", `application/json; charset="ISO-8859-1"`, body, "charset ISO-8859-1 is not supported", false},
		{"utf-16", "Content-Type", "application/json; charset=utf-16", body, "charset utf-16 is not supported", false},
		{"latin1 among malformed parameters", "Content-Type", "application/json; charset=latin1; x", body, "charset latin1 is not supported", false},
		{"gzip", "Content-Encoding", "gzip", gzipped.String(), "Content-Encoding gzip is not supported; send the body uncompressed", true},
		{"br on a plain body", "Content-Encoding", "br", body, "Content-Encoding br is not supported", true},
		{"gzip after identity", "Content-Encoding", "identity, gzip", body, "Content-Encoding gzip is not supported", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, setup{})
			rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: tc.body, header: authed(tc.header, tc.value)})
			stored := 1
			if tc.refusal == "" {
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
				}
			} else {
				stored = 0
				e := decodeError(t, rec, http.StatusUnsupportedMediaType)
				if !strings.Contains(e.Message, tc.refusal) {
					t.Errorf("message %q, want it to say %q", e.Message, tc.refusal)
				}
				if got := rec.Header().Get("Accept-Post"); got != "application/json" {
					t.Errorf("Accept-Post %q, want application/json", got)
				}
				if got, want := rec.Header().Get("Accept-Encoding"), map[bool]string{true: "identity"}[tc.codingRefused]; got != want {
					t.Errorf("Accept-Encoding %q, want %q", got, want)
				}
			}
			var page struct{ Messages []json.RawMessage }
			list := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: authed()})
			if err := json.Unmarshal(list.Body.Bytes(), &page); err != nil || len(page.Messages) != stored {
				t.Errorf("%d messages stored, want %d: %s", len(page.Messages), stored, list.Body)
			}
		})
	}
}

// countingKeys counts the keys looked up.
type countingKeys struct {
	ports.KeyStore
	lookups atomic.Int64
}

func (k *countingKeys) Authenticate(ctx context.Context, key string) (domain.Principal, error) {
	k.lookups.Add(1)
	return k.KeyStore.Authenticate(ctx, key)
}

// With two Authorization headers neither is used: which one counts would be a
// guess, so the request is refused before any key is looked up, rate limited or
// logged.
func TestExactlyOneAuthorizationHeader(t *testing.T) {
	const wrongKey = "rk_live_WrongGuessValue"
	keys := &countingKeys{KeyStore: keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}})}
	limiter := httpapi.NewRateLimiter(100, 100, nil)
	f := newFixture(t, setup{keys: keys, limiter: limiter})
	for _, values := range [][]string{
		{"Bearer " + wrongKey, "Bearer " + liveKey},
		{"Bearer " + liveKey, "Bearer " + wrongKey},
		{"Bearer " + liveKey, "Bearer " + liveKey},
		{liveKey, ""},
	} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req := httptest.NewRequest(method, "/v1/messages", strings.NewReader(submission(start)))
			req.Header.Set("Content-Type", "application/json")
			req.Header["Authorization"] = values
			rec := httptest.NewRecorder()
			f.handler.ServeHTTP(rec, req)
			e := decodeError(t, rec, http.StatusUnauthorized)
			if !strings.Contains(e.Message, "exactly one Authorization header") || rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s with %d Authorization headers: %q, WWW-Authenticate %q; want the rule stated and a challenge",
					method, len(values), e.Message, rec.Header().Get("WWW-Authenticate"))
			}
		}
	}
	if n := keys.lookups.Load(); n != 0 {
		t.Errorf("%d keys looked up", n)
	}
	if n := limiter.Len(); n != 0 {
		t.Errorf("the rate limiter holds %d buckets", n)
	}
	for _, entry := range f.logs.All() {
		line := entry.Message + fmt.Sprint(entry.ContextMap())
		if strings.Contains(line, liveKey) || strings.Contains(line, wrongKey) {
			t.Errorf("log entry %q holds a key", line)
		}
	}
	// One header is still fine.
	if rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: authed()}); rec.Code != http.StatusOK {
		t.Errorf("one Authorization header: %d %s", rec.Code, rec.Body)
	}
}

// startServer runs the API on a real server, as reqlogd does, and returns its
// address.
func startServer(t *testing.T) string {
	t.Helper()
	s := httpapi.NewServer("127.0.0.1:0", apiHandler(httpapi.Options{}), nil, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s.Addr().String()
}

// writeString puts raw on the wire as is.
func writeString(raw string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, raw)
		return err
	}
}

// The documented limit of 64 KiB covers the request line and header fields byte
// for byte, and the refusal is the API's JSON error, not net/http's plain text.
func TestHeaderLimitIsExactAndJSON(t *testing.T) {
	const limit = 64 << 10 // docs/contract.md
	addr := startServer(t)
	ofSize := func(size int) string {
		const head, end = "GET /healthz HTTP/1.1\r\nHost: reqlog.test\r\nX-Pad: ", "\r\n\r\n"
		return head + strings.Repeat("p", size-len(head)-len(end)) + end
	}
	if resp, reply := exchangeRaw(t, addr, writeString(ofSize(limit))); resp.StatusCode != http.StatusOK {
		t.Errorf("headers of exactly %d bytes: %d %s", limit, resp.StatusCode, reply)
	}
	resp, reply := exchangeRaw(t, addr, writeString(ofSize(limit+1)))
	var e errorJSON
	if err := json.Unmarshal(reply, &e); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || e.Status ||
		!strings.Contains(e.Message, "65536 bytes") || resp.Header.Get(httpapi.RequestIDHeader) == "" {
		t.Errorf("headers of %d bytes: %d %q; want 431, a JSON error stating the limit and a request id", limit+1, resp.StatusCode, reply)
	}
}

// What net/http answers itself, in plain text, before the API sees the request.
// docs/contract.md quotes these replies; this keeps the quotes true.
func TestServerRefusesUnparsableRequestsInPlainText(t *testing.T) {
	addr := startServer(t)
	for _, tc := range []struct {
		name, request string
		status        int
		body          string
	}{
		{"headers over the outer bound", "GET /healthz HTTP/1.1\r\nHost: reqlog.test\r\nX-Pad: " + strings.Repeat("p", 1<<20+4096) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", http.StatusBadRequest, "400 Bad Request: missing required Host header"},
		{"malformed Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", http.StatusBadRequest, "400 Bad Request: malformed Host header"},
		{"malformed request line", "GET\r\nHost: reqlog.test\r\n\r\n", http.StatusBadRequest, "400 Bad Request"},
		{"malformed header line", "GET /healthz HTTP/1.1\r\nHost: reqlog.test\r\nno colon\r\n\r\n", http.StatusBadRequest, "400 Bad Request"},
		{"unsupported Transfer-Encoding", "POST /v1/messages HTTP/1.1\r\nHost: reqlog.test\r\nTransfer-Encoding: gzip\r\n\r\n",
			http.StatusNotImplemented, "Unsupported transfer encoding"},
		{"unsupported HTTP version", "GET /healthz HTTP/2.0\r\nHost: reqlog.test\r\n\r\n", http.StatusHTTPVersionNotSupported,
			"505 HTTP Version Not Supported: unsupported protocol version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, reply := exchangeRaw(t, addr, writeString(tc.request))
			if resp.StatusCode != tc.status || string(reply) != tc.body || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("%d %q (%s), want %d %q in plain text", resp.StatusCode, reply, resp.Header.Get("Content-Type"), tc.status, tc.body)
			}
		})
	}
}
