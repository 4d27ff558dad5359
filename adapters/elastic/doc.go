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
// shard, Config.Replicas replicas (default 0), the refresh interval, segments
// sorted newest first, and the strict mappings of mappings.json (embedded):
//
//	id, reference, account, domain, name, method, path   keyword (exact, case-sensitive)
//	ip_address                                            ip, with an exact keyword sub-field;
//	                                                      left out when the message has none
//	status_code                                           integer
//	created_at, updated_at, visible_at, expires_at        date_nanos, stored as the API's strings
//	                                                      (UTC, six fractional digits)
//	request, response {header, body, content_type}        in _source only (enabled: false); a
//	                                                      header is a {name, values} object, so
//	                                                      names such as "X.Y" or "$x" are values,
//	                                                      never field paths
//
// New also applies the refresh interval and any new mappings to the indices
// that exist already, and lifts a write block a purge may have left behind.
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
// and the query's filters (terms, a prefix query on path, ranges on status_code
// and created_at). List sorts by created_at then id, both descending, pages
// with search_after and asks for one message more than the page to learn
// HasMore. No index yet is an empty result; a shard that cannot answer is an
// error, never a silently partial page.
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
