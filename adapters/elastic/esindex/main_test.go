package esindex

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/esclient"
)

// TestMain starts one Elasticsearch node for the package on first use, or uses
// the cluster named by $REQLOG_TEST_ELASTICSEARCH_URL.
func TestMain(m *testing.M) { os.Exit(elastictest.Main(m)) }

// testIndices are the indices of cfg on the node at base, set up as the store
// sets them up (cfg's zero fields at the store's defaults); their client is
// closed when t ends.
func testIndices(t testing.TB, base string, cfg Config) *Indices {
	t.Helper()
	client, err := esclient.New(esclient.Config{Addresses: []string{base}, MaxRetries: 3,
		RequestTimeout: 30 * time.Second, ShardWait: 500 * time.Millisecond, DurabilityWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	cfg.Shards, cfg.Replicas = max(cfg.Shards, 1), max(cfg.Replicas, 1)
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = time.Second
	}
	s := New(client, cfg)
	if err := s.SetUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}
