package elastic

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/domain"
)

// Append writes msgs with bulk requests of create actions, each message into
// the index of its CreatedAt's UTC day with the message id as _id. Because the
// index is a function of CreatedAt and the domain never changes a message's
// CreatedAt, an id always lands in the same index, where _id is unique: a retry
// finds its message already there (409) and counts that as success, leaving it
// unchanged, once that message is durable (esclient.Client.Creates). A message
// goes to an index created before in-place indexing with the full-text field
// (esindex.Indices.LearnLayouts learns which indices those are). Every message is
// encoded and checked before the first request, so a message the cluster cannot
// take fails the batch with nothing written; the encoded batch is then sent in
// requests of at most MaxRequestBytes, in order,
// stopping at the first that fails. Every item's status is checked; the batch
// succeeds only if all did. Writes are not refreshed: they become searchable
// within ReadLag. Then one more bulk request marks the minutes written for
// the statistics (esrollup), before Append returns.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("elastic: append: %w", err)
	}
	if err := s.indices.LearnLayouts(ctx, msgs); err != nil {
		return err
	}
	buf := bulkBuffers.Get().(*[]byte)
	body, ends, targets, err := s.encodeBulk((*buf)[:0], msgs)
	if err != nil {
		return err
	}
	for first, from := 0, 0; first < len(msgs); {
		last := first + 1 // one past the last message of this request
		for last < len(msgs) && ends[last]-from <= s.cfg.MaxRequestBytes {
			last++
		}
		if err := s.client.Creates(ctx, "append", body[from:ends[last-1]], targets[first:last], first); err != nil {
			return err // not reused: the transport may be sending it still
		}
		first, from = last, ends[last-1]
	}
	if cap(body) <= maxPooledBulk {
		*buf = body
		bulkBuffers.Put(buf)
	}
	// Only now, with every message stored: a mark says its minute changed.
	return s.rollups.Mark(ctx, msgs)
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
// the entry of msgs[i] ends in body, targets[i] where it creates its document.
// It refuses the batch if a message cannot be stored or its entry alone is over
// MaxRequestBytes, which wraps domain.ErrTooLarge: only a smaller message can
// succeed.
func (s *Store) encodeBulk(dst []byte, msgs []domain.Message) (body []byte, ends []int, targets []esclient.Target, err error) {
	size := 0
	for _, m := range msgs {
		size += int(domain.EstimatedBytes(m)) // about the entry's size: bodies grow by their escapes
	}
	body = slices.Grow(dst[:0], size+size/4)
	ends = make([]int, len(msgs))
	targets = make([]esclient.Target, len(msgs))
	days, legacy := esindex.Days{Names: s.indices.Names()}, false
	for i, m := range msgs {
		if err := esdoc.CheckStorable(m); err != nil {
			return nil, nil, nil, fmt.Errorf("elastic: append: message %d: %w", i, err)
		}
		index, changed := days.Of(m)
		if changed {
			// Not known (the write creates it): the full-text field too, which
			// an index of either layout takes.
			var known bool
			legacy, known = s.indices.Layouts().Lookup(index)
			legacy = legacy || !known
		}
		start := len(body)
		body = esdoc.AppendCreate(body, index, legacy, m)
		ends[i], targets[i] = len(body), esclient.Target{Index: index, ID: m.ID}
		if size := ends[i] - start; size > s.cfg.MaxRequestBytes {
			return nil, nil, nil, fmt.Errorf("elastic: append: message %d (id %s) takes %d bytes in a bulk request, "+
				"more than the %d bytes one request to Elasticsearch may carry: %w", i, m.ID, size, s.cfg.MaxRequestBytes, domain.ErrTooLarge)
		}
	}
	return body, ends, targets, nil
}
