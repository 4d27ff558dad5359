// Package statsengine is the one statistics engine: it answers
// ports.MessageReader.Stats for any store from what the store feeds it
// through the ports of ports/stats.go, so that every store counts the same
// way and outside adapters can use it too.
//
// A store gives the engine (Sources):
//
//   - always, the narrow rows of the messages a filter matches
//     (ports.SampleStreamer);
//   - when it keeps them, one stats.Rollup per scope, application and minute,
//     and a version per hour that changes with every write into it
//     (ports.RollupSource);
//   - when it can count by itself, its own aggregation
//     (ports.StatsAggregator);
//   - when it answers some queries better by a plan of its own, that plan
//     (StorePlan: the SQLite store's q of one word), taken for every query
//     it takes.
//
// Engine.Stats takes, per query, the named Plan of least estimated cost:
// PlanRollups (the minute rollups, whole hours and a first hour starting on
// a bucket from the engine's cache at their version, the other hours' minute
// rollups in one read per run of hours, and the messages of the minutes no
// rollup stands for), PlanAggregate or PlanStream; PlanStore, the store's
// own, for a query it takes. The costs are
// configuration (Costs; Config.Plan pins one); what a range holds comes from
// a Probe, by default the source's RollupHours, and a test or a store
// injects its own. Nothing reads a clock: the same facts
// give the same plan, and every plan gives stats.Builder's answer within
// the contract's bounds (percentiles within 1 % past
// stats.ExactDurations, rankings exact up to 2·stats.MaxRankedKeys keys).
// Each call returns a Trace of what it read instead of counting in package
// state.
//
// A call travels one way: decide (plan.go) reads the query once, asks the
// store's plan whether it takes it, else probes the source and weighs the
// plans (probe.go), and makes the whole plan, builder included; count
// (count.go) carries it out, feeding the builder and asking it once.
//
// A store whose writes are not transactions (Elasticsearch, MongoDB) keeps
// rollups by marks: Marked is the ports.RollupSource of a MarkStore, whose
// Appends mark the minutes they wrote after storing their messages, and
// whose rollups are counted again from the messages when their minute's mark
// moved on. Rollups are then a function of the stored messages: a retried
// batch, in whatever composition, cannot count twice, and an Append that
// stops between its messages and its marks cannot make an acknowledged
// message count less (see MarkStore).
package statsengine
