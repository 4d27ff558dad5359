package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// topRoutesDiff compares got's top_routes with want's (stats.Builder's
// over msgs): routes, order, counts and errors exactly; each route's
// percentiles between the durations at its neighbouring ranks, within 1 %
// past stats.ExactDurations of them (a digest per route).
func topRoutesDiff(msgs []domain.Message, q stats.Query, now time.Time, want, got []stats.RouteStats) []string {
	if len(got) != len(want) {
		return []string{fmt.Sprintf("top routes %v, want %v", got, want)}
	}
	durations := map[string][]float64{}
	for _, m := range counted(msgs, q, now) {
		if ms, ok := m.DurationMS(); ok && m.Route != "" {
			durations[m.Route] = append(durations[m.Route], ms)
		}
	}
	var diff []string
	for i, w := range want {
		g := got[i]
		if g.Route != w.Route || g.Errors != w.Errors {
			diff = append(diff, fmt.Sprintf("top route %d: %+v, want %+v", i, g, w))
			continue
		}
		if g.Count != w.Count || g.Duration.Count != w.Duration.Count {
			diff = append(diff, fmt.Sprintf("top route %d: %+v, want %+v", i, g, w))
			continue
		}
		sorted := durations[w.Route]
		slices.Sort(sorted)
		diff = append(diff, percentileDiff("route "+w.Route, g.Duration, sorted, tolerance(len(sorted)))...)
	}
	return diff
}

// A route is kept as sent and comes back with the message; a message without
// one comes back without one.
func testRouteRoundTrip(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := []domain.Message{
		f.message(scopeLive, f.ago(3*time.Minute), func(m *domain.Message) { m.Route = "/v1/orders/{id}/pay" }),
		f.message(scopeLive, f.ago(2*time.Minute), func(m *domain.Message) { m.Route = "/ünï/{cødé}/☕ x" }),
		f.message(scopeLive, f.ago(time.Minute)),
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	for _, m := range msgs {
		assertGet(t, s, m, f.now())
	}
	assertMessages(t, "List", expectedPage(msgs, domain.Query{Scope: scopeLive, Limit: 10}, f.now()),
		listAll(t, s, scopeLive, domain.Filter{}, 10, f.now()))
}

// The route filter matches the template exactly, alone and with other
// filters, on lists and statistics alike.
func testRouteFilter(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	routes := []string{"/v1/orders/{id}", "/v1/orders/{id}/pay", "/v1/orders", "/V1/orders/{id}", ""}
	var msgs []domain.Message
	for i := range 40 {
		msgs = append(msgs, f.message(scopeLive, from.Add(time.Duration(i)*7*time.Minute), func(m *domain.Message) {
			m.Route = routes[i%len(routes)]
			m.Path = fmt.Sprintf("/v1/orders/%d", i)
			m.StatusCode = []int{200, 404, 500}[i%3]
			m.Name = []string{"shop", "billing"}[i%2]
			if i%4 != 0 {
				withDuration(float64(i) * 3.5)(m)
			}
		}))
	}
	msgs = append(msgs, f.message(scopeTest, from, func(m *domain.Message) { m.Route = routes[0] }))
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs[:len(msgs)-1])
	for _, filter := range []domain.Filter{
		{Route: routes[0]}, {Route: routes[1]}, {Route: routes[2]}, {Route: routes[3]},
		{Route: "/v1/orders/{"}, // a prefix of a route matches nothing
		{Route: routes[0], Name: "shop"}, {Route: routes[1], StatusMin: 400, StatusMax: 499},
	} {
		q := domain.Query{Scope: scopeLive, Filter: filter, Limit: domain.MaxLimit}
		want := expectedPage(msgs, q, f.now())
		if len(want) == 0 && filter.Route != "/v1/orders/{" {
			t.Fatalf("fixture error: %s matches nothing", describeQuery(q))
		}
		assertMessages(t, "List("+describeQuery(q)+")", want, listAll(t, s, scopeLive, filter, domain.MaxLimit, f.now()))
		sq := statsQuery(scopeLive, from, to, "1h", filter)
		assertStats(t, msgs, sq, f.now(), getStats(t, s, sq, f.now()))
	}
}

// top_routes: the 20 routes of most messages, by count descending then route
// ascending, each with its errors (status 400 or more) and percentiles;
// messages without a route, hidden or of another scope count nowhere in it.
func testStatsTopRoutes(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	var msgs []domain.Message
	add := func(route string, status int, ms ...float64) {
		for _, d := range ms {
			msgs = append(msgs, f.message(scopeLive, from.Add(time.Duration(len(msgs))*13*time.Second), func(m *domain.Message) {
				m.Route, m.StatusCode = route, status
				m.Path = fmt.Sprintf("/x/%d", len(msgs))
				if d >= 0 {
					withDuration(d)(m)
				}
			}))
		}
	}
	add("/orders/{id}", 200, 1, 2, 3, 4, 5, 6)
	add("/orders/{id}", 404, 100, -1)     // errors, one without a duration
	add("/orders/{id}/pay", 500, 7, 9)    // a tie of 8 with the next, which sorts first
	add("/orders/{id}/pay", 399, 11, 13)  // not errors
	add("/orders/{id}/pay", 200, 1, 2, 3) // 7 in all
	add("/carts", 200, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007)
	add("", 500, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1) // no route: counted nowhere in top_routes
	for i := range 20 {                        // twenty of one each: the last three fall off
		add(fmt.Sprintf("/r/%02d", 19-i), 400+i, float64(i))
	}
	// Many durations on one route: its percentiles from a summary, not a few values.
	for i := range 700 {
		add("/bulk", 200, float64(i%97)*1.25+float64(i)*0.001)
	}
	readable := slices.Clone(msgs)
	msgs = append(msgs,
		f.message(scopeLive, from.Add(time.Hour), func(m *domain.Message) {
			m.Route = "/r/19"
			m.VisibleAt = f.now().Add(time.Microsecond) // hidden
		}),
		f.message(scopeTest, from, func(m *domain.Message) { m.Route = "/r/19" }))
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), readable)

	q := statsQuery(scopeLive, from, to, "1h", domain.Filter{})
	want := expectedStats(msgs, q, f.now())
	wantRoutes := []string{"/bulk", "/orders/{id}", "/carts", "/orders/{id}/pay"}
	for i := range 16 {
		wantRoutes = append(wantRoutes, fmt.Sprintf("/r/%02d", i))
	}
	var ref []string
	for _, r := range want.TopRoutes {
		ref = append(ref, r.Route)
	}
	if !slices.Equal(ref, wantRoutes) || want.TopRoutes[1].Errors != 2 || want.TopRoutes[3].Errors != 2 {
		t.Fatalf("fixture error: the reference ranks %+v", want.TopRoutes)
	}
	assertStats(t, msgs, q, f.now(), getStats(t, s, q, f.now()))
	// The same per application, and within a part of the range.
	for _, q := range []stats.Query{
		statsQuery(scopeLive, from, to, "6h", domain.Filter{Name: "shop"}),
		statsQuery(scopeLive, from.Add(5*time.Minute), from.Add(40*time.Minute), "5m", domain.Filter{}),
		statsQuery(scopeLive, from, to, "1h", domain.Filter{StatusMin: 400}),
	} {
		assertStats(t, msgs, q, f.now(), getStats(t, s, q, f.now()))
	}
}
