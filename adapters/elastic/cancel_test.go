package elastic_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/conformance"
)

// A list and a statistics call whose caller goes away while Elasticsearch runs
// the search close the search's HTTP connection, which Elasticsearch takes as
// the signal to cancel the search task, and send it no retry: the request's
// context reaches the query.
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

	conformance.RunCancelledReads(t, s, scope, conformance.QueryWatch{Hold: holding.Store, Held: held, Left: left})
	if n := searches.Load(); n != 2 {
		t.Errorf("%d searches sent for two cancelled reads, want 2: a cancelled search was retried", n)
	}
}
