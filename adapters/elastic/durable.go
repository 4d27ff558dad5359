package elastic

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/domain"
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
// advances only once every in-sync copy has fsynced the operations below it.
// Retries are rare, and so are the two requests this costs.

// durabilityPoll is the first wait between two reads of the global checkpoint;
// it doubles up to durabilityPollMax.
const (
	durabilityPoll    = 10 * time.Millisecond
	durabilityPollMax = 500 * time.Millisecond
)

// confirmDurable returns once every message of existed, each one a create found
// already there, is durable, or fails with ports.ErrUnavailable when ctx ends
// first or a message cannot be read back (a replica without it yet, or purged
// since).
func (s *Store) confirmDurable(ctx context.Context, existed []domain.Message) error {
	seqNos, err := s.seqNos(ctx, existed)
	if err != nil {
		return err
	}
	wait := durabilityPoll
	for {
		behind, err := s.notYetDurable(ctx, seqNos)
		if err != nil || behind == "" {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("elastic: append: %w: %d messages already existed, and %s; "+
				"the write that created them may still be running: %w", ports.ErrUnavailable, len(existed), behind, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, durabilityPollMax)
	}
}

// mgetReply is what confirmDurable reads of a realtime multi-get.
type mgetReply struct {
	Docs []struct {
		Index string `json:"_index"`
		ID    string `json:"_id"`
		Found bool   `json:"found"`
		SeqNo *int64 `json:"_seq_no"`
	} `json:"docs"`
}

// seqNos reads the sequence number of each message's document in realtime (from
// the translog if need be, so before a refresh) and returns the highest of each
// index.
func (s *Store) seqNos(ctx context.Context, msgs []domain.Message) (map[string]int64, error) {
	type doc struct {
		Index string `json:"_index"`
		ID    string `json:"_id"`
	}
	docs := make([]doc, len(msgs))
	for i, m := range msgs {
		docs[i] = doc{Index: s.names.For(m.CreatedAt), ID: m.ID}
	}
	body, err := jsonBody(map[string]any{"docs": docs})
	if err != nil {
		return nil, err
	}
	var reply mgetReply
	if err := s.do(ctx, "confirm existing messages", esapi.MgetRequest{
		Body: body, Realtime: ptr(true), Source: []string{"false"},
		FilterPath: []string{"docs._index", "docs._id", "docs.found", "docs._seq_no"},
	}, &reply); err != nil {
		return nil, err
	}
	if len(reply.Docs) != len(msgs) {
		return nil, fmt.Errorf("elastic: append: confirming existing messages: %d documents in the reply for %d messages",
			len(reply.Docs), len(msgs))
	}
	highest := make(map[string]int64)
	for i, d := range reply.Docs {
		if !d.Found || d.SeqNo == nil {
			return nil, fmt.Errorf("elastic: append: %w: message %s already existed when created, but a read does not "+
				"find it (not yet on the copy read, or purged since)", ports.ErrUnavailable, msgs[i].ID)
		}
		if seqNo, seen := highest[d.Index]; !seen || *d.SeqNo > seqNo {
			highest[d.Index] = *d.SeqNo
		}
	}
	return highest, nil
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
		MaxSeqNo         *int64 `json:"max_seq_no"`
	} `json:"seq_no"`
}

// notYetDurable says which indices still have a shard whose global checkpoint is
// below the sequence number needed, or "" when none has. Sequence numbers are
// per shard, and the reply does not say which shard holds a document, so every
// primary must reach the number needed or its own highest one: the document's
// shard holds the number needed, so its checkpoint must reach it, and a shard
// with fewer operations is done once all of its own are durable. Daily indices
// have one shard, but an index created otherwise may have more.
func (s *Store) notYetDurable(ctx context.Context, need map[string]int64) (string, error) {
	indices := make([]string, 0, len(need))
	for index := range need {
		indices = append(indices, index)
	}
	var reply statsReply
	if err := s.do(ctx, "read global checkpoints", esapi.IndicesStatsRequest{
		Index: indices, Metric: []string{"docs"}, Level: "shards",
		FilterPath: []string{"indices.*.shards.*.routing.primary", "indices.*.shards.*.seq_no.global_checkpoint",
			"indices.*.shards.*.seq_no.max_seq_no"},
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
// seqNo, or up to its own highest one if lower, durable; "" when it does.
func shardBehind(copies []shardCopy, seqNo int64) string {
	for _, c := range copies {
		if !c.Routing.Primary {
			continue
		}
		global, highest := c.SeqNo.GlobalCheckpoint, c.SeqNo.MaxSeqNo
		switch {
		case global == nil || highest == nil:
			return "the primary reports no sequence numbers"
		case *global < min(seqNo, *highest):
			return fmt.Sprintf("the global checkpoint is %d, below %d", *global, min(seqNo, *highest))
		}
		return ""
	}
	return "no primary is reported"
}
