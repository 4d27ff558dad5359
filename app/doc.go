// Package app holds reqlog's use cases and the work that runs beside them:
// ingest (Ingester, with admission and the GroupCommitter that batches
// submissions into store writes; LocalSubmitter for capture in the same
// process), reads (Reader, Statistics, Exporter), alerting (Alerts,
// AlertEvaluator, AlertDeliverer), the retention Purger and their Config.
// Core builds them all on one store (core.go), for an embedder's constructor
// (adapters/embedded) and for the fx module (appfx) alike; app imports no fx.
//
// It imports the domain, the ports and zap, never an adapter: adapters
// depend on app, and cmd/reqlogd chooses them. Time comes
// from a ports.Clock, so tests drive visibility, retention and alerting with a
// fake one. A submission is acknowledged only once the store's Append returned
// nil for it, and one refused for load is refused from its headers, before its
// body is read or anything is written.
package app
