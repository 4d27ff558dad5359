package httpclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// faults answers the first len(plan) requests of method with the planned fault and
// forwards the rest; it records every Idempotency-Key it sees.
type faults struct {
	method string
	plan   []func(w http.ResponseWriter, r *http.Request, next http.Handler)

	mu   sync.Mutex
	seen int
	keys []string
}

func (f *faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != f.method {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
		var fault func(http.ResponseWriter, *http.Request, http.Handler)
		if f.seen < len(f.plan) {
			fault = f.plan[f.seen]
		}
		f.seen++
		f.mu.Unlock()
		if fault == nil {
			next.ServeHTTP(w, r)
			return
		}
		fault(w, r, next)
	})
}

func (f *faults) attempts() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen, append([]string(nil), f.keys...)
}

func reply(status int, retryAfter string) func(http.ResponseWriter, *http.Request, http.Handler) {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"status":false,"message":"try again"}`))
	}
}

// storeThenLoseReply lets the service store the batch, then replaces its reply by a
// 503, as when a reply is lost on the way back.
func storeThenLoseReply(w http.ResponseWriter, r *http.Request, next http.Handler) {
	next.ServeHTTP(httptest.NewRecorder(), r)
	reply(http.StatusServiceUnavailable, "0")(w, r, next)
}

// dropConnection closes the connection without any reply.
func dropConnection(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func TestSubmitRetriesWithTheSameIdempotencyKey(t *testing.T) {
	f := &faults{method: http.MethodPost, plan: []func(http.ResponseWriter, *http.Request, http.Handler){
		storeThenLoseReply, reply(http.StatusTooManyRequests, "0"), dropConnection,
	}}
	svc := httpclienttest.Start(t, f.wrap)
	c := newClient(t, svc.URL)
	ids := submitN(t, c, 3)

	attempts, keys := f.attempts()
	if attempts != 4 {
		t.Fatalf("%d attempts, want 3 failures and a success", attempts)
	}
	for _, k := range keys {
		if k == "" || k != keys[0] {
			t.Fatalf("Idempotency-Keys %q: want one key on every attempt", keys)
		}
	}
	page, err := c.List(context.Background(), httpclient.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 3 {
		t.Fatalf("%d messages stored for a batch of 3 retried 3 times", len(page.Messages))
	}
	for i, m := range page.Messages { // newest first: exchange 2 first
		if want := ids[2-i]; m.ID != want.ID || m.Reference != want.Reference {
			t.Errorf("stored %s/%s, the retry returned %+v", m.ID, m.Reference, want)
		}
	}

	submitN(t, c, 1)
	if _, keys = f.attempts(); keys[len(keys)-1] == keys[0] {
		t.Errorf("a new Submit reused the key %q", keys[0])
	}
}

func TestGetRetriesUnavailable(t *testing.T) {
	f := &faults{method: http.MethodGet, plan: []func(http.ResponseWriter, *http.Request, http.Handler){
		reply(http.StatusServiceUnavailable, "0"), reply(http.StatusServiceUnavailable, ""),
	}}
	svc := httpclienttest.Start(t, f.wrap)
	c := newClient(t, svc.URL)
	if _, err := c.List(context.Background(), httpclient.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if attempts, _ := f.attempts(); attempts != 3 {
		t.Errorf("%d attempts, want 2 retries", attempts)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	always503 := make([]func(http.ResponseWriter, *http.Request, http.Handler), 10)
	for i := range always503 {
		always503[i] = reply(http.StatusServiceUnavailable, "0")
	}
	f := &faults{method: http.MethodPost, plan: always503}
	svc := httpclienttest.Start(t, f.wrap)
	c := newClient(t, svc.URL, httpclient.WithRetryPolicy(httpclient.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}))
	_, err := c.Submit(context.Background(), exchange(0))
	var apiErr *httpclient.APIError
	if !errors.Is(err, ports.ErrUnavailable) || !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Message != "try again" {
		t.Errorf("err = %v, want the last 503", err)
	}
	if attempts, _ := f.attempts(); attempts != 3 {
		t.Errorf("%d attempts, want MaxAttempts = 3", attempts)
	}
}

func TestNoRetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(http.ResponseWriter, *http.Request, http.Handler)
		is    error
		// retryAfter is a lower bound of what the error reports.
		retryAfter time.Duration
	}{
		{"bad request", reply(http.StatusBadRequest, ""), nil, 0},
		{"server bug", reply(http.StatusInternalServerError, ""), nil, 0},
		{"Retry-After beyond MaxDelay", reply(http.StatusTooManyRequests, "3600"), ports.ErrOverloaded, time.Hour},
		{"Retry-After date beyond MaxDelay", reply(http.StatusServiceUnavailable,
			time.Now().Add(2*time.Hour).UTC().Format(http.TimeFormat)), ports.ErrUnavailable, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faults{method: http.MethodPost, plan: []func(http.ResponseWriter, *http.Request, http.Handler){tc.fault}}
			svc := httpclienttest.Start(t, f.wrap)
			_, err := newClient(t, svc.URL).Submit(context.Background(), exchange(0))
			var apiErr *httpclient.APIError
			if !errors.As(err, &apiErr) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("err = %v", err)
			}
			if attempts, _ := f.attempts(); attempts != 1 {
				t.Errorf("%d attempts, want no retry", attempts)
			}
			if apiErr.RetryAfter < tc.retryAfter || (tc.retryAfter == 0 && apiErr.RetryAfter != 0) {
				t.Errorf("RetryAfter = %v, want at least %v", apiErr.RetryAfter, tc.retryAfter)
			}
		})
	}
}

// cancelAfterReply cancels the request's context once a whole reply has arrived,
// so the client sees that reply and then a cancelled wait before its retry.
type cancelAfterReply struct{ cancel context.CancelFunc }

func (c cancelAfterReply) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.cancel()
	return resp, err
}

func TestRetryWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &faults{method: http.MethodGet, plan: []func(http.ResponseWriter, *http.Request, http.Handler){
		reply(http.StatusServiceUnavailable, "2"),
	}}
	svc := httpclienttest.Start(t, f.wrap)
	c := newClient(t, svc.URL, httpclient.WithHTTPClient(&http.Client{Transport: cancelAfterReply{cancel}}))
	_, err := c.Get(ctx, "msg_AAAAAAAAAAAA")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("err = %v, want the 503 and context.Canceled", err)
	}
	if attempts, _ := f.attempts(); attempts != 1 {
		t.Errorf("%d attempts after the context ended", attempts)
	}
}

func TestServiceDownIsUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := newClient(t, url, httpclient.WithRetryPolicy(httpclient.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}))
	if _, err := c.Submit(context.Background(), exchange(0)); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("err = %v, want ports.ErrUnavailable", err)
	}
}

// The spec's illustrated submit reply carries its text under "messages".
func TestToleratesMessagesForTheText(t *testing.T) {
	var body string
	var status int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	ctx := context.Background()

	status, body = 200, `{"status": true, "messages": "Logs were successfully ingested and should show up shortly"}`
	if ids, err := c.Submit(ctx, exchange(0)); err != nil || ids != nil {
		t.Errorf("illustrated reply: %v, %v; want success without identities", ids, err)
	}
	status, body = 200, `{"status": true, "messages": "Logs were successfully ingested", "data": [{"id": "0190b5a2-7d4e-7c3a-9b1e-1234567890ab", "reference": "msg_AbCdEfGh1234"}]}`
	if ids, err := c.Submit(ctx, exchange(0)); err != nil || len(ids) != 1 || ids[0].Reference != "msg_AbCdEfGh1234" {
		t.Errorf("with data: %v, %v", ids, err)
	}
	status, body = 200, `{"status": false, "messages": "quota exceeded"}`
	if _, err := c.Submit(ctx, exchange(0)); err == nil {
		t.Error(`"status": false was taken for success`)
	}
	status, body = 401, `{"status": false, "messages": "bad key"}`
	var apiErr *httpclient.APIError
	if _, err := c.Submit(ctx, exchange(0)); !errors.As(err, &apiErr) || apiErr.Message != "bad key" {
		t.Errorf("error text under messages: %v", err)
	}
	status, body = 502, `<html>bad gateway</html>`
	if _, err := c.Submit(ctx, exchange(0)); !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Message != "<html>bad gateway</html>" {
		t.Errorf("non-JSON error: %v", err)
	}
	status, body = 200, `{"status": true, "message": "ok", "data": [{"id": "a", "reference": "b"}, {"id": "c", "reference": "d"}]}`
	if _, err := c.Submit(ctx, exchange(0)); err == nil {
		t.Error("two identities for one exchange were accepted")
	}
}

func TestAPIErrorSentinels(t *testing.T) {
	for status, sentinel := range map[int]error{
		401: ports.ErrUnauthenticated, 404: ports.ErrNotFound, 413: domain.ErrTooLarge,
		429: ports.ErrOverloaded, 503: ports.ErrUnavailable,
	} {
		err := error(&httpclient.APIError{StatusCode: status})
		if !errors.Is(err, sentinel) {
			t.Errorf("%d does not match %v", status, sentinel)
		}
		if errors.Is(&httpclient.APIError{StatusCode: 500}, sentinel) {
			t.Errorf("500 matches %v", sentinel)
		}
	}
	var invalid *domain.ValidationError
	if errors.As(&httpclient.APIError{StatusCode: 404}, &invalid) {
		t.Error("a 404 is a ValidationError")
	}
}
