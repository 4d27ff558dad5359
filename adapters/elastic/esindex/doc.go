// Package esindex owns the store's indices: their names (Names), the
// composable index template "<prefix>-messages" with the strict mappings of
// mappings.json, the daily indices (a day's of the policy's retention and
// one of each retention class: Names), and the warm-up of the indexing path at
// start-up.
//
// The template gives each daily index one shard, index.auto_expand_replicas
// "0-<Replicas>" (green on a single node, a copy wherever a second node can
// hold one), the refresh interval and segments sorted newest first. The
// searched texts (path.text, bodies, header values) are indexed where the
// record holds them, with the standard analyzer: q is a match_phrase on each.
//
// Indices of template versions 1 and 2 keep request and response unindexed,
// which cannot change: SetUp gives them legacyMappings, Layouts remembers
// them, and documents written into them carry the searched texts again in
// the field "text" (esdoc.AppendWithText). Documents written before version
// 2 have no duration, route or searched texts; nothing rewrites them, they
// age out with retention.
package esindex
