package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapifx"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/keyring/keyringfx"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/app/appfx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

const otherKey = "rk_live_OtherAccountKey"

// serveAPI serves apiHandler over a real listener.
func serveAPI(t *testing.T, opts httpapi.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(apiHandler(opts))
	t.Cleanup(srv.Close)
	return srv
}

// apiHandler is the API on a memory store, with liveKey (acme/live) and otherKey
// (globex/live) configured.
func apiHandler(opts httpapi.Options) http.Handler {
	handler, _ := apiAdmitting(opts, app.DefaultAdmissionOptions())
	return handler
}

// apiAdmitting is apiHandler with the given admission, and its ingester.
func apiAdmitting(opts httpapi.Options, admission app.AdmissionOptions) (http.Handler, *app.Ingester) {
	store := memory.New()
	keys := keyring.New([]keyring.Entry{
		{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)},
		{Account: "globex", Domain: "live", Digest: keyring.Digest(otherKey)},
	})
	cfg := app.DefaultConfig()
	clock := conformance.NewFakeClock(start)
	ingest := app.NewIngester(store, cfg.Policy(), clock).LimitDecoding(admission)
	return httpapi.New(ingest, app.NewReader(store, cfg.Policy(), clock), keys, opts), ingest
}

// callAPI sends a request with key (none if "") and a JSON body, and returns the
// reply.
func callAPI(t *testing.T, method, url, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, reply
}

// get lists messages as key and returns the status and Retry-After.
func get(t *testing.T, base, key string) (int, string) {
	t.Helper()
	resp, body := callAPI(t, http.MethodGet, base+"/v1/messages", key, "")
	if resp.StatusCode == http.StatusTooManyRequests {
		var e errorJSON
		if err := json.Unmarshal(body, &e); err != nil || e.Status || e.Message == "" {
			t.Errorf("429 body %q is not the error envelope", body)
		}
	}
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

func TestRateLimitOverHTTP(t *testing.T) {
	clock := conformance.NewFakeClock(start)
	srv := serveAPI(t, httpapi.Options{RateLimiter: httpapi.NewRateLimiter(1, 2, clock.Now)})

	for i := range 2 {
		if status, _ := get(t, srv.URL, liveKey); status != http.StatusOK {
			t.Fatalf("request %d within the burst: %d", i+1, status)
		}
	}
	status, retry := get(t, srv.URL, liveKey)
	if status != http.StatusTooManyRequests || retry != "1" {
		t.Fatalf("request beyond the burst: %d, Retry-After %q; want 429, 1", status, retry)
	}
	// Other principals have buckets of their own; failed authentication takes none.
	if status, _ := get(t, srv.URL, otherKey); status != http.StatusOK {
		t.Errorf("another account was limited: %d", status)
	}
	for range 3 {
		if status, _ := get(t, srv.URL, "rk_live_WrongKey"); status != http.StatusUnauthorized {
			t.Errorf("unknown key: %d, want 401", status)
		}
	}
	// Refused requests use up nothing: one second later one token is back.
	clock.Advance(time.Second)
	if status, _ := get(t, srv.URL, liveKey); status != http.StatusOK {
		t.Errorf("after a second: %d, want 200", status)
	}
	if status, _ := get(t, srv.URL, liveKey); status != http.StatusTooManyRequests {
		t.Errorf("second request after a second: %d, want 429", status)
	}
}

func TestRetryAfterComesFromTheLimiter(t *testing.T) {
	clock := conformance.NewFakeClock(start)
	srv := serveAPI(t, httpapi.Options{RateLimiter: httpapi.NewRateLimiter(0.1, 1, clock.Now)}) // one every 10 s
	get(t, srv.URL, liveKey)
	clock.Advance(2500 * time.Millisecond)
	if status, retry := get(t, srv.URL, liveKey); status != http.StatusTooManyRequests || retry != "8" {
		t.Errorf("got %d, Retry-After %q; want 429 and 8 (7.5 s rounded up)", status, retry)
	}
	clock.Advance(7 * time.Second)
	if _, retry := get(t, srv.URL, liveKey); retry != "1" {
		t.Errorf("0.5 s before the next token: Retry-After %q, want at least 1", retry)
	}
}

func TestRateLimiterForgetsRefilledBuckets(t *testing.T) {
	clock := conformance.NewFakeClock(start)
	l := httpapi.NewRateLimiter(10, 5, clock.Now)
	for i := range 1000 {
		if ok, _ := l.Allow(strconv.Itoa(i)); !ok {
			t.Fatalf("key %d refused its first request", i)
		}
	}
	if l.Len() != 1000 {
		t.Fatalf("%d buckets, want 1000", l.Len())
	}
	clock.Advance(time.Minute)
	for range 5 {
		l.Allow("busy")
	}
	if n := l.Len(); n != 1 {
		t.Errorf("%d buckets after the sweep, want only the busy one", n)
	}
	if ok, _ := l.Allow("busy"); ok {
		t.Error("the sweep dropped a bucket that was not full")
	}
}

// The settings switch the limiter on and off in the real wiring.
func TestRateLimitSettings(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int // status of the second request
	}{
		{0.001, http.StatusTooManyRequests}, // one request per 1,000 s
		{0, http.StatusOK},                  // off
	} {
		t.Run(fmt.Sprint(c.rate), func(t *testing.T) {
			key, err := app.NewAPIKey("acme", "live", liveKey)
			if err != nil {
				t.Fatal(err)
			}
			var handler http.Handler
			svc := fxtest.New(t, fx.NopLogger, appfx.Module, keyringfx.Module, httpapifx.HandlerModule,
				fx.Supply(app.DefaultConfig(), keyring.Config{Keys: []app.APIKey{key}}, zap.NewNop(),
					httpapi.Config{RateLimit: c.rate, RateBurst: 1}),
				fx.Provide(func() ports.MessageStore { return memory.New() }),
				fx.Populate(&handler),
			)
			svc.RequireStart()
			defer svc.RequireStop()
			srv := httptest.NewServer(handler)
			defer srv.Close()
			get(t, srv.URL, liveKey)
			if status, _ := get(t, srv.URL, liveKey); status != c.want {
				t.Errorf("second request: %d, want %d", status, c.want)
			}
		})
	}
}
