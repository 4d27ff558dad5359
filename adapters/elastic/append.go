package elastic

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/ports"
)

// bulkReply is what Append reads of a bulk reply: every item's outcome.
type bulkReply struct {
	Items []bulkEntry `json:"items"`
}

// bulkEntry is one item of a bulk reply. Append only sends create actions, so
// an item without one is malformed.
type bulkEntry struct {
	Create bulkItem `json:"create"`
}

// bulkItem is one create's outcome; the zero bulkItem means the reply had none.
type bulkItem struct {
	Status int      `json:"status"`
	Error  *esError `json:"error"`
}

// bulkReplyFields is the filter_path of a bulk request: the item fields
// checkBulk reads. The whole reply is about 200 bytes per item (index, id,
// version, shards, sequence number), which Elasticsearch wrote and the adapter
// decoded for every message: 1.3 KB allocated per message, against 0.1 KB.
// Error replies are never filtered.
var bulkReplyFields = []string{"items.*.status", "items.*.error"}

// waitForActiveShards is the bulk requests' wait_for_active_shards: a write
// starts once its shard's primary is active, as by default. It is a check made
// before the write, not what the write waits for: the primary answers only
// after every in-sync copy applied the write (and fsynced its translog), so a
// 201 means every in-sync copy has the message whatever this is. "all" would
// refuse every write while a lost replica is being rebuilt, which after a
// node's loss lasts until index.unassigned.node_left.delayed_timeout (1m) and
// the copy's recovery.
const waitForActiveShards = "1"

// maxReportedFailures bounds the items an Append error lists.
const maxReportedFailures = 5

// Append writes msgs with bulk requests of create actions, each message into
// the index of its CreatedAt's UTC day with the message id as _id. Because the
// index is a function of CreatedAt and the domain never changes a message's
// CreatedAt, an id always lands in the same index, where _id is unique: a retry
// finds its message already there (409) and counts that as success, leaving it
// unchanged, once that message is durable (confirmDurable). A message goes to
// an index created before in-place indexing with the full-text field
// (learnLayouts learns which indices those are). Every message is
// encoded and checked before the first request, so a message the cluster cannot
// take fails the batch with nothing written; the encoded batch is then sent in
// requests of at most MaxRequestBytes, in order,
// stopping at the first that fails. Every item's status is checked; the batch
// succeeds only if all did. Writes are not refreshed: they become searchable
// within ReadLag.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("elastic: append: %w", err)
	}
	if err := s.learnLayouts(ctx, msgs); err != nil {
		return err
	}
	buf := bulkBuffers.Get().(*[]byte)
	body, ends, err := s.encodeBulk((*buf)[:0], msgs)
	if err != nil {
		return err
	}
	for first, from := 0, 0; first < len(msgs); {
		last := first + 1 // one past the last message of this request
		for last < len(msgs) && ends[last]-from <= s.cfg.MaxRequestBytes {
			last++
		}
		if err := s.bulk(ctx, body[from:ends[last-1]], msgs[first:last], first); err != nil {
			return err // not reused: the transport may be sending it still
		}
		first, from = last, ends[last-1]
	}
	if cap(body) <= maxPooledBulk {
		*buf = body
		bulkBuffers.Put(buf)
	}
	return nil
}

// bulkBuffers holds the buffers batches are encoded into, as *[]byte. Bulk
// bodies were the largest part of what ingest allocated, and the garbage
// collector's cycles grew with it. A buffer goes back only after every request
// that carried it succeeded, so Elasticsearch read all of it. After a failure, a
// timeout above all, the HTTP transport may still be sending it. An attempt the
// transport retried was answered already: what its writer may still send then
// reaches a request that is over, and is discarded.
var bulkBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBulk is the largest buffer bulkBuffers keeps: a few batches' worth
// at the default batch size.
const maxPooledBulk = 16 << 20

// encodeBulk appends msgs to dst as the lines of bulk requests; ends[i] is where
// the entry of msgs[i] ends in body. It refuses the batch if a message cannot be
// stored or its entry alone is over MaxRequestBytes, which wraps
// domain.ErrTooLarge: only a smaller message can succeed.
func (s *Store) encodeBulk(dst []byte, msgs []domain.Message) (body []byte, ends []int, err error) {
	size := 0
	for _, m := range msgs {
		size += int(domain.EstimatedBytes(m)) // about the entry's size: bodies grow by their escapes
	}
	body = slices.Grow(dst[:0], size+size/4)
	ends = make([]int, len(msgs))
	days, legacy := dayIndices{names: s.names}, false
	for i, m := range msgs {
		if err := checkStorable(m); err != nil {
			return nil, nil, fmt.Errorf("elastic: append: message %d: %w", i, err)
		}
		index, changed := days.of(m.CreatedAt)
		if changed {
			// Not known (the write creates it): the full-text field too, which
			// an index of either layout takes.
			var known bool
			legacy, known = s.layouts.lookup(index)
			legacy = legacy || !known
		}
		start := len(body)
		body = appendBulkEntry(body, index, legacy, m)
		ends[i] = len(body)
		if size := ends[i] - start; size > s.cfg.MaxRequestBytes {
			return nil, nil, fmt.Errorf("elastic: append: message %d (id %s) takes %d bytes in a bulk request, "+
				"more than the %d bytes one request to Elasticsearch may carry: %w", i, m.ID, size, s.cfg.MaxRequestBytes, domain.ErrTooLarge)
		}
	}
	return body, ends, nil
}

// appendBulkEntry appends the two lines that create m in index: the action and
// the document, with the full-text field if index was created before in-place
// indexing (legacy).
func appendBulkEntry(dst []byte, index string, legacy bool, m domain.Message) []byte {
	dst = jsonbytes.StringMember(dst, `{"create":{"_index":`, index)
	dst = jsonbytes.StringMember(dst, `,"_id":`, m.ID)
	dst = append(dst, "}}\n"...)
	if legacy {
		dst = appendDocumentWithText(dst, m)
	} else {
		dst = appendDocument(dst, m)
	}
	return append(dst, '\n')
}

// sendBulk sends one bulk request of creates, bounded like every request, and
// returns Elasticsearch's reply for checkBulk.
func (s *Store) sendBulk(ctx context.Context, what string, body []byte) (bulkReply, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var reply bulkReply
	err := s.doWith(ctx, s.bulks, what, esapi.BulkRequest{
		Body: bytes.NewReader(body), FilterPath: bulkReplyFields,
		Timeout: s.cfg.ShardWait, WaitForActiveShards: waitForActiveShards,
	}, &reply)
	return reply, err
}

// bulk sends one bulk request holding the entries of msgs, the messages from
// index first of the caller's batch, and checks every item; messages that
// already existed count once they are durable (confirmDurable).
func (s *Store) bulk(ctx context.Context, body []byte, msgs []domain.Message, first int) error {
	reply, err := s.sendBulk(ctx, "append", body)
	if err != nil {
		return err
	}
	if err := checkBulk(msgs, first, reply); err != nil {
		return err
	}
	if existed := alreadyExisting(msgs, reply); len(existed) > 0 {
		return s.confirmDurable(ctx, existed)
	}
	return nil
}

// alreadyExisting returns the messages of a checked reply whose create found
// them there (409).
func alreadyExisting(msgs []domain.Message, reply bulkReply) []domain.Message {
	var existed []domain.Message
	for i, entry := range reply.Items {
		if entry.Create.Status == http.StatusConflict {
			existed = append(existed, msgs[i])
		}
	}
	return existed
}

// checkBulk fails unless every message's item was created or already existed
// (which bulk then confirms durable).
// A batch whose failures are all transient wraps ports.ErrUnavailable, or
// ports.ErrOverloaded when they are all 429 (the cluster's write queue is full),
// so the caller retries it as a whole; items that did succeed then report 409.
// Messages are numbered from first, their index in the caller's batch.
func checkBulk(msgs []domain.Message, first int, reply bulkReply) error {
	if len(reply.Items) != len(msgs) {
		return fmt.Errorf("elastic: append: the bulk reply has %d items for %d messages", len(reply.Items), len(msgs))
	}
	var details []string
	failed, retryable, busy := 0, true, true
	for i, entry := range reply.Items {
		item := entry.Create
		ok := item.Status != 0 || item.Error != nil
		if ok && (item.Status == http.StatusCreated || item.Status == http.StatusConflict) {
			continue // stored now, or stored before: idempotent either way
		}
		failed++
		retryable = retryable && ok && transient(item.Status, item.Error)
		busy = busy && ok && item.Status == http.StatusTooManyRequests
		if len(details) == maxReportedFailures {
			continue
		}
		if !ok {
			details = append(details, fmt.Sprintf("message %d (id %s): no create result in the reply", first+i, msgs[i].ID))
		} else {
			details = append(details, fmt.Sprintf("message %d (id %s): status %d, %s", first+i, msgs[i].ID, item.Status, item.Error))
		}
	}
	if failed == 0 {
		return nil
	}
	summary := fmt.Sprintf("%d of %d messages were not stored: %s", failed, len(msgs), strings.Join(details, "; "))
	if failed > len(details) {
		summary += fmt.Sprintf("; and %d more", failed-len(details))
	}
	switch {
	case busy:
		return fmt.Errorf("elastic: append: %w: %s", ports.ErrOverloaded, summary)
	case retryable:
		return fmt.Errorf("elastic: append: %w: %s", ports.ErrUnavailable, summary)
	}
	return fmt.Errorf("elastic: append: %s", summary)
}
