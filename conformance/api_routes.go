package conformance

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Route templates: submitted on a message or an envelope item, returned on
// every message (null when not sent), an exact filter on list, stats and
// export, ranked in top_routes; bad values refused naming the field.
func apiTestRoutes(t *testing.T, s apiSuite) {
	e := s.start(t)
	now := e.clock.Now()
	from := now.UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	to := from.Add(2 * time.Hour)
	type seeded struct {
		route  any // a string, nil (null) or apiAbsent
		status int
		ms     float64 // < 0: no duration
	}
	seeds := []seeded{
		{"/orders/{id}", 200, 10}, {"/orders/{id}", 200, 30}, {"/orders/{id}", 404, 20}, {"/orders/{id}", 503, -1},
		{"/orders/{id}/pay", 500, 5}, {"/orders/{id}/pay", 201, 7}, {"/orders/{id}/pay", 200, 9}, {"/orders/{id}/pay", 200, 11},
		{"/carts", 200, 1}, {"/health", 399, 2},
		{nil, 500, 1}, {apiAbsent, 500, 1}, {apiAbsent, 500, 1}, {apiAbsent, 500, 1}, {apiAbsent, 500, 1}, // counted nowhere in top_routes
	}
	var items []any
	for i, sd := range seeds {
		edits := map[string]any{"route": sd.route, "path": fmt.Sprintf("/orders/ord_%d?x=%d", i, i), "response.status_code": sd.status}
		if sd.ms >= 0 {
			edits["duration_ms"] = sd.ms
		}
		items = append(items, apiItem(from.Add(time.Duration(i)*time.Minute), edits))
	}
	ids := apiIDs(e.ingestBatch(t, apiAcmeLive, items, len(items)))
	// An envelope item carries it too.
	envelope := map[string]any{"messages": []any{apiItem(from.Add(time.Hour), map[string]any{
		"name": apiAbsent, "app": "portal", "status_code": 200, "response.status_code": apiAbsent, "route": "/carts"})}}
	ids = append(ids, apiIDs(e.ingestBatch(t, apiAcmeLive, envelope, 1))...)
	seeds = append(seeds, seeded{"/carts", 200, -1})
	e.reveal(t, apiAcmeLive, ids...)
	// Another scope's messages of the same route count nowhere here.
	e.ingestOne(t, apiAcmeTest, apiItem(from, map[string]any{"route": "/orders/{id}"}))

	t.Run("round trip", func(t *testing.T) {
		for i, id := range ids {
			m := e.fetch(t, apiAcmeLive, id)
			want, ok := seeds[i].route.(string)
			if got, present := m["route"]; !present || (ok && got != want) || (!ok && got != nil) {
				t.Errorf("message %d: route is %s, want %v (null when not sent)", i, apiShow(got), seeds[i].route)
			}
		}
	})

	withRoute := func(route string) (out []string) {
		for i, sd := range seeds {
			if sd.route == route {
				out = append(out, ids[i])
			}
		}
		return out
	}
	idsOf := func(msgs []map[string]any) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m["id"].(string))
		}
		slices.Sort(out)
		return out
	}
	t.Run("filter", func(t *testing.T) {
		for _, route := range []string{"/orders/{id}", "/orders/{id}/pay", "/carts", "/orders/{", "/ORDERS/{id}"} {
			want := withRoute(route)
			slices.Sort(want)
			if got := idsOf(e.listAll(t, apiAcmeLive, url.Values{"route": {route}})); !slices.Equal(got, want) {
				t.Errorf("list route=%s: %v, want %v", route, got, want)
			}
			if got := idsOf(e.exportNDJSON(t, apiAcmeLive, url.Values{"route": {route}})); !slices.Equal(got, want) {
				t.Errorf("export route=%s: %v, want %v", route, got, want)
			}
			data := e.stats(t, apiAcmeLive, url.Values{"from": {apiRFC3339(from)}, "to": {apiRFC3339(to)}, "route": {route}})
			if n := apiInt(t, data, "total.count"); n != len(want) {
				t.Errorf("stats route=%s counts %d, want %d", route, n, len(want))
			}
		}
	})

	t.Run("top_routes", func(t *testing.T) {
		data := e.stats(t, apiAcmeLive, url.Values{"from": {apiRFC3339(from)}, "to": {apiRFC3339(to)}})
		// A tie of four, route ascending; then another tie of two.
		apiWantRanking(t, data, "top_routes", "route", [][3]any{
			{"/orders/{id}", 4, 2}, {"/orders/{id}/pay", 4, 1}, {"/carts", 2, 0}, {"/health", 1, 0}})
		for i, route := range []string{"/orders/{id}", "/orders/{id}/pay", "/carts", "/health"} {
			var durations []float64
			for _, sd := range seeds {
				if sd.route == route && sd.ms >= 0 {
					durations = append(durations, sd.ms)
				}
			}
			apiWantDurations(t, data, fmt.Sprintf("top_routes.%d", i), durations)
		}
		if n := apiInt(t, data, "total.count"); n != len(seeds) {
			t.Errorf("the total counts %d messages, want all %d, with a route or not", n, len(seeds))
		}
	})

	t.Run("bad values", func(t *testing.T) {
		for _, bad := range []any{"", "orders/{id}", "/orders?id=1", "/orders#x", "/" + strings.Repeat("a", 256), "/a\nb", "/a\u0000", "/a\u0085", 7, true, map[string]any{}} {
			body := []any{apiItem(now, nil), apiItem(now, map[string]any{"route": bad})}
			e.post(t, apiAcmeLive, body).wantError(t, 400, "[1].route")
			e.post(t, apiAcmeLive, apiItem(now, map[string]any{"route": bad})).wantError(t, 400, "route")
			if text, ok := bad.(string); ok {
				for _, target := range []string{"/v1/messages", "/v1/stats", "/v1/messages/export"} {
					e.get(t, apiAcmeLive, target+"?"+url.Values{"route": {text}}.Encode()).wantError(t, 400, "route")
				}
			}
		}
		e.wantStoredExactly(t, apiAcmeLive, ids...)
	})
}
