package elastic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// outageDeadline bounds how long any call may take to report a stopped node.
const outageDeadline = 20 * time.Second

// A stopped node makes every operation fail with ErrUnavailable, promptly; once
// the node is back, the same store works again without being reopened.
func TestStoppedNodeIsUnavailableThenRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dedicated Elasticsearch node")
	}
	node := elastictest.NewNode(t)
	cfg := elastic.Config{
		Addresses: []string{node.URL()}, IndexPrefix: randomPrefix(t), RefreshInterval: testRefresh,
		RequestTimeout: 5 * time.Second, PingTimeout: time.Second,
	}
	s := openStore(t.Context(), t, cfg)
	now := time.Now()
	before := message(t, now)
	if err := s.Append(t.Context(), []domain.Message{before}); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, s, now, before)

	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	during := message(t, now)
	for _, op := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Append", func(ctx context.Context) error { return s.Append(ctx, []domain.Message{during}) }},
		{"List", func(ctx context.Context) error {
			_, err := s.List(ctx, domain.Query{Scope: scope, Limit: 10}, now)
			return err
		}},
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, scope, before.ID, now); return err }},
		{"PurgeExpired", func(ctx context.Context) error { _, err := s.PurgeExpired(ctx, now); return err }},
		{"Ping", s.Ping},
	} {
		// The caller's context has no deadline: the store's own timeouts and
		// the refused connections must end the call.
		start := time.Now()
		err := op.call(context.Background())
		if took := time.Since(start); took > outageDeadline {
			t.Errorf("%s took %s to fail, want under %s", op.name, took, outageDeadline)
		}
		wantUnavailable(t, op.name+" while the node is stopped", err)
	}

	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the store working again after the node restarted", time.Minute, func() error {
		if err := s.Ping(t.Context()); err != nil {
			return err
		}
		if err := s.Append(t.Context(), []domain.Message{during}); err != nil {
			return err
		}
		page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 10}, now)
		if err != nil {
			return err
		}
		if len(page.Messages) != 2 {
			return fmt.Errorf("List shows %d messages, want 2", len(page.Messages))
		}
		return nil
	})
}

// A caller that gives up is not an outage.
func TestCancelledContextIsNotUnavailable(t *testing.T) {
	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	now := time.Now()
	for name, err := range map[string]error{
		"Append":       s.Append(ctx, []domain.Message{message(t, now)}),
		"List":         func() error { _, err := s.List(ctx, domain.Query{Scope: scope, Limit: 1}, now); return err }(),
		"Get":          func() error { _, err := s.Get(ctx, scope, "x", now); return err }(),
		"PurgeExpired": func() error { _, err := s.PurgeExpired(ctx, now); return err }(),
	} {
		if !errors.Is(err, context.Canceled) || errors.Is(err, ports.ErrUnavailable) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled and not ErrUnavailable", name, err)
		}
	}
}

func TestPingHealthyCluster(t *testing.T) {
	s, _ := newStore(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// New fails with ErrUnavailable when no node answers, within its timeout.
func TestNewWithoutCluster(t *testing.T) {
	cfg := elastic.Config{Addresses: []string{"http://127.0.0.1:1"}, RequestTimeout: 5 * time.Second}
	_, err := elastic.New(t.Context(), cfg)
	wantUnavailable(t, "New with no node at the address", err)
}

// An index dropped while New updates the existing ones (by another replica's
// purge job) makes Elasticsearch answer index_not_found, although the index
// needs no update: New asks again instead of failing the start, up to three
// times. A proxy in front of the real cluster gives that answer.
func TestNewSurvivesAnIndexDroppedMeanwhile(t *testing.T) {
	cfg := testConfig(t)
	newCluster(t).must(http.MethodPut, "/"+cfg.IndexPrefix+"-messages-2025.03.14", strictIndex, nil) // one to update
	proxy, updates := indexNotFoundProxy(t, cfg, func(attempt int) bool { return attempt == 1 })
	cfg.Addresses = []string{proxy}
	s := openStore(t.Context(), t, cfg)
	// The messages' mappings refused once and asked again, then the rollups'.
	if updates("_mapping") != 3 || updates("_settings") != 2 {
		t.Fatalf("%d mapping and %d settings updates, want each refused once and asked again (and the rollups' mappings)",
			updates("_mapping"), updates("_settings"))
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping after New: %v", err)
	}
}

func TestNewGivesUpOnAnIndexThatKeepsNotBeingFound(t *testing.T) {
	cfg := testConfig(t)
	newCluster(t).must(http.MethodPut, "/"+cfg.IndexPrefix+"-messages-2025.03.14", strictIndex, nil)
	proxy, updates := indexNotFoundProxy(t, cfg, func(int) bool { return true })
	cfg.Addresses = []string{proxy}
	if s, err := elastic.New(t.Context(), cfg); err == nil {
		_ = s.Close(t.Context())
		t.Fatal("New succeeded although every update answered index_not_found")
	}
	if n := updates("_mapping"); n != 3 {
		t.Fatalf("%d mapping updates, want 3 attempts", n)
	}
}

// strictIndex is the body of an index as every template of reqlog makes one:
// a strict mapping, which New updates.
var strictIndex = map[string]any{"mappings": map[string]any{"dynamic": "strict"}}

// indexNotFoundProxy forwards to cfg's cluster, except that it answers the
// attempt-th PUT of _mapping or _settings with index_not_found when refuse says
// so. updates counts the PUTs of each kind.
func indexNotFoundProxy(t *testing.T, cfg elastic.Config, refuse func(attempt int) bool) (url string, updates func(kind string) int) {
	t.Helper()
	target, err := neturl.Parse(cfg.Addresses[0])
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	puts := map[string]int{}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := path.Base(r.URL.Path)
		if r.Method != http.MethodPut || (kind != "_settings" && kind != "_mapping") {
			forward.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		puts[kind]++
		attempt := puts[kind]
		mu.Unlock()
		if !refuse(attempt) {
			forward.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"type":"index_not_found_exception","reason":"no such index [%s-messages-2025.03.14]"},"status":404}`, cfg.IndexPrefix)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL, func(kind string) int {
		mu.Lock()
		defer mu.Unlock()
		return puts[kind]
	}
}
