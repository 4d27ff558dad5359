package esquery

import (
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// createdAtClauses are the range clauses on created_at of a search body.
func createdAtClauses(t *testing.T, body object) []object {
	t.Helper()
	var bounds []object
	for _, c := range body["query"].(object)["bool"].(object)["filter"].([]object) {
		if r, ok := c["range"].(object); ok {
			if b, ok := r["created_at"].(object); ok {
				bounds = append(bounds, b)
			}
		}
	}
	return bounds
}

// A cacheable statistics search bounds created_at by two clauses, each closed
// by the storable range on the side it leaves open, so that the upper bound
// (now) holds for a whole past day and Elasticsearch rewrites it away there.
func TestStatsSearchSplitsTheRangeWhenCacheable(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 7, 13, 123456000, time.UTC)
	from := now.Add(-24 * time.Hour).Truncate(15 * time.Minute)
	q := stats.Query{Scope: domain.Scope{Account: "acme", Domain: "live"}, From: from, To: now,
		Interval: stats.Intervals[2], Filter: domain.Filter{From: from, To: now}}
	earliest, latest := esdoc.QueryTime(esdoc.MinStorableTime), esdoc.QueryTime(esdoc.MaxStorableTime)
	for _, tc := range []struct {
		plan statsPlan
		want []object
	}{
		{statsPlan{compression: 500}, []object{{"gte": esdoc.QueryTime(from), "lt": esdoc.QueryTime(now)}}},
		{statsPlan{compression: 500, cacheable: true}, []object{
			{"gte": esdoc.QueryTime(from), "lte": latest},
			{"gte": earliest, "lt": esdoc.QueryTime(now)},
		}},
	} {
		body, ok := statsSearch(q, now, tc.plan)
		if !ok {
			t.Fatalf("%+v: no search", tc.plan)
		}
		if got := createdAtClauses(t, body); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: created_at clauses %v, want %v", tc.plan, got, tc.want)
		}
	}
	// Only the bound that moves with now differs between two requests.
	later := now.Add(3 * time.Second)
	q.To, q.Filter.To = later, later
	body, _ := statsSearch(q, later, statsPlan{compression: 500, cacheable: true})
	if got := createdAtClauses(t, body)[0]; !reflect.DeepEqual(got, object{"gte": esdoc.QueryTime(from), "lte": latest}) {
		t.Errorf("the lower clause moved with now: %v", got)
	}
}
