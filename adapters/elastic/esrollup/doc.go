// Package esrollup keeps the statistics' rollups on Elasticsearch by marks
// (statsengine.MarkStore; the engine's Marked turns them into its
// ports.RollupSource).
//
// A bulk request is no transaction: its items land or fail one by one, and
// a retried batch cannot tell the messages it created from those an earlier
// attempt created. So no rollup is added to at write time. Instead:
//
//   - after an Append's messages are stored, and before it returns, one bulk
//     request writes, per scope, application and minute written, a mark
//     ("<prefix>-rollups-<day>") with a fresh random version, whole (a plain
//     index: of concurrent Appends the last write stays);
//   - a reader sums the marks by hour (the hour's version), searches the
//     marks of the hours it does not keep, reads their kept rollups by id
//     (realtime), and counts each settled minute whose kept rollup is of
//     another version again from its messages, keeping the rollup at the
//     mark's version, whole, in a document of its own that marks never
//     touch. No refresh precedes the searches: the process adds the marks
//     its own Appends wrote that a search does not show yet (recentMarks),
//     and another process's are searchable within the read lag.
//
// A kept rollup is therefore always the count of the stored messages of its
// minute: a retry, in whatever batches, counts each message once; a crash
// between the messages and the marks leaves the unacknowledged messages out
// of a kept rollup until a retry (or any later write into their minute)
// marks them, and never lowers what was acknowledged, which was marked
// before its Append returned.
//
// Retention: the rollups outlive their messages. Before the purge deletes a
// day's messages index (write-blocked, refreshed, wholly expired), every
// marked minute of the day has its rollup counted and kept at its mark's
// version (Scopes, statsengine.Marked.KeepAll); the day's rollups index goes
// when the day ended before the rollup retention (esquery.PurgeRollups).
// Marks and kept rollups still carry expires_at, the end of their minute
// plus the retention of its messages, which nothing deletes by any more.
//
// Messages stored by an earlier version of the store carry no marks: a
// store set up over them marks from its start plus domain.MaxFutureSkew
// (the rollup state document) until MarkExisting has marked them from an
// aggregation, in the background at start-up.
package esrollup
