package esclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/ports"
)

// A create that finds its document already there (409) is answered without
// syncing anything: the write that created the document may still be running,
// not yet fsynced nor copied to the replicas. That happens when a retry is sent
// while the first attempt is still being written: by a client whose request
// timed out, by the transport after a broken connection, or by another writer
// given the same Idempotency-Key. Counting the 409 as stored would acknowledge
// what a crash can still lose, so Append first waits until the document's
// operation is at or below its shard's global checkpoint, which Elasticsearch
// advances only once every in-sync copy has fsynced the operations below it,
// and then reads the document again: a primary that failed before copying it
// loses it, and its successor may reuse its sequence number under a new term.
// Retries are rare, and so are the requests this costs.

// durabilityPoll is the first wait between two reads of the global checkpoint;
// it doubles up to durabilityPollMax.
const (
	durabilityPoll    = 10 * time.Millisecond
	durabilityPollMax = 500 * time.Millisecond
)

// confirmDurable returns once the document of every target of existed, each
// one a create found already there, is durable, or fails with
// ports.ErrUnavailable when ctx ends or DurabilityWait passes first, or when a
// document cannot be read back as it was (a replica without it yet, a primary
// that lost it, or purged since).
func (c *Client) confirmDurable(ctx context.Context, existed []Target) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DurabilityWait)
	defer cancel()
	versions, err := c.readVersions(ctx, existed)
	if err != nil {
		return err
	}
	need := make(map[string]int64) // index: the highest sequence number to be durable
	for _, v := range versions {
		need[v.index] = max(need[v.index], v.seqNo)
	}
	wait := durabilityPoll
	for {
		behind, err := c.notYetDurable(ctx, need)
		if err != nil {
			return err
		}
		if behind == "" {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("elastic: append: %w: %d messages already existed, and %s; "+
				"the write that created them may still be running: %w", ports.ErrUnavailable, len(existed), behind, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, durabilityPollMax)
	}
	again, err := c.readVersions(ctx, existed)
	if err != nil {
		return err
	}
	for i, v := range again {
		if v != versions[i] {
			return fmt.Errorf("elastic: append: %w: message %s changed from sequence number %d (term %d) to %d (term %d) "+
				"while its durability was confirmed: a primary failed over", ports.ErrUnavailable, existed[i].ID,
				versions[i].seqNo, versions[i].primaryTerm, v.seqNo, v.primaryTerm)
		}
	}
	return nil
}

// version is where a document's operation stands in its shard's history.
type version struct {
	index              string
	seqNo, primaryTerm int64
}

// mgetReply is what confirmDurable reads of a realtime multi-get.
type mgetReply struct {
	Docs []struct {
		Index       string `json:"_index"`
		Found       bool   `json:"found"`
		SeqNo       *int64 `json:"_seq_no"`
		PrimaryTerm *int64 `json:"_primary_term"`
	} `json:"docs"`
}

// readVersions reads each target's document in realtime (from the translog if
// need be, so before a refresh): its index, sequence number and primary term.
func (c *Client) readVersions(ctx context.Context, targets []Target) ([]version, error) {
	body, err := JSONBody(map[string]any{"docs": targets})
	if err != nil {
		return nil, err
	}
	var reply mgetReply
	if err := c.Do(ctx, "confirm existing messages", esapi.MgetRequest{
		Body: body, Realtime: esapi.BoolPtr(true), Source: []string{"false"},
		FilterPath: []string{"docs._index", "docs.found", "docs._seq_no", "docs._primary_term"},
	}, &reply); err != nil {
		return nil, err
	}
	if len(reply.Docs) != len(targets) {
		return nil, fmt.Errorf("elastic: append: confirming existing messages: %d documents in the reply for %d messages",
			len(reply.Docs), len(targets))
	}
	versions := make([]version, len(targets))
	for i, d := range reply.Docs {
		if !d.Found || d.SeqNo == nil || d.PrimaryTerm == nil {
			return nil, fmt.Errorf("elastic: append: %w: message %s already existed when created, but a read does not "+
				"find it (not yet on the copy read, lost by a failed primary, or purged since)", ports.ErrUnavailable, targets[i].ID)
		}
		versions[i] = version{index: d.Index, seqNo: *d.SeqNo, primaryTerm: *d.PrimaryTerm}
	}
	return versions, nil
}

// statsReply is what notYetDurable reads of shard-level index stats.
type statsReply struct {
	Indices map[string]struct {
		Shards map[string][]shardCopy `json:"shards"`
	} `json:"indices"`
}

// shardCopy is one copy of a shard in the stats.
type shardCopy struct {
	Routing struct {
		Primary bool `json:"primary"`
	} `json:"routing"`
	SeqNo struct { // absent while the copy's engine is closed
		GlobalCheckpoint *int64 `json:"global_checkpoint"`
	} `json:"seq_no"`
}

// notYetDurable says which indices still have a shard whose global checkpoint is
// below the sequence number needed, or "" when none has. Daily indices have one
// shard. Sequence numbers are per shard, and neither reply says which shard
// holds a document, so on an index created with more, every primary must reach
// the number: safe, but a shard with fewer operations keeps the wait going until
// it gets them, or until the request's deadline.
func (c *Client) notYetDurable(ctx context.Context, need map[string]int64) (string, error) {
	indices := make([]string, 0, len(need))
	for index := range need {
		indices = append(indices, index)
	}
	var reply statsReply
	if err := c.Do(ctx, "read global checkpoints", esapi.IndicesStatsRequest{
		Index: indices, Metric: []string{"docs"}, Level: "shards",
		FilterPath: []string{"indices.*.shards.*.routing.primary", "indices.*.shards.*.seq_no.global_checkpoint"},
	}, &reply); err != nil {
		return "", err
	}
	var behind []string
	for index, seqNo := range need {
		shards := reply.Indices[index].Shards
		if len(shards) == 0 {
			behind = append(behind, fmt.Sprintf("the stats of %s have no shards", index))
		}
		for shard, copies := range shards {
			if reason := shardBehind(copies, seqNo); reason != "" {
				behind = append(behind, fmt.Sprintf("in shard %s of %s, %s", shard, index, reason))
			}
		}
	}
	return strings.Join(behind, "; "), nil
}

// shardBehind says why a shard's primary does not yet show every operation up to
// seqNo durable; "" when it does.
func shardBehind(copies []shardCopy, seqNo int64) string {
	for _, c := range copies {
		if !c.Routing.Primary {
			continue
		}
		switch global := c.SeqNo.GlobalCheckpoint; {
		case global == nil:
			return "the primary reports no sequence numbers"
		case *global < seqNo:
			return fmt.Sprintf("the global checkpoint is %d, below %d", *global, seqNo)
		}
		return ""
	}
	return "no primary is reported"
}
