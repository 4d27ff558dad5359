package elastic_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/domain"
)

// TestWriteWithoutPrimaryIsRefusedAfterShardWait: a write into an index whose
// primary cannot be assigned (as while a replica is being promoted) fails with
// ports.ErrUnavailable once the bulk timeout (ShardWait) passes, instead of
// after Elasticsearch's default minute.
func TestWriteWithoutPrimaryIsRefusedAfterShardWait(t *testing.T) {
	const shardWait = 500 * time.Millisecond
	s, cfg := newStore(t, func(c *elastic.Config) { c.ShardWait = shardWait })
	createdAt := time.Now().UTC()
	index := cfg.IndexPrefix + "-messages-" + createdAt.Format("2006.01.02")
	newCluster(t).must(http.MethodPut, "/"+index+"?wait_for_active_shards=0", map[string]any{
		"settings": map[string]any{"index.routing.allocation.require._name": "no-such-node"},
	}, nil)

	began := time.Now()
	err := s.Append(t.Context(), []domain.Message{message(t, createdAt)})
	took := time.Since(began)
	wantUnavailable(t, "a write whose shard has no primary", err)
	// The client does not retry a bulk reply of 200 with failed items, so the
	// wait is one ShardWait; the rest is room for a busy machine. Elasticsearch
	// times the wait on its cached clock (thread_pool.estimated_time_interval,
	// 200 ms), which lags further on a loaded machine: CI saw a refusal after
	// 308 ms. Half of ShardWait still tells a wait from an immediate refusal.
	if took < shardWait/2 || took > shardWait+5*time.Second {
		t.Errorf("refused after %s, want %s and a little", took.Round(time.Millisecond), shardWait)
	}
}
