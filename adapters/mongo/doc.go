// Package mongo is the MongoDB message store (mongo-driver v2). It keeps the
// ports.MessageStore contract exactly as the memory store does; the shared
// conformance suites (store and HTTP) are the proof.
//
// How the contract maps onto MongoDB:
//
//   - One collection (default reqlog.messages), one document per message, _id =
//     message id. Times are int64 Unix microseconds (a BSON date keeps only
//     milliseconds and the contract round-trips microseconds); expireAt repeats
//     expiresAt as a BSON date, rounded up to the millisecond, for the TTL index.
//     Headers are an array of {name, values} sorted by name, never BSON keys:
//     header names may hold '.' and '$'. The document is record.Record
//     (adapters/record), shared with Elasticsearch: it also holds
//     durationMicros (absent without a duration), request/response.size and
//     route (the path without its query string). Older documents without
//     them still read (see the record package).
//   - Indexes, created at start-up one command each (idempotent): reference
//     (unique); (account, domain, createdAt desc, _id desc) and (account, domain,
//     name, createdAt desc, _id desc), equality fields then the sort, serving the
//     newest-first page; expiresAt for PurgeExpired; expireAt as a TTL index;
//     (retentionRule, account, createdAt), sparse, for PurgeRetention, which
//     deletes a retention class's messages past its rule's current keep and
//     empties their bodies past its bodies retention (retention.go).
//   - Append: one unordered InsertMany with the configured write concern (default
//     w: majority, j: true). When the only failures are duplicate keys, the batch's
//     ids are looked up with read concern majority: all there means already
//     stored (success); an id nowhere lost to a unique reference
//     (ErrReferenceTaken); an id stored but not yet majority-committed is
//     ErrUnavailable, so the caller retries.
//   - List: every filter is part of the query (status class as a range, path
//     prefix as an anchored, quoted, case-sensitive regex, from/to and the
//     readable window on microseconds), the cursor as a keyset condition, sorted
//     by the index, limit+1 documents to tell HasMore. Reads go to the primary:
//     ReadLag is zero.
//   - Search (q): a case-insensitive regex of the quoted text on path, both
//     bodies and headers.values of both sides (values, never names), inside an
//     $and beside the other filters (the keyset holds the top-level $or). It
//     scans what the scope and range leave; FerretDB (Go regexp) and MongoDB
//     (PCRE) both take it. Duration bounds: $gte/$lte on durationMicros, which
//     documents without a duration lack, so they are excluded.
//   - Stats goes through the statistics engine (statsengine): per-minute
//     rollups kept by marks (rollups.go: an Append marks the minutes it wrote
//     in "<collection>_marks" after its messages; a reader counts a minute
//     whose mark moved on again and keeps it in "<collection>_rollups"), the
//     store's aggregation, or the matching messages streamed with a
//     projection of the few fields counted. The aggregation is chosen at
//     start-up from buildInfo and, on MongoDB 7.0+, a probe that $percentile
//     runs (an older featureCompatibilityVersion refuses it) (StatsMethod):
//     one aggregation ($match = the list filter over the range; $project of
//     the bucket index, computed from the int64 createdAt micros as
//     (x - x mod w) / w, the status class and the route; one $facet of
//     $group by bucket with per-class counts and $percentile "approximate",
//     $group of the whole range for its percentiles, and route and name
//     counts sorted by count then key and cut to the top). FerretDB (no
//     $percentile, $toLong, $dateTrunc) and MongoDB < 7.0 have none.
//     Config.StreamStats turns it off.
//   - Outages: network errors, timeouts, server selection failures, a closed
//     client and transient server codes wrap ports.ErrUnavailable. Server
//     selection, connecting and every operation are bounded (Config timeouts and
//     the caller's context), so a stopped server fails fast instead of hanging.
//
// Alerting's records (rules, states, history, deliveries) live in collections
// of their own beside the messages (AlertStore); compare-and-set there rests on
// inserting the next version under a unique _id, since FerretDB runs an update
// as a read and a write without a transaction.
//
// Retention: with Config.TTLIndex, New tries a TTL index on expireAt
// (expireAfterSeconds 0). Without it (the default), or on a server that
// refuses it (FerretDB v1: NotImplemented), TTLActive is false and the service's periodic purge job, which calls
// PurgeExpired on every store, deletes expired messages with
// DeleteMany(expiresAt <= now). Reads never return them either way.
//
// Rollups outlive messages (ports.RollupKeeper) when the purge deletes every
// message (no TTL index): before PurgeExpired or PurgeRetention deletes
// messages, the rollups of their marked minutes are counted and kept at the
// marks' versions (rollupkeep.go), and the marks and kept rollups stay until
// PurgeRollups deletes those of the minutes before the rollup retention; the
// statistics of a range past the messages count it from them alone. With
// TTLIndex off the TTL indexes an earlier start made are dropped. Where the
// server has a TTL index it deletes messages unseen, so their rollups cannot
// be kept: marks and kept rollups then carry the end of their minute plus its
// messages' retention and go with them (TTL or purge), and the statistics
// count readable messages alone.
//
// What was verified on what: the tests run against an embedded FerretDB v1.24
// (SQLite) by default, or any server named by REQLOG_TEST_MONGODB_URI. FerretDB
// lacks TTL indexes (the fallback purge is what runs there), accepts but ignores
// write and read concerns (so durability there is SQLite's, not a replica set
// majority), and panics on a createIndexes command re-creating two existing
// indexes at once (hence one command per index). The TTL branch, a real majority
// write concern, the real query planner's use of the page indexes and the
// statistics pipeline (its run; its stages are unit-tested by evaluating the
// $project expressions and reading a result document) are exercised only on a
// real MongoDB through REQLOG_TEST_MONGODB_URI, where
// TestStoreConformanceStreamingStats also runs the fallback. The rollups kept
// by marks pass the same differential test on FerretDB (TestStatsDifferential);
// a real MongoDB adds to them the TTL index on marks and kept rollups, a
// majority write concern on the marks (an acknowledged Append's marks survive
// a failover), indexes the planner uses for the marks' reads (FerretDB scans),
// and the pipeline as the engine's aggregation for filters rollups do not
// answer; it would also sum an hour's marks in the server ($group), which
// FerretDB 1.24 gets wrong (every sum 0), so the store sums them itself.
package mongo
