// Package daystats answers the statistics (stats.Query) of the SQLite
// store from its day files (adapters/sqlite/dayfile). Reader.Stats holds the
// files of the query's range for the call and counts it by the first read
// that can answer it (reader.go):
//
//   - rollups.go: a scope or one application over a range, from each day's
//     minute rollups (the rollup parts: eachRollup), hour by hour, whole
//     hours kept between calls at the version of their day file's hour
//     (hours.go: the kept hours and the versions are the cache's own,
//     counted by Reader.Wrote after each Append's transaction); only the
//     minutes a rollup cannot stand for are counted from their messages;
//   - samples.go: any other filter, from the narrow rows (six columns of
//     each message, walked in the statistics index); a q of more words, from
//     its messages read whole and checked;
//   - word.go: a q of one word, from the word index, by a named plan that
//     picks in each day the read of least cost (WordRead: by seq, the
//     rollups less the rest, the walk) from Config's costs and its Probe;
//     the probe is the one thing that reads a clock, and a test injects a
//     FixedProbe, so that no answer there depends on timing.
//
// Every call tells a Trace in its context (WithTrace) what it read: tests
// and benchmarks read that, not package state. Warm counts the busiest
// scopes' default view at start (warm.go).
//
// The Reader also feeds the statistics engine (adapters/statsengine) through
// its port (source.go: the narrow rows, the minute rollups and the hours'
// versions); Store.Stats does not answer through the engine yet
// (docs/benchmarks.md, "The SQLite store through the engine").
package daystats
