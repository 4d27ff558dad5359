// Package elastic is the Elasticsearch 8 message store, on the official client
// (github.com/elastic/go-elasticsearch/v8).
//
// # Index layout
//
// Messages live in daily indices named "<prefix>-messages-<yyyy.mm.dd>" after
// the UTC day of their CreatedAt (prefix: Config.IndexPrefix, default "reqlog");
// reads go to the pattern "<prefix>-messages-*". The names come from one type,
// indexNames. At start-up New installs the composable index template
// "<prefix>-messages" (PUT _index_template, idempotent) for that pattern: one
// shard, up to Config.Replicas replicas (index.auto_expand_replicas "0-1" by
// default: a copy wherever a second node can hold one, green on a single
// node), the refresh interval, segments sorted newest first, and the strict
// mappings of mappings.json (embedded). Documents are the shared storage
// record of adapters/internal/record (the MongoDB store encodes the same
// struct), nothing added:
//
//	id, reference, account, domain, name, method          keyword (exact, case-sensitive)
//	path                                                  keyword, with a searched text sub-field
//	                                                      path.text
//	route                                                 keyword: the path without its query
//	                                                      string, ranked by the statistics
//	ip_address                                            ip, with an exact keyword sub-field;
//	                                                      left out when the message has none
//	status_code                                           integer
//	duration_ms                                           double: milliseconds with up to three
//	                                                      decimals (record.DurationMicros), left
//	                                                      out when the message has none; a bound
//	                                                      of the same microseconds is sent as the
//	                                                      same double, so ranges are exact
//	created_at, updated_at, visible_at, expires_at        date_nanos, stored as the API's strings
//	                                                      (UTC, six fractional digits)
//	request, response {header, body, content_type, size} body and header[].values are searched
//	                                                      texts; header[].name, content_type and
//	                                                      size are objects with enabled: false
//	                                                      (kept in _source, never parsed); a header
//	                                                      is a {name, values} object, so names such
//	                                                      as "X.Y" or "$x" are values, never paths
//	text                                                  searched text, written only into indices
//	                                                      created before in-place indexing
//
// A searched text is a text field: standard analyzer, positions, no norms.
// q is a match_phrase on each searched field (query.go: searchClause), so
// its words must occur consecutively in one text: each field is a text of its
// own, and so is each value of an array (the 100 positions between values).
// The texts are indexed where the record stores them: nothing is sent twice,
// and _source is the document as sent (a copy of the texts, filtered out of
// _source, made the node's CPU per message 1.22 to 1.35 times this layout's:
// docs/benchmarks.md). Bodies are indexed whole, not only the first
// domain.SearchedBodyBytes the contract requires: the mapping cannot cut a
// value in the test distribution (no limit token filter). The cost is the
// node's CPU per word: a message with a 1 MiB body cost it 1.85 times, one
// with 4 MiB 2.4 times what the version-2 field's first 64 KiB did
// (docs/bench/bigbody.py), so no cap was added. The test distribution has the standard analyzer only (no
// ngram tokenizer, no wildcard field type, no scaled_float, no limit filter),
// and that is enough for the contract: words are UAX #29 words. A production
// cluster could add a "wildcard" sub-field of path for infix matches, an
// edge-ngram sub-field for word prefixes, or a custom analyzer with a limit
// token filter to bound the words of a huge body; none is needed.
//
// # Indices of earlier versions
//
// The mapping is strict, so an index created by an earlier template would
// refuse a document with new fields. New reads the mappings of the existing
// indices and puts on each, before anything is written, the new fields its
// layout can take. Indices of template versions 1 and 2 have request and
// response as objects with enabled: false, which cannot change: they get
// legacyMappings (the full-text field "text", duration_ms, route), and the
// store remembers them (indexLayouts). Documents written into such an index
// carry the searched texts a second time, in "text" (the path, the first
// domain.SearchedBodyBytes of each body cut on a character boundary, every
// header value), as before; q's phrase on "text" finds them. The store learns
// an index's layout at start-up, when it creates the index, or from its
// mapping the first time it writes to any other (one GET _mapping per index
// and process); the write that creates an index also sends "text", which
// either layout takes, since the cluster's template may be an earlier
// version's, and the next write learns the layout. Since the new mapping keeps "text", a
// replica of the earlier version still writes into new indices during a
// rolling upgrade (it searches only "text", so it does not find the new
// replicas' messages until it is upgraded); an earlier version cannot start
// on indices of this one (it would put request back to enabled: false).
// Documents written before template version 2 have no duration (null,
// outside every duration bound and percentile), their stored body's length
// as sizes (the record's rule), no route (absent from top_paths, counted
// everywhere else in the statistics) and no full-text values: q never finds
// them. Nothing rewrites them: the test distribution has no
// update-by-query, and they age out with retention.
//
// # Writes
//
// Append sends one bulk request of create actions, each into its day's index
// with the message id as _id, and checks every item: 201 (created) succeeds,
// and 409 (already there) once the document is durable (the write that created
// it may still be running: see durable.go); anything else fails the batch and
// the error names the messages. The index is a function of CreatedAt, which the domain never
// changes for an id, so an id always goes to the same index, where _id is
// unique: retries are idempotent. Transport errors, 5xx and index blocks wrap
// ports.ErrUnavailable; 429 (a full queue: busy, not down) wraps
// ports.ErrOverloaded. Bulk requests return once the translog is fsynced
// (Elasticsearch's default durability), so a nil error means durable.
//
// On a cluster, a created item means every in-sync copy of its shard applied
// it and fsynced its translog: the primary answers only then, and a copy that
// failed the write is first removed from the in-sync set by the master, so it
// can never be promoted. Bulk requests send wait_for_active_shards=1 (a check
// before the write, not what it waits for; "all" would refuse writes while a
// lost replica is rebuilt) and a timeout of Config.ShardWait (500ms): an item
// whose shard has no primary for now (its node died and a replica is being
// promoted, or its index is being created), or a whole request while the
// cluster has no elected master, fails with 503 after that long, which wraps
// ports.ErrUnavailable, instead of holding the write for Elasticsearch's
// default minute. Bulk requests go through a client that does not retry a 503
// (each retry would wait as long again), only network errors, on the next
// node. A 409's durability wait is bounded by Config.DurabilityWait (1s). No
// shorter client-side deadline cuts a write: Elasticsearch goes on with a bulk
// request its client gave up on.
//
// # Read lag
//
// Writes are not refreshed: a message becomes searchable at its index's next
// refresh. ReadLag is therefore Config.RefreshInterval (default 1s), which the
// service refuses to exceed with its visibility delay.
//
// # Reads
//
// List and Get are searches over the read pattern with every condition in
// bool.filter: the scope's account and domain, VisibleAt <= now < ExpiresAt,
// and the query's filters (terms, a prefix query on path, ranges on
// status_code, created_at and duration_ms, and q as match_phrase queries on
// the searched fields, any of which may match: the standard analyzer splits q
// into words as it split the texts, and they must occur consecutively in one
// text). List sorts
// by created_at then id, both descending, pages with search_after and asks for
// one message more than the page to learn HasMore. The reply is read in one
// pass as it streams in (wire.go: each hit's _source straight into the
// record, strings read as encoding/json reads them), and reading stops where
// the page ends. Replies are not gzipped: un-gzipping was most of
// the service's CPU per fetch, and the cluster is near the service. No index
// yet is an empty result; a shard that cannot answer is an error, never a
// silently partial page.
//
// # Statistics
//
// Stats is one search of size 0 with the same filters (readable at now, the
// scope, the statistics' filter, created_at bounded on both sides, in two
// clauses so that a past day's shard sees the same request until from moves
// and can answer from its request cache): a date_histogram on created_at
// with a fixed interval (aligned on the Unix epoch, so on UTC days) and
// min_doc_count 1, whose buckets go into domain.NewStats' buckets by their
// start (the empty ones are already there; a start off the buckets is an
// error); in each bucket a range aggregation of status_code into the five
// classes, a value_count and the percentiles (50, 95, 99) of duration_ms,
// rounded to whole microseconds; over the whole range the percentiles only
// (its counts are the buckets' sums); terms on route (10) and name (20),
// ordered by count descending then key ascending, each shard reporting 1,000
// keys, with a filter counting statuses of 400 or more. Percentiles use the
// t-digest with compression 500: Elasticsearch keeps every value below 20
// times the compression (10,000 durations) and interpolates as
// domain.Percentile does; above, its error measured on log-normal latencies
// stayed under 0.7 % (1 % at compression 300, 2.5 % at the default 100). A
// bucket whose durations have a gap at a percentile's rank (two far-apart
// modes split there) can be further off: the t-digest interpolates across
// the gap.
//
// # Retention
//
// PurgeExpired deletes whole daily indices whose messages have all expired
// (data-driven: no message with ExpiresAt after now), never single documents;
// the indices are checked again exactly under a write block before deletion
// so that a concurrent write is never lost. Expired messages of a day that
// still holds unexpired ones stay until the whole day expires; reads never
// return them.
package elastic
