// Package elastic is the Elasticsearch 8 message and alert store, on the
// official client (github.com/elastic/go-elasticsearch/v8). It wires the
// pieces below into Store (ports.MessageStore and ports.HealthChecker),
// AlertStore (ports.AlertStore), Config and the fx Modules; the pieces import
// one way, each only those above it:
//
//	esclient  requests, the classification of failures into the ports'
//	          sentinels, bulk creates and their durability, the reply reader
//	esindex   index names, the index template and mappings (mappings.json),
//	          daily indices, earlier versions' layouts, the start-up warm-up
//	esdoc     the document: a message's record as written and read from _source
//	esquery   List, Lookup, Get, the statistics' aggregation and narrow rows, PurgeExpired
//	esrollup  the statistics' marks and kept rollups (a statsengine.MarkStore)
//	esalert   the alert store: one small index per kind of record
//
// The rules the store keeps:
//
//   - Messages live in daily indices "<prefix>-messages-<yyyy.mm.dd>" after the
//     UTC day of CreatedAt, which never changes for an id; _id is the message
//     id, so a retried write lands on the same document and is idempotent.
//   - An acknowledged write is durable: a bulk create succeeds when every
//     in-sync copy applied and fsynced it (201), or when the document was
//     already there and is durable (409, esclient's durable.go). Transport
//     errors, 5xx and blocks wrap ports.ErrUnavailable, 429 ports.ErrOverloaded.
//   - Writes are not refreshed: ReadLag is Config.RefreshInterval, which the
//     service's visibility delay may not undercut.
//   - Every read filters on the scope and VisibleAt <= now < ExpiresAt; a
//     shard that cannot answer is an error, never a silently partial page; no
//     index yet is an empty result.
//   - The mappings are strict; indices of earlier template versions are
//     updated at start-up with the fields their layout can take, and written
//     in the layout they have (esindex).
//   - Retention deletes whole daily indices whose messages have all expired,
//     checked again under a write block, so a concurrent write is never lost;
//     the day's rollups are kept first, and their daily indices go at the
//     rollup retention (PurgeRollups). Retention classes (retention.go:
//     PurgeRetention) have daily indices of their own
//     (esindex.Names.ForClass): a class's day is deleted whole once its
//     current keep has passed the day's end, its rollups kept first; its
//     bodies past its bodies retention are set to null by partial updates
//     (the test distribution has no delete- or update-by-query); reads and
//     a q leave bodies out from bodies_expire_at on.
//   - Statistics go through the statistics engine (statsengine): after its
//     messages, and before it returns, an Append marks the minutes it wrote
//     (esrollup); readers count a minute again from its messages when its
//     mark moved on, so a rollup never counts a retried message twice.
//
// The figures behind these choices (the reply reader, the full-text layout,
// the percentiles' compression, fetch and ingest CPU) are in
// docs/benchmarks.md, section Elasticsearch.
package elastic
