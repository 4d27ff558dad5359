// Package daystats answers the statistics (stats.Query) of the SQLite
// store from its day files (adapters/sqlite/dayfile), through the
// statistics engine (adapters/statsengine) it feeds (source.go: the narrow
// rows, the day files' minute rollups and the versions of their hours,
// hours.go). Reader.Stats (reader.go) answers:
//
//   - a q of one word, by a named plan from the word index (word.go) that
//     picks in each day the read of least cost (WordRead: by seq, the
//     rollups less the rest, the walk) from Config's costs and its Probe;
//     the rollups of a day counted less the rest come from the engine
//     (statsengine.Engine.CountRollups), so that the engine's cache of
//     whole hours is the one cache. The probe is the one thing that reads a
//     clock, and a test injects a FixedProbe, so that no answer there
//     depends on timing;
//   - any other query, by the engine: from the minute rollups where they
//     answer (a scope or one application over a range), whole hours from
//     its cache, otherwise from the narrow rows (samples.go), or with a q
//     of more words from the messages holding them, read whole and checked.
//
// Every call tells a Trace in its context (WithTrace) what it read, the
// engine's statsengine.Trace among it: tests and benchmarks read that, not
// package state. Warm counts the busiest scopes' default view at start
// (warm.go), which keeps their hours in the engine's cache.
package daystats
