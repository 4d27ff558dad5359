// Package esquery holds the store's reads and its purge over the daily
// indices' read pattern.
//
// Every condition is a bool.filter clause: the scope, VisibleAt <= now <
// ExpiresAt, and the query's filters. List sorts by created_at then id, both
// descending, pages with search_after, asks for one message more than the
// page to learn HasMore, and stops reading the reply where the page ends.
//
// AggregateStats, the statistics engine's aggregation, is one search of size
// 0: a fixed-interval date_histogram aligned on UTC days, per bucket the
// status classes and the percentiles of duration_ms (t-digest, compression
// 500), and the route and name rankings. created_at is bounded in two
// clauses, so a past day's shard sees the same request until the range moves
// and can answer from its request cache. StreamSamples and Recount read the
// few fields the statistics count from doc values, never _source, in pages.
//
// PurgeExpired deletes whole daily indices whose messages have all expired,
// never single documents, checking them again under a write block first so
// that a concurrent write is never lost.
package esquery
