package stats

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// top_routes ranks by count then route, counts errors from 400, summarises
// durations as buckets are, and leaves out messages without a route.
func TestStatsBuilderTopRoutes(t *testing.T) {
	q := Query{From: rollupBase, To: rollupBase.Add(time.Hour), Interval: Intervals[3]}
	b := NewBuilder(q)
	add := func(route string, status int, ms ...int) {
		for _, d := range ms {
			b.Add(Sample{CreatedAt: rollupBase, StatusCode: status, Route: route, Path: "/p", Name: "shop",
				Duration: time.Duration(d) * time.Millisecond, HasDuration: d >= 0})
		}
	}
	add("/b", 200, 1, 2, 3, 4)
	add("/a", 500, 10, 20)
	add("/a", 404, 30, -1) // one without a duration
	add("/c", 399, 7)
	add("", 500, 1, 1, 1, 1, 1, 1) // no route: counted nowhere in top_routes
	for i := range 30 {
		add(fmt.Sprintf("/r/%02d", i), 200, 1)
	}
	got := b.Stats()
	if len(got.TopRoutes) != TopRoutes {
		t.Fatalf("%d routes ranked, want %d", len(got.TopRoutes), TopRoutes)
	}
	want := []RouteStats{
		{Route: "/a", Count: 4, Errors: 4, Duration: DurationSummary{Count: 3, P50: 20, P95: 29, P99: 29.8}},
		{Route: "/b", Count: 4, Errors: 0, Duration: DurationSummary{Count: 4, P50: 2.5, P95: 3.85, P99: 3.97}},
		{Route: "/c", Count: 1, Errors: 0, Duration: DurationSummary{Count: 1, P50: 7, P95: 7, P99: 7}},
		{Route: "/r/00", Count: 1, Duration: DurationSummary{Count: 1, P50: 1, P95: 1, P99: 1}},
	}
	if !slices.Equal(got.TopRoutes[:4], want) || got.TopRoutes[TopRoutes-1].Route != "/r/16" {
		t.Errorf("top routes = %+v, want %+v first and /r/16 last", got.TopRoutes, want)
	}
	if got.Total.Count != 4+4+1+6+30 {
		t.Errorf("total %d: messages without a route must still count in the total", got.Total.Count)
	}
}

// routeSample is a message of a status of 500 or 200, with a duration or not.
func routeSample(isError bool, d time.Duration, hasDuration bool) Sample {
	s := Sample{StatusCode: 200, Duration: d, HasDuration: hasDuration}
	if isError {
		s.StatusCode = 500
	}
	return s
}

// Past 2·MaxRankedRoutes routes the counter prunes as any Counter does (its
// bounds are TestKeyCounterBoundsPastCapacity'): it holds at most twice what it keeps, and
// no route's count, errors or durations exceed its messages'. Merging adds up.
func TestRouteCounterBoundsAndMerges(t *testing.T) {
	c := RouteCounter{capacity: 4}
	for i := range 100 {
		for range 100 - i {
			c.AddSample(fmt.Sprintf("/r/%03d", i), routeSample(i%2 == 0, time.Duration(i)*time.Millisecond, true))
		}
	}
	if c.Len() > 8 {
		t.Errorf("holds %d routes, more than twice its capacity of 4", c.Len())
	}
	for _, rs := range TopRouteStats(&c, c.Len()) {
		var i int64
		if _, err := fmt.Sscanf(rs.Route, "/r/%03d", &i); err != nil || rs.Count > 100-i || rs.Duration.Count != rs.Count ||
			rs.Errors != rs.Count*((i+1)%2) {
			t.Errorf("kept %+v, of %d messages", rs, 100-i)
		}
	}
	var a, b RouteCounter
	for range 100 {
		a.AddSample("/r", routeSample(false, time.Millisecond, true))
	}
	b.AddSample("/r", routeSample(true, time.Second, true))
	b.AddSample("/new", routeSample(false, 0, false))
	a.Merge(&b)
	top := TopRouteStats(&a, 2)
	if len(top) != 2 || top[0].Route != "/r" || top[0].Count != 101 || top[0].Errors != 1 || top[0].Duration.Count != 101 ||
		top[1] != (RouteStats{Route: "/new", Count: 1}) {
		t.Errorf("merged top = %+v", top)
	}
}
