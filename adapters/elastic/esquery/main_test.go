package esquery

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/domain"
)

// TestMain starts one Elasticsearch node for the package's benchmarks on
// first use, or uses the cluster named by $REQLOG_TEST_ELASTICSEARCH_URL.
func TestMain(m *testing.M) { os.Exit(elastictest.Main(m)) }

// benchIndices are the indices of prefix on the node at base, set up as the
// store sets them up; the client is closed when b ends.
func benchIndices(b *testing.B, base, prefix string) (*esclient.Client, *esindex.Indices) {
	client, err := esclient.New(esclient.Config{Addresses: []string{base}, MaxRetries: 3,
		RequestTimeout: time.Minute, ShardWait: time.Second, DurabilityWait: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.Close(context.Background()) })
	indices := esindex.New(client, esindex.Config{Prefix: prefix, Shards: 1, Replicas: 1, RefreshInterval: time.Second})
	if err := indices.SetUp(b.Context()); err != nil {
		b.Fatal(err)
	}
	return client, indices
}

// benchAppend writes msgs into their daily indices as the store writes them.
func benchAppend(b *testing.B, client *esclient.Client, names esindex.Names, msgs []domain.Message) {
	var body []byte
	targets := make([]esclient.Target, len(msgs))
	for i, m := range msgs {
		targets[i] = esclient.Target{Index: names.For(m.CreatedAt), ID: m.ID}
		body = esdoc.AppendCreate(body, targets[i].Index, false, m)
	}
	if err := client.Creates(b.Context(), "append", body, targets, 0); err != nil {
		b.Fatal(err)
	}
}
