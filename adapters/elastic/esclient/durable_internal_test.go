package esclient

import (
	"encoding/json"
	"testing"
)

// shardBehind decides from shard-level stats whether an operation is durable;
// the replies are shaped as a node answers them. A stale or failed-over primary
// can report a highest sequence number below the document's, so only the
// global checkpoint counts.
func TestShardBehind(t *testing.T) {
	for _, c := range []struct {
		name  string
		stats string // one index's "shards"
		seqNo int64
		want  bool // behind
	}{
		{"caught up", `{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":7,"global_checkpoint":7}}]}`, 5, false},
		{"behind", `{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":7,"global_checkpoint":4}}]}`, 5, true},
		{"exactly there", `{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":7,"global_checkpoint":5}}]}`, 5, false},
		{"a replica's checkpoint does not count", `{"0":[{"routing":{"primary":false},"seq_no":{"max_seq_no":7,"global_checkpoint":7}},` +
			`{"routing":{"primary":true},"seq_no":{"max_seq_no":7,"global_checkpoint":2}}]}`, 5, true},
		{"no sequence numbers (engine closed)", `{"0":[{"routing":{"primary":true}}]}`, 0, true},
		{"no primary", `{"0":[{"routing":{"primary":false},"seq_no":{"max_seq_no":7,"global_checkpoint":7}}]}`, 0, true},
		{"a primary whose highest number is below the document's (relocating or failed over)",
			`{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":3,"global_checkpoint":3}}]}`, 5, true},
		{"another shard with fewer operations, all durable: it may hold the document", `{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":9,"global_checkpoint":9}}],` +
			`"1":[{"routing":{"primary":true},"seq_no":{"max_seq_no":-1,"global_checkpoint":-1}}]}`, 5, true},
		{"another shard with fewer operations, not all durable", `{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":9,"global_checkpoint":9}}],` +
			`"1":[{"routing":{"primary":true},"seq_no":{"max_seq_no":3,"global_checkpoint":2}}]}`, 5, true},
		{"the document's shard behind, another far ahead", `{"0":[{"routing":{"primary":true},"seq_no":{"max_seq_no":6,"global_checkpoint":4}}],` +
			`"1":[{"routing":{"primary":true},"seq_no":{"max_seq_no":90,"global_checkpoint":90}}]}`, 5, true},
	} {
		var shards map[string][]shardCopy
		if err := json.Unmarshal([]byte(c.stats), &shards); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		behind := false
		for _, copies := range shards {
			behind = behind || shardBehind(copies, c.seqNo) != ""
		}
		if behind != c.want {
			t.Errorf("%s: behind = %v, want %v", c.name, behind, c.want)
		}
	}
}
