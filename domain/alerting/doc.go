// Package alerting is the core of alerts: rules (what to watch, Rule and
// ParseRule), webhook endpoints (Endpoint), the state machine that turns
// observed statistics into transitions (State, Observation, Step), and the
// events and deliveries a transition sends (Event, Delivery, Attempt).
//
// A rule reads the statistics of package stats through Rule.StatsQuery and
// Rule.Observe; the service (app) evaluates rules on a clock and hands
// deliveries to a store's outbox. Like package domain it does no I/O and takes
// time as an argument.
package alerting
