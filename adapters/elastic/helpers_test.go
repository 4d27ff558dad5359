package elastic_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// TestMain starts one Elasticsearch node for the package on first use, or uses
// the cluster named by $REQLOG_TEST_ELASTICSEARCH_URL.
func TestMain(m *testing.M) { os.Exit(elastictest.Main(m)) }

// testRefresh is the tests' refresh interval: short, so that the suites' waits
// for searchability are short too.
const testRefresh = 250 * time.Millisecond

// cleanupTimeout bounds deleting a test's indices.
const cleanupTimeout = time.Minute

// cluster is the raw HTTP view of the test cluster, for checks and setups that
// must not go through the adapter under test.
type cluster struct {
	t    testing.TB
	base string
}

// newCluster is the package's shared cluster.
func newCluster(t testing.TB) cluster {
	t.Helper()
	return cluster{t: t, base: elastictest.URL(t)}
}

// do sends one request and returns the status and body; body may be nil.
func (c cluster) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			c.t.Fatalf("encode %s %s: %v", method, path, err)
		}
		reader = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read reply: %v", method, path, err)
	}
	return res.StatusCode, raw
}

// must sends one request that has to succeed and decodes its reply into out.
func (c cluster) must(method, path string, body, out any) {
	c.t.Helper()
	status, raw := c.do(method, path, body)
	if status >= 300 {
		c.t.Fatalf("%s %s: %d %s", method, path, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// indices lists the open and closed indices matching pattern.
func (c cluster) indices(pattern string) []string {
	c.t.Helper()
	var rows []struct {
		Index string `json:"index"`
	}
	c.must(http.MethodGet, "/_cat/indices/"+pattern+"?format=json&h=index&expand_wildcards=all", nil, &rows)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Index
	}
	return names
}

// exists reports whether index exists.
func (c cluster) exists(index string) bool {
	c.t.Helper()
	status, raw := c.do(http.MethodHead, "/"+index, nil)
	switch status {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	c.t.Fatalf("HEAD /%s: %d %s", index, status, raw)
	return false
}

// randomPrefix is an index prefix no other test uses.
func randomPrefix(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "reqlog-t-" + hex.EncodeToString(b)
}

// testConfig is a store configuration of its own index prefix on the shared
// cluster, whose indices and template are deleted when t ends.
func testConfig(t testing.TB) elastic.Config {
	t.Helper()
	c := newCluster(t)
	cfg := elastic.Config{Addresses: []string{c.base}, IndexPrefix: randomPrefix(t), RefreshInterval: testRefresh}
	t.Cleanup(func() { deleteIndices(t, c, cfg.IndexPrefix) })
	return cfg
}

// deleteIndices deletes the indices and templates of prefix: concrete
// names, as production clusters refuse wildcard deletes.
func deleteIndices(t testing.TB, c cluster, prefix string) {
	for _, pattern := range []string{"-messages-*", "-rollups-*", "-rollup-state*"} {
		if names := c.indices(prefix + pattern); len(names) > 0 {
			c.must(http.MethodDelete, "/"+strings.Join(names, ","), nil, nil)
		}
	}
	for _, template := range []string{"-messages", "-rollups"} {
		if status, raw := c.do(http.MethodDelete, "/_index_template/"+prefix+template, nil); status != http.StatusOK && status != http.StatusNotFound {
			t.Errorf("deleting the template: %d %s", status, raw)
		}
	}
}

// openStore opens a store on cfg, closed when t ends (before its indices go).
func openStore(ctx context.Context, t testing.TB, cfg elastic.Config) *elastic.Store {
	t.Helper()
	s, err := elastic.New(ctx, cfg)
	if err != nil {
		t.Fatalf("elastic.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return s
}

// newStore is a store on a fresh index prefix with the tests' settings.
func newStore(t testing.TB, tweaks ...func(*elastic.Config)) (*elastic.Store, elastic.Config) {
	t.Helper()
	cfg := testConfig(t)
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	return openStore(t.Context(), t, cfg), cfg
}

var scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}

func message(t testing.TB, createdAt time.Time) domain.Message {
	return conformance.NewMessage(t, scope, createdAt)
}

// waitFor polls check until it returns nil or the deadline passes.
var waitFor = fixtures.WaitFor

// waitReadable waits until Get finds every one of msgs at now.
func waitReadable(t testing.TB, s ports.MessageStore, now time.Time, msgs ...domain.Message) {
	t.Helper()
	for _, m := range msgs {
		waitFor(t, "Get of "+m.ID, 30*time.Second, func() error {
			got, err := s.Get(t.Context(), m.Scope(), m.ID, now)
			if err != nil {
				return err
			}
			if got.ID != m.ID || !got.CreatedAt.Equal(m.CreatedAt) {
				return fmt.Errorf("got %s created %s", got.ID, domain.FormatTime(got.CreatedAt))
			}
			return nil
		})
	}
}

// wantUnavailable fails unless err wraps ports.ErrUnavailable.
func wantUnavailable(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("%s: %v, want an error wrapping ports.ErrUnavailable", what, err)
	}
}
