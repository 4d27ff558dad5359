// Package stats is the statistics of the core: what GET /v1/stats answers and
// what alert rules observe, computed the same way over every store.
//
// Builder is the reference: it counts the messages a query matches, one by
// one, exactly. A store that keeps Rollups (one per scope, application and
// minute of created_at, written with the messages) answers with a
// RollupBuilder instead, which adds rollups where they stand for what the
// query counts and the messages themselves where they do not, and gives the
// reference's answer within the contract's bounds (percentiles within 1 %
// past ExactDurations durations in a bucket; rankings exact while at most
// 2·MaxRankedKeys keys are met). The differential tests hold every store's
// answers to Builder's.
//
// The parts: DurationDigest (durations, exact then sketched), KeyCounter and
// RouteCounter (bounded rankings of paths, applications and routes), Rollup
// (their sum over a span), and Query (the range, interval and filter, as
// ParseQuery reads it from the API). Like package domain it does no I/O and
// takes time as an argument.
package stats
