// Package esclient sends the store's requests to the cluster and turns its
// failures into the ports' sentinels: transport errors, 5xx and index blocks
// wrap ports.ErrUnavailable (the caller may retry), 429 ports.ErrOverloaded
// (busy, not down), 413 domain.ErrTooLarge; a caller that gave up keeps only
// its context's error.
//
// Creates sends bulk create actions with wait_for_active_shards=1 and a
// timeout of ShardWait, through a client that does not retry a 503 (each
// retry would wait as long again). A created item (201) was applied and
// fsynced by every in-sync copy of its shard; an item already there (409)
// counts only once it is durable, which durable.go waits for within
// DurabilityWait. No client-side deadline shorter than RequestTimeout cuts a
// write: the cluster goes on with a request its client gave up on.
//
// ReplyReader reads a JSON reply in one pass as it streams in, so that a
// search stops reading where its page ends; strings are decoded by
// domain/jsonbytes, as encoding/json decodes them, and kept strings are cut
// from slabs whose bytes are never written again.
package esclient
