package capture_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

const secret = "s3cr3t-token-9f8e"

// onlyReader hides io.WriterTo, so io.Copy into a ResponseWriter uses its ReadFrom.
type onlyReader struct{ io.Reader }

// transparencyCases: every handler must produce the same reply with and without
// the middleware, and check what was captured.
var transparencyCases = []struct {
	name    string
	handler http.HandlerFunc
	request func(url string) *http.Request
	check   func(t *testing.T, e domain.Exchange)
}{
	{
		name: "status headers and bodies",
		handler: func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Order", "7")
			w.Header().Add("Set-Cookie", "session="+secret)
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"echo":%s}`, body)
		},
		request: func(url string) *http.Request {
			req, _ := http.NewRequest(http.MethodPost, url+"/orders?id=7&x=a%20b", strings.NewReader(`{"item":"book"}`))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Cookie", "c="+secret)
			req.Header.Set("X-Api-Key", secret)
			req.Header.Set("Content-Type", "application/json")
			return req
		},
		check: func(t *testing.T, e domain.Exchange) {
			if e.Method != "POST" || e.Path != "/orders?id=7&x=a%20b" || e.IPAddress != "127.0.0.1" || e.Name != capture.DefaultName {
				t.Errorf("captured %s %s from %q named %q", e.Method, e.Path, e.IPAddress, e.Name)
			}
			if e.Request.Body != `{"item":"book"}` || e.Response.Body != `{"echo":{"item":"book"}}` || e.Response.StatusCode != 201 {
				t.Errorf("bodies %q / %q, status %d", e.Request.Body, e.Response.Body, e.Response.StatusCode)
			}
			for _, h := range []map[string][]string{e.Request.Header, e.Response.Header} {
				for _, name := range []string{"Authorization", "Cookie", "X-Api-Key", "Set-Cookie"} {
					for _, v := range h[name] {
						if v != domain.Mask {
							t.Errorf("%s captured as %q, want it masked", name, v)
						}
					}
				}
			}
			if e.Request.Header["Content-Type"][0] != "application/json" || e.Response.Header["X-Order"][0] != "7" || e.Request.Header["Host"] == nil {
				t.Errorf("headers %v / %v", e.Request.Header, e.Response.Header)
			}
			if raw, _ := json.Marshal(e); strings.Contains(string(raw), secret) {
				t.Errorf("the secret reached the submitter: %s", raw)
			}
		},
	},
	{
		name:    "implicit 200",
		handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") },
		check: func(t *testing.T, e domain.Exchange) {
			if e.Response.StatusCode != 200 || e.Response.Body != "hello" || e.Request.Body != "" {
				t.Errorf("captured %d %q", e.Response.StatusCode, e.Response.Body)
			}
		},
	},
	{
		name:    "nothing written",
		handler: func(http.ResponseWriter, *http.Request) {},
		check: func(t *testing.T, e domain.Exchange) {
			if e.Response.StatusCode != 200 || e.Response.Body != "" {
				t.Errorf("captured %d %q", e.Response.StatusCode, e.Response.Body)
			}
		},
	},
	{
		name: "early hints then the reply",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Link", "</app.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusAccepted)
		},
		check: func(t *testing.T, e domain.Exchange) {
			if e.Response.StatusCode != http.StatusAccepted {
				t.Errorf("captured %d, want the final 202", e.Response.StatusCode)
			}
		},
	},
	{
		name: "optional interfaces kept",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			_, flusher := w.(http.Flusher)
			_, hijacker := w.(http.Hijacker)
			_, readerFrom := w.(io.ReaderFrom)
			_, _ = fmt.Fprintf(w, "F=%t H=%t R=%t", flusher, hijacker, readerFrom)
		},
		check: func(t *testing.T, e domain.Exchange) {
			if e.Response.Body != "F=true H=true R=true" {
				t.Errorf("the handler saw %q", e.Response.Body)
			}
		},
	},
	{
		name: "ResponseController reaches the connection",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(time.Minute)
			err := errors.Join(rc.SetReadDeadline(deadline), rc.SetWriteDeadline(deadline), rc.EnableFullDuplex(), rc.Flush())
			_, _ = fmt.Fprint(w, err)
		},
		check: func(t *testing.T, e domain.Exchange) {
			if e.Response.Body != "<nil>" {
				t.Errorf("ResponseController calls failed: %s", e.Response.Body)
			}
		},
	},
	{
		name: "io.Copy uses ReadFrom",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.Copy(w, onlyReader{strings.NewReader(strings.Repeat("0123456789", 100))})
		},
		check: func(t *testing.T, e domain.Exchange) {
			want := strings.Repeat("0123456789", 4)[:smallCap] + "…[truncated by reqlog capture: 1000 bytes total]"
			if e.Response.Body != want {
				t.Errorf("captured %q, want %q", e.Response.Body, want)
			}
		},
	},
	{
		name: "hijacked connection",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			defer conn.Close()
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			_ = buf.Flush()
		},
		check: func(t *testing.T, e domain.Exchange) {
			if e.Response.StatusCode != http.StatusSwitchingProtocols || e.Response.Body != "" {
				t.Errorf("captured %d %q, want 101 and no body", e.Response.StatusCode, e.Response.Body)
			}
		},
	},
}

// smallCap keeps bodies short enough to see truncation in the table.
const smallCap = 32

func TestResponsesAreUnchanged(t *testing.T) {
	for _, tc := range transparencyCases {
		t.Run(tc.name, func(t *testing.T) {
			plain := httptest.NewServer(tc.handler)
			t.Cleanup(plain.Close)
			sub := &fakeSubmitter{}
			rec, wrapped := startRecorder(t, sub, capture.Options{MaxBodyBytes: smallCap}, tc.handler)

			request := tc.request
			if request == nil {
				request = func(url string) *http.Request { r, _ := http.NewRequest(http.MethodGet, url+"/", nil); return r }
			}
			want, wantBody := send(t, request(plain.URL))
			got, gotBody := send(t, request(wrapped.URL))
			if got.StatusCode != want.StatusCode || gotBody != wantBody {
				t.Errorf("with capture: %d %q; without: %d %q", got.StatusCode, gotBody, want.StatusCode, wantBody)
			}
			got.Header.Del("Date")
			want.Header.Del("Date")
			if !reflect.DeepEqual(got.Header, want.Header) || got.ContentLength != want.ContentLength {
				t.Errorf("headers with capture %v (length %d), without %v (length %d)", got.Header, got.ContentLength, want.Header, want.ContentLength)
			}

			conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
			if s := closeRecorder(t, rec); s.Submitted != 1 {
				t.Fatalf("stats %+v, want one submitted exchange", s)
			}
			tc.check(t, sub.exchanges()[0])
		})
	}
}

func TestStreamingReachesTheClientBeforeTheHandlerEnds(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	handler := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release // the client must see the first chunk while the handler waits here
		_, _ = io.WriteString(w, "second\n")
	}
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{}, http.HandlerFunc(handler))

	type result struct {
		first, rest string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		first, err := r.ReadString('\n')
		releaseOnce.Do(func() { close(release) })
		rest, _ := io.ReadAll(r)
		done <- result{first: first, rest: string(rest), err: err}
	}()
	select {
	case res := <-done:
		if res.err != nil || res.first != "first\n" || res.rest != "second\n" {
			t.Fatalf("client read %q then %q (%v)", res.first, res.rest, res.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first chunk never reached the client: the flush was held back")
	}
	conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
	closeRecorder(t, rec)
	if e := sub.exchanges()[0]; e.Response.Body != "first\nsecond\n" || e.Response.StatusCode != 200 {
		t.Errorf("captured %d %q", e.Response.StatusCode, e.Response.Body)
	}
}

func TestBodyTruncation(t *testing.T) {
	const limit = 33
	readN := func(n int64) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, n))
		}
	}
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		body     io.Reader
		wantReq  string
		wantResp string
	}{
		{"request read whole", readN(1 << 20), strings.NewReader(strings.Repeat("a", 100)),
			strings.Repeat("a", limit) + "…[truncated by reqlog capture: 100 bytes total]", ""},
		{"request under the cap", readN(1 << 20), strings.NewReader("small"), "small", ""},
		{"request never read", readN(0), strings.NewReader(strings.Repeat("a", 50)),
			"…[truncated by reqlog capture: 50 bytes total]", ""},
		{"chunked request read in part", readN(40), onlyReader{strings.NewReader(strings.Repeat("a", 100))},
			strings.Repeat("a", limit) + "…[truncated by reqlog capture: at least 40 bytes]", ""},
		{"response cut between characters", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("é", 40))
		}, nil, "", strings.Repeat("é", 16) + "…[truncated by reqlog capture: 80 bytes total]"},
		{"response by ReadFrom under the cap", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.(io.ReaderFrom).ReadFrom(onlyReader{strings.NewReader("short")})
		}, nil, "", "short"},
		{"response in many writes", func(w http.ResponseWriter, _ *http.Request) {
			for range 10 {
				_, _ = io.WriteString(w, "0123456789")
			}
		}, nil, "", strings.Repeat("0123456789", 4)[:limit] + "…[truncated by reqlog capture: 100 bytes total]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := &fakeSubmitter{}
			rec, srv := startRecorder(t, sub, capture.Options{MaxBodyBytes: limit}, tc.handler)
			req, err := http.NewRequest(http.MethodPost, srv.URL, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			send(t, req)
			conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
			closeRecorder(t, rec)
			e := sub.exchanges()[0]
			if e.Request.Body != tc.wantReq || e.Response.Body != tc.wantResp {
				t.Errorf("captured request %q, response %q\nwant request %q, response %q", e.Request.Body, e.Response.Body, tc.wantReq, tc.wantResp)
			}
		})
	}
}

func TestMaskedHeadersAreConfigurable(t *testing.T) {
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{MaskedHeaders: []string{"x-internal-token"}}, http.HandlerFunc(okHandler))
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("X-Internal-Token", secret)
	req.Header.Set("Authorization", "not masked here")
	send(t, req)
	conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
	closeRecorder(t, rec)
	h := sub.exchanges()[0].Request.Header
	if h["X-Internal-Token"][0] != domain.Mask || h["Authorization"][0] != "not masked here" {
		t.Errorf("captured %v: want only the configured header masked (the service masks its own list)", h)
	}
}

// The recorder masks as the service does: X_Api_Key is X-Api-Key to CGI, Rack,
// Django and PHP applications.
func TestMaskedHeadersMatchWithUnderscores(t *testing.T) {
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{}, http.HandlerFunc(okHandler))
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header["X_api_key"] = []string{secret}
	req.Header["X_visible"] = []string{"kept"}
	send(t, req)
	conformance.WaitFor(t, "the exchange to be recorded", func() bool { return rec.Stats().Captured == 1 })
	closeRecorder(t, rec)
	h := sub.exchanges()[0].Request.Header
	if h["X_api_key"][0] != domain.Mask || h["X_visible"][0] != "kept" {
		t.Errorf("captured %v: want X_api_key masked and X_visible kept", h)
	}
}

func TestSkipAndName(t *testing.T) {
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{
		Skip: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
		Name: func(r *http.Request) string { return r.Header.Get("X-Customer") },
	}, http.HandlerFunc(okHandler))
	for _, tc := range []struct{ path, customer string }{{"/healthz", "c1"}, {"/a", "c1"}, {"/b", ""}, {"/c", "  c2 "}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		req.Header.Set("X-Customer", tc.customer)
		if resp, body := send(t, req); resp.StatusCode != 200 || body != "ok" {
			t.Errorf("%s: %d %q", tc.path, resp.StatusCode, body)
		}
	}
	conformance.WaitFor(t, "the exchanges to be recorded", func() bool { return rec.Stats().Captured == 3 })
	closeRecorder(t, rec)
	var got []string
	for _, e := range sub.exchanges() {
		got = append(got, e.Path+"="+e.Name)
	}
	if want := []string{"/a=c1", "/b=" + capture.DefaultName, "/c=c2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("captured %v, want %v", got, want)
	}
}
