package stats

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

// countRoute counts s by its route; messages without one are not counted.
func countRoute(c *RouteCounter, s Sample) {
	if s.Route != "" {
		c.AddSample(s.Route, s)
	}
}

// TopRouteStats returns the n routes of c of most messages, by count
// descending then route ascending, each with its errors and percentiles.
func TopRouteStats(c *RouteCounter, n int) []RouteStats {
	top := c.Top(n)
	out := make([]RouteStats, len(top))
	for i, k := range top {
		out[i] = RouteStats{Route: k.Key, Count: k.Count, Errors: k.Errors, Duration: c.Tally(k.Key).Summary()}
	}
	return out
}
