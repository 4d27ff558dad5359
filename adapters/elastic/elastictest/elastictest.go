// Package elastictest provisions a real Elasticsearch 8 node for integration
// tests, so that `go test ./...` runs the Elasticsearch tests for real on any
// Linux machine with Go, Java 17+ and Maven.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(elastictest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		base := elastictest.URL(t) // e.g. "http://127.0.0.1:41234"
//		...
//	}
//
// The node is started lazily by the first URL call (so `go test -run` of
// unrelated tests pays nothing) and stopped when m.Run returns.
//
// Tests that lose a node use SharedCluster instead: three nodes of 384 MiB heap
// on loopback forming one cluster, started by the first call and stopped by
// Main, with Kill (SIGKILL one node by name) and PrimaryNode (which node holds
// an index's primary).
//
// The node runs the integ-test-zip distribution from Maven Central, a
// stripped Elasticsearch with only the x-pack-core, x-pack-security
// (disabled), apm and transport-netty4 modules. Checked on 8.19: index, get,
// partial _update with "doc", bulk, search with aggregations and sort, count,
// scroll, point in time, mappings, aliases, composable index templates and
// the standard analyzer work. Missing: GET / (405: no rest-root module, so
// read the version from /_nodes/_local), delete/update-by-query and reindex,
// scripts (no painless), ingest processors, ILM, data streams and the
// analysis-common tokenizers and filters. URL's cluster is a single node, so
// indices with replicas are yellow, not green.
//
// Environment:
//
//	REQLOG_TEST_ELASTICSEARCH_URL  use this cluster instead of starting one
//	REQLOG_REQUIRE_BACKENDS=1      a node that cannot be provisioned fails the test instead of skipping it
//	REQLOG_ELASTICSEARCH_VERSION   distribution version (default DefaultVersion)
//	REQLOG_CACHE_DIR               cache for the extracted distribution (default os.UserCacheDir()/reqlog)
//	ES_JAVA_HOME, JAVA_HOME        Java to run it with (default: java on PATH)
//	ES_JAVA_OPTS                   appended to the default "-Xms512m -Xmx512m"
package elastictest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DefaultVersion is the Elasticsearch version provisioned unless
// REQLOG_ELASTICSEARCH_VERSION overrides it.
const DefaultVersion = "8.19.21"

const (
	envURL      = "REQLOG_TEST_ELASTICSEARCH_URL"
	envRequire  = "REQLOG_REQUIRE_BACKENDS"
	envVersion  = "REQLOG_ELASTICSEARCH_VERSION"
	envCacheDir = "REQLOG_CACHE_DIR"
)

// Deadlines; variables so the package's own tests can shorten them.
var (
	startTimeout    = 3 * time.Minute // first start on 2 cores takes ~10-20s; leave room for a busy machine
	externalTimeout = time.Minute     // an explicit cluster may still be booting (e.g. a CI service)
	stopTimeout     = 30 * time.Second
)

var shared struct {
	active   atomic.Bool // Main is running
	once     sync.Once
	url      string
	node     *Node
	err      error
	explicit bool // the URL came from REQLOG_TEST_ELASTICSEARCH_URL
	took     time.Duration
	logged   atomic.Bool
}

// Main is meant for TestMain: it runs m.Run, starting one Elasticsearch node
// for the whole test binary the first time a test calls URL, stops the node
// and removes its data afterwards, and returns the exit code for os.Exit.
func Main(m *testing.M) int {
	shared.active.Store(true)
	code := m.Run()
	shared.active.Store(false)
	if shared.node != nil {
		if err := shared.node.close(); err != nil {
			fmt.Fprintf(os.Stderr, "elastictest: stopping Elasticsearch: %v\n", err)
		}
	}
	if sharedCluster.cluster != nil {
		if err := sharedCluster.cluster.close(); err != nil {
			fmt.Fprintf(os.Stderr, "elastictest: stopping the Elasticsearch cluster: %v\n", err)
		}
	}
	return code
}

// URL returns the base URL (no trailing slash) of the Elasticsearch cluster
// for this test binary. If no cluster can be provisioned it skips t with the
// reason (e.g. which tool is missing), or fails t when REQLOG_REQUIRE_BACKENDS=1.
// An unreachable REQLOG_TEST_ELASTICSEARCH_URL always fails t.
// The test binary's TestMain must call Main.
func URL(t testing.TB) string {
	t.Helper()
	if !shared.active.Load() {
		t.Fatal("elastictest.URL: the package's TestMain must call elastictest.Main(m)")
		return ""
	}
	shared.once.Do(provisionShared)
	if shared.err != nil {
		failOrSkip(t, shared.err, shared.explicit)
		return ""
	}
	if shared.logged.CompareAndSwap(false, true) {
		t.Logf("elastictest: Elasticsearch at %s (ready in %s)", shared.url, shared.took.Round(time.Millisecond))
	}
	return shared.url
}

func provisionShared() {
	start := time.Now()
	shared.url, shared.node, shared.explicit, shared.err = provision()
	shared.took = time.Since(start)
}

// provision returns the explicitly configured cluster after checking that it
// answers, or starts a node.
func provision() (url string, node *Node, explicit bool, err error) {
	if u := os.Getenv(envURL); u != "" {
		url = strings.TrimRight(u, "/")
		ctx, cancel := context.WithTimeout(context.Background(), externalTimeout)
		defer cancel()
		if err := waitHealthy(ctx, url+"/_cluster/health?wait_for_status=yellow&timeout=1s", nil); err != nil {
			return "", nil, true, fmt.Errorf("%s=%s is not usable: %w", envURL, u, err)
		}
		return url, nil, true, nil
	}
	node, err = startNode()
	if err != nil {
		return "", nil, false, err
	}
	return node.URL(), node, false, nil
}

// failOrSkip reports a provisioning error: skip by default, fail when the
// cluster was explicitly requested or REQLOG_REQUIRE_BACKENDS=1 (CI should set
// it so that a broken setup cannot pass as "all skipped").
func failOrSkip(t testing.TB, err error, explicit bool) {
	t.Helper()
	switch {
	case explicit:
		t.Fatalf("elastictest: %v", err)
	case os.Getenv(envRequire) == "1":
		t.Fatalf("elastictest: %v (failing, not skipping, because %s=1)", err, envRequire)
	default:
		t.Skipf("elastictest: %v (or set %s to an existing cluster; %s=1 makes this a failure)", err, envURL, envRequire)
	}
}

// waitHealthy polls url, a _cluster/health request, until it answers 200, ctx
// ends, or exited is closed (the node process died).
func waitHealthy(ctx context.Context, url string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		err := healthOnce(ctx, client, url)
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil { // keep the cause, not "deadline exceeded"
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy before the deadline: %w", last)
		case <-exited:
			return errors.New("process exited")
		case <-tick.C:
		}
	}
}

func healthOnce(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
