package httpclient_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
)

// A route template goes to the service with the exchange, comes back on the
// message ("" when none was sent), filters lists and statistics, and ranks
// in TopRoutes with its errors and durations.
func TestRoutes(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	routed := func(i int, route string) httpclient.Exchange {
		e := withDuration(i, ms(float64(10*(i+1))))
		e.Route = route
		return e
	}
	// exchange(1) and exchange(3) answer 404 and 503.
	ids, err := c.Submit(ctx, routed(0, "/orders/{id}"), routed(1, "/orders/{id}"), routed(2, "/carts"), routed(3, ""))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Get(ctx, ids[0].ID)
	if err != nil || m.Route != "/orders/{id}" {
		t.Errorf("route %q (%v), want /orders/{id}", m.Route, err)
	}
	if m, err := c.Get(ctx, ids[3].ID); err != nil || m.Route != "" {
		t.Errorf("a message sent without a route came back with %q (%v)", m.Route, err)
	}
	var got []string
	for m, err := range c.All(ctx, httpclient.ListOptions{Route: "/orders/{id}"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	if want := []string{ids[1].ID, ids[0].ID}; !slices.Equal(got, want) {
		t.Errorf("route filter: %v, want %v", got, want)
	}
	from := base.Truncate(time.Hour)
	s, err := c.Stats(ctx, httpclient.StatsOptions{ListOptions: httpclient.ListOptions{From: from, To: from.Add(2 * time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	want := []httpclient.RouteStats{
		{Route: "/orders/{id}", Count: 2, Errors: 1, Duration: &httpclient.DurationSummary{Count: 2, P50: ms(15), P95: ms(19.5), P99: ms(19.9)}},
		{Route: "/carts", Count: 1, Duration: &httpclient.DurationSummary{Count: 1, P50: ms(30), P95: ms(30), P99: ms(30)}},
	}
	if len(s.TopRoutes) != len(want) {
		t.Fatalf("top routes %+v, want %+v", s.TopRoutes, want)
	}
	for i := range want {
		if g, w := s.TopRoutes[i], want[i]; g.Route != w.Route || g.Count != w.Count || g.Errors != w.Errors || *g.Duration != *w.Duration {
			t.Errorf("top route %d: %+v %+v, want %+v %+v", i, g, *g.Duration, w, *w.Duration)
		}
	}
	filtered, err := c.Stats(ctx, httpclient.StatsOptions{ListOptions: httpclient.ListOptions{From: from, To: from.Add(2 * time.Hour), Route: "/carts"}})
	if err != nil || filtered.Total.Count != 1 {
		t.Errorf("stats by route: %+v, %v; want 1 message", filtered, err)
	}
}
