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
// first or a message cannot be found (it may have been purged since).
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
			return nil, fmt.Errorf("elastic: append: %w: message %s already existed when created, and is gone now",
				ports.ErrUnavailable, msgs[i].ID)
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
		Shards map[string][]struct {
			Routing struct {
				Primary bool `json:"primary"`
			} `json:"routing"`
			SeqNo struct {
				GlobalCheckpoint int64 `json:"global_checkpoint"`
			} `json:"seq_no"`
		} `json:"shards"`
	} `json:"indices"`
}

// notYetDurable says which indices' global checkpoints are still below the
// sequence number needed, or "" when none is. Daily indices have one shard, so
// its primary's global checkpoint is the index's.
func (s *Store) notYetDurable(ctx context.Context, need map[string]int64) (string, error) {
	indices := make([]string, 0, len(need))
	for index := range need {
		indices = append(indices, index)
	}
	var reply statsReply
	if err := s.do(ctx, "read global checkpoints", esapi.IndicesStatsRequest{
		Index: indices, Metric: []string{"docs"}, Level: "shards",
		FilterPath: []string{"indices.*.shards.*.routing.primary", "indices.*.shards.*.seq_no.global_checkpoint"},
	}, &reply); err != nil {
		return "", err
	}
	var behind []string
	for index, seqNo := range need {
		checkpoint, found := int64(-1), false
		for _, copies := range reply.Indices[index].Shards {
			for _, c := range copies {
				if c.Routing.Primary {
					checkpoint, found = c.SeqNo.GlobalCheckpoint, true
				}
			}
		}
		if !found || checkpoint < seqNo {
			behind = append(behind, fmt.Sprintf("the global checkpoint of %s is %d, below %d", index, checkpoint, seqNo))
		}
	}
	return strings.Join(behind, "; "), nil
}
