package elastic_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/domain"
)

// TestClusterAcknowledgesOnEveryCopy runs the store on the three-node cluster:
// daily indices get a replica there, a nil Append means every started copy of
// the shard has the messages (read from each copy alone, in realtime, with no
// wait), and appending the same batch again (every create a 409, so the
// global checkpoint wait) succeeds with the replica present.
func TestClusterAcknowledgesOnEveryCopy(t *testing.T) {
	c := elastictest.SharedCluster(t)
	raw := cluster{t: t, base: c.URL(c.Live()[0])}
	cfg := elastic.Config{Addresses: c.URLs(), IndexPrefix: randomPrefix(t), RefreshInterval: testRefresh}
	t.Cleanup(func() { deleteIndices(t, raw, cfg.IndexPrefix) })
	s := openStore(t.Context(), t, cfg)

	createdAt := time.Now().UTC().Truncate(time.Second)
	index := cfg.IndexPrefix + "-messages-" + createdAt.Format("2006.01.02")
	// The first write creates the index; only then is its replica allocated.
	waitFor(t, "the first write", time.Minute, func() error {
		return s.Append(t.Context(), []domain.Message{message(t, createdAt)})
	})
	raw.must(http.MethodGet, "/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", nil, nil)
	var settings map[string]struct {
		Settings struct {
			Index struct {
				NumberOfReplicas   string `json:"number_of_replicas"`
				AutoExpandReplicas string `json:"auto_expand_replicas"`
			} `json:"index"`
		} `json:"settings"`
	}
	raw.must(http.MethodGet, "/"+index+"/_settings", nil, &settings)
	if got := settings[index].Settings.Index; got.NumberOfReplicas != "1" || got.AutoExpandReplicas != "0-1" {
		t.Fatalf("%s: number_of_replicas %q, auto_expand_replicas %q; want 1 and 0-1 on three nodes",
			index, got.NumberOfReplicas, got.AutoExpandReplicas)
	}

	batch := make([]domain.Message, 50)
	ids := make([]string, len(batch))
	for i := range batch {
		batch[i] = message(t, createdAt)
		ids[i] = batch[i].ID
	}
	if err := s.Append(t.Context(), batch); err != nil {
		t.Fatalf("Append: %v", err)
	}
	copies := startedCopies(t, raw, index)
	if len(copies) != 2 {
		t.Fatalf("%s has started copies on %v, want 2", index, copies)
	}
	for _, node := range copies {
		if missing := missingOn(t, raw, index, node, ids); len(missing) > 0 {
			t.Errorf("acknowledged, yet the copy on %s lacks %d of %d messages, e.g. %s", node, len(missing), len(ids), missing[0])
		}
	}
	if err := s.Append(t.Context(), batch); err != nil {
		t.Fatalf("appending the same batch again (every create a 409): %v", err)
	}
}

// startedCopies names the nodes holding a started copy of shard 0 of index.
func startedCopies(t *testing.T, raw cluster, index string) []string {
	t.Helper()
	var shards []struct{ Shard, State, Node string }
	raw.must(http.MethodGet, "/_cat/shards/"+index+"?format=json&h=shard,state,node", nil, &shards)
	var nodes []string
	for _, s := range shards {
		if s.Shard == "0" && s.State == "STARTED" {
			nodes = append(nodes, s.Node)
		}
	}
	return nodes
}

// missingOn returns the ids that a realtime read of the copy on node alone
// does not find.
func missingOn(t *testing.T, raw cluster, index, node string, ids []string) []string {
	t.Helper()
	var reply struct {
		Docs []struct {
			ID    string `json:"_id"`
			Found bool   `json:"found"`
		} `json:"docs"`
	}
	raw.must(http.MethodPost, "/"+index+"/_mget?realtime=true&_source=false&preference=_only_nodes:"+node,
		map[string]any{"ids": ids}, &reply)
	if len(reply.Docs) != len(ids) {
		t.Fatalf("mget on %s: %d documents for %d ids", node, len(reply.Docs), len(ids))
	}
	var missing []string
	for _, d := range reply.Docs {
		if !d.Found {
			missing = append(missing, d.ID)
		}
	}
	return missing
}
