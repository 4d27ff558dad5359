package stats

import (
	"slices"
	"strings"
	"time"
)

// TopRoutes is how many route templates the statistics rank.
const TopRoutes = 20

// RouteStats is the traffic of one route template: how many messages, how
// many of them errors (status 400 or more), and their durations.
type RouteStats struct {
	Route         string
	Count, Errors int64
	Duration      DurationSummary
}

// CompareRouteStats orders the route ranking: count descending, then route
// ascending.
func CompareRouteStats(a, b RouteStats) int {
	return CompareKeyCounts(KeyCount{Key: a.Route, Count: a.Count}, KeyCount{Key: b.Route, Count: b.Count})
}

// MaxRankedRoutes bounds how many route templates a RouteCounter holds once
// it prunes. Templates are few (an application's routes), but a submitter
// chooses them: past 2·MaxRankedRoutes distinct ones the least counted are
// dropped, and the ranking becomes approximate, as a KeyCounter's does. Each
// route holds a DurationDigest (at most a few kilobytes), so the bound is
// lower than MaxRankedKeys.
const MaxRankedRoutes = 500

// RouteCounter counts messages, errors and durations per route template, and
// merges with another counter into the counter of both: what the statistics'
// top_routes come from, in a Builder, a Rollup and a RollupBuilder.
// Messages without a route are not counted. Its zero value is empty.
//
// It counts exactly while it has met at most 2·MaxRankedRoutes routes; each
// route's percentiles are its DurationDigest's, with the same bounds as a
// bucket's.
type RouteCounter struct {
	index   map[string]int32
	entries []routeEntry
	// capacity is how many routes a prune keeps: MaxRankedRoutes when 0
	// (tests lower it).
	capacity int
}

type routeEntry struct {
	route         string
	count, errors int64
	durations     DurationDigest
}

func (c *RouteCounter) keep() int {
	if c.capacity > 0 {
		return c.capacity
	}
	return MaxRankedRoutes
}

// Len is how many routes the counter holds.
func (c *RouteCounter) Len() int { return len(c.entries) }

// Add counts one message of route ("" counts nothing), with its duration when
// it has one. The route is copied, so that a store may pass views of its own
// memory.
func (c *RouteCounter) Add(route string, isError bool, duration time.Duration, hasDuration bool) {
	if route == "" {
		return
	}
	e := c.entry(route)
	e.count++
	if isError {
		e.errors++
	}
	if hasDuration {
		e.durations.Add(duration)
	}
}

// AddSample counts s by its route.
func (c *RouteCounter) AddSample(s Sample) {
	c.Add(s.Route, IsError(s.StatusCode), s.Duration, s.HasDuration)
}

// Merge adds the counts of o, which it leaves as it was.
func (c *RouteCounter) Merge(o *RouteCounter) {
	if o == c {
		o = c.Clone()
	}
	for i := range o.entries {
		from := &o.entries[i]
		e := c.entry(from.route)
		e.count += from.count
		e.errors += from.errors
		e.durations.Merge(&from.durations)
	}
}

// Subtract takes o's counts and durations, a part of c's, out of c: routes
// left with no message are dropped. It reports false, leaving c as it was,
// when a route's durations cannot be told (DurationDigest.Subtract), or, while
// c may count exactly (it holds fewer routes than a prune keeps), when o
// counts a route, or more of it, that c does not. Past that c's routes are
// those it kept, and a route o counts and c dropped is left dropped.
func (c *RouteCounter) Subtract(o *RouteCounter) bool {
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	exact := len(c.entries) < c.keep()
	left := make(map[int32]routeEntry, len(o.entries))
	for i := range o.entries {
		oe := &o.entries[i]
		at, ok := c.index[oe.route]
		if !ok {
			if exact {
				return false
			}
			continue
		}
		e := c.entries[at]
		if e.count < oe.count || e.errors < oe.errors {
			if exact {
				return false
			}
		}
		e.durations = *e.durations.Clone()
		if !e.durations.Subtract(&oe.durations) {
			return false
		}
		e.count -= oe.count
		e.errors = min(max(e.errors-oe.errors, 0), max(e.count, 0))
		left[at] = e
	}
	kept := c.entries[:0]
	for i, e := range c.entries {
		if changed, ok := left[int32(i)]; ok {
			e = changed
		}
		if e.count > 0 {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
	c.reindex()
	return true
}

// Clone returns a copy of c that shares no memory with it but the routes.
func (c *RouteCounter) Clone() *RouteCounter {
	out := &RouteCounter{entries: make([]routeEntry, len(c.entries)), capacity: c.capacity}
	for i, e := range c.entries {
		out.entries[i] = routeEntry{route: e.route, count: e.count, errors: e.errors}
		out.entries[i].durations.Merge(&e.durations)
	}
	return out
}

// entry is route's entry, made (and the counter pruned first if full) when
// new.
func (c *RouteCounter) entry(route string) *routeEntry {
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	if i, ok := c.index[route]; ok {
		return &c.entries[i]
	}
	if len(c.entries) >= 2*c.keep() {
		c.prune()
	}
	if c.index == nil {
		c.index = map[string]int32{}
	}
	route = strings.Clone(route)
	c.index[route] = int32(len(c.entries))
	c.entries = append(c.entries, routeEntry{route: route})
	return &c.entries[len(c.entries)-1]
}

// prune keeps the keep() most counted routes (CompareRouteStats).
func (c *RouteCounter) prune() {
	slices.SortFunc(c.entries, func(a, b routeEntry) int {
		return CompareRouteStats(RouteStats{Route: a.route, Count: a.count}, RouteStats{Route: b.route, Count: b.count})
	})
	clear(c.entries[c.keep():])
	c.entries = c.entries[:c.keep()]
	c.reindex()
}

func (c *RouteCounter) reindex() {
	if c.index == nil {
		c.index = make(map[string]int32, len(c.entries))
	}
	clear(c.index)
	for i, e := range c.entries {
		c.index[e.route] = int32(i)
	}
}

// Top returns the n routes of most messages, by count descending then route
// ascending, each with its errors and percentiles.
func (c *RouteCounter) Top(n int) []RouteStats {
	order := make([]RouteStats, 0, len(c.entries))
	for _, e := range c.entries {
		order = append(order, RouteStats{Route: e.route, Count: e.count, Errors: e.errors})
	}
	slices.SortFunc(order, CompareRouteStats)
	order = order[:min(n, len(order))]
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	for i := range order {
		order[i].Duration = c.entries[c.index[order[i].Route]].durations.Summary()
	}
	return order
}

// Reset empties the counter, keeping its slice of entries.
func (c *RouteCounter) Reset() {
	for i := range c.entries {
		c.entries[i].durations.Reset()
	}
	c.entries = c.entries[:0]
	clear(c.index)
}
