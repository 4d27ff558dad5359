package stats

import (
	"fmt"
	"math"
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

// Past 2·MaxRankedRoutes routes the counter keeps the most counted; merging
// counters adds them up; the encoding gives the counter back.
func TestRouteCounterBoundsAndMerges(t *testing.T) {
	c := RouteCounter{capacity: 4}
	for i := range 100 {
		for range 100 - i {
			c.Add(fmt.Sprintf("/r/%03d", i), i%2 == 0, time.Duration(i)*time.Millisecond, true)
		}
	}
	if c.Len() > 8 {
		t.Errorf("holds %d routes, more than twice its capacity of 4", c.Len())
	}
	var merged RouteCounter
	other := RouteCounter{}
	other.Add("/r/000", true, time.Second, true)
	other.Add("/new", false, 0, false)
	merged.Merge(&c)
	merged.Merge(&other)
	top := merged.Top(2)
	if top[0].Route != "/r/000" || top[0].Count != 101 || top[0].Errors != 101 || top[0].Duration.Count != 101 || top[0].Duration.P99 != 0 {
		t.Errorf("merged top = %+v", top)
	}
	var r Rollup
	r.Count, r.Status = 2, StatusCounts{1: 2}
	r.Routes.Add("/a/{id}", false, 1500*time.Microsecond, true)
	r.Routes.Add("/a/{id}", false, 0, false)
	data, _ := r.MarshalBinary()
	var back Rollup
	if err := back.UnmarshalBinary(data); err != nil || !slices.Equal(back.Routes.Top(math.MaxInt32), r.Routes.Top(math.MaxInt32)) {
		t.Errorf("routes decoded as %+v (%v), want %+v", back.Routes.Top(9), err, r.Routes.Top(9))
	}
	// A rollup written before routes were kept (version 1) reads as one of
	// messages without routes.
	v1 := append([]byte{rollupEncodingV1}, data[1:len(data)-len(r.Routes.appendBody(nil))]...)
	if err := back.UnmarshalBinary(v1); err != nil || back.Count != 2 || back.Routes.Len() != 0 {
		t.Errorf("a version 1 rollup: count %d, %d routes, %v", back.Count, back.Routes.Len(), err)
	}
}
