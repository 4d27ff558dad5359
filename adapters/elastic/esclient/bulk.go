package esclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/ports"
)

// Target is where a bulk entry creates its document: the index and the _id.
type Target struct {
	Index string `json:"_index"`
	ID    string `json:"_id"`
}

// Creates sends body, the bulk entries creating the documents of targets in
// order (the documents from number first of the caller's batch, for errors),
// and checks every item: a document created (201) counts, and one already
// there (409) once it is durable (confirmDurable); anything else fails the
// whole request, which op names.
func (c *Client) Creates(ctx context.Context, op string, body []byte, targets []Target, first int) error {
	reply, err := c.sendBulk(ctx, op, body)
	if err != nil {
		return err
	}
	if err := checkBulk(targets, first, reply); err != nil {
		return err
	}
	if existed := alreadyExisting(targets, reply); len(existed) > 0 {
		return c.confirmDurable(ctx, existed)
	}
	return nil
}

// bulkReply is what Creates reads of a bulk reply: every item's outcome.
type bulkReply struct {
	Items []bulkEntry `json:"items"`
}

// bulkEntry is one item of a bulk reply. Creates only sends create actions, so
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

// sendBulk sends one bulk request of creates, bounded like every request, and
// returns Elasticsearch's reply for checkBulk.
func (c *Client) sendBulk(ctx context.Context, what string, body []byte) (bulkReply, error) {
	ctx, cancel := c.Bounded(ctx)
	defer cancel()
	var reply bulkReply
	_, err := c.doWith(ctx, c.bulks, what, esapi.BulkRequest{
		Body: bytes.NewReader(body), FilterPath: bulkReplyFields,
		Timeout: c.cfg.ShardWait, WaitForActiveShards: waitForActiveShards,
	}, &reply, nil)
	return reply, err
}

// Bulk sends body, bulk entries of any actions, and fails on the first item
// whose status is an error not in allowed (a 409 of a create finding its
// document there, a 404 of a delete finding none), classified as a request's
// failure is. Unlike Creates it neither confirms what existed durable nor
// bounds the request's wait for shards: it is for the few small documents of
// the alert store.
func (c *Client) Bulk(ctx context.Context, op string, body io.Reader, allowed ...int) error {
	var reply struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			ID     string   `json:"_id"`
			Status int      `json:"status"`
			Error  *esError `json:"error"`
		} `json:"items"`
	}
	if err := c.Do(ctx, op, esapi.BulkRequest{Body: body}, &reply); err != nil {
		return err
	}
	if !reply.Errors {
		return nil
	}
	for _, item := range reply.Items {
		for _, r := range item {
			if r.Status >= 300 && !slices.Contains(allowed, r.Status) {
				return failure(op+" "+r.ID, r.Status, r.Error)
			}
		}
	}
	return nil
}

// alreadyExisting returns the targets of a checked reply whose create found
// their document there (409).
func alreadyExisting(targets []Target, reply bulkReply) []Target {
	var existed []Target
	for i, entry := range reply.Items {
		if entry.Create.Status == http.StatusConflict {
			existed = append(existed, targets[i])
		}
	}
	return existed
}

// checkBulk fails unless every target's item was created or already existed
// (which Creates then confirms durable).
// A batch whose failures are all transient wraps ports.ErrUnavailable, or
// ports.ErrOverloaded when they are all 429 (the cluster's write queue is full),
// so the caller retries it as a whole; items that did succeed then report 409.
// Messages are numbered from first, their index in the caller's batch.
func checkBulk(targets []Target, first int, reply bulkReply) error {
	if len(reply.Items) != len(targets) {
		return fmt.Errorf("elastic: append: the bulk reply has %d items for %d messages", len(reply.Items), len(targets))
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
			details = append(details, fmt.Sprintf("message %d (id %s): no create result in the reply", first+i, targets[i].ID))
		} else {
			details = append(details, fmt.Sprintf("message %d (id %s): status %d, %s", first+i, targets[i].ID, item.Status, item.Error))
		}
	}
	if failed == 0 {
		return nil
	}
	summary := fmt.Sprintf("%d of %d messages were not stored: %s", failed, len(targets), strings.Join(details, "; "))
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
