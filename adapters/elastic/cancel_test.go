package elastic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// A list and a statistics call whose caller goes away while Elasticsearch runs
// the search return the context's error, close the search's HTTP connection
// (which Elasticsearch takes as the signal to cancel the search task) and send
// it no retry: the request's context reaches the query.
func TestCancelledReadsCloseTheirSearch(t *testing.T) {
	cfg := testConfig(t)
	target, err := neturl.Parse(cfg.Addresses[0])
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	var holding atomic.Bool
	var searches atomic.Int64
	held, left := make(chan struct{}, 4), make(chan struct{}, 4)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !holding.Load() || !strings.HasSuffix(r.URL.Path, "/_search") {
			forward.ServeHTTP(w, r)
			return
		}
		searches.Add(1)
		// Read to the body's end: only then does the server watch for the
		// client closing the connection.
		_, _ = io.Copy(io.Discard, r.Body)
		held <- struct{}{}
		select { // no answer: the search runs on, as a long one would
		case <-r.Context().Done(): // the client closed the connection
			left <- struct{}{}
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(proxy.Close)
	cfg.Addresses = []string{proxy.URL}
	s := openStore(t.Context(), t, cfg)

	now := time.Now()
	stats, err := domain.ParseStatsQuery(map[string][]string{}, now)
	if err != nil {
		t.Fatal(err)
	}
	stats.Scope = scope
	for _, read := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"list with q", func(ctx context.Context) error {
			_, err := s.List(ctx, domain.Query{Scope: scope, Limit: 20, Filter: domain.Filter{Text: "absent"}}, now)
			return err
		}},
		{"statistics", func(ctx context.Context) error {
			_, err := s.Stats(ctx, stats, now)
			return err
		}},
	} {
		holding.Store(true)
		searches.Store(0)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- read.run(ctx) }()
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("%s: finished before its search was held: %v", read.name, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no search reached the cluster", read.name)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s after its caller left: %v, want context.Canceled", read.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting for its search after its caller left", read.name)
		}
		select {
		case <-left:
		case <-time.After(30 * time.Second):
			t.Errorf("%s: the connection of the cancelled search stayed open", read.name)
		}
		if n := searches.Load(); n != 1 {
			t.Errorf("%s: %d searches sent, want 1: a cancelled search was retried", read.name, n)
		}
		holding.Store(false)
	}
}
