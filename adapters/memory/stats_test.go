package memory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Stats, which walks the range in steps, gives what stats.Builder gives
// on the messages themselves fed in List order, for random messages (durations
// present or not, odd status codes, visibility and expiry, two scopes),
// filters, intervals and ranges (the walk reads only the range), with a few
// hundred distinct routes and with more than the builder counts exactly.
func TestStatsAgreeWithTheBuilder(t *testing.T) {
	for _, tc := range []struct {
		name           string
		messages       int
		distinctRoutes int // routes each on few messages
		frequentRoutes int // routes on many messages, each on a different share
	}{
		{"few routes", 6_000, 300, 0},
		{"as many routes as ranked exactly", 30_000, stats.MaxRankedKeys - 12, 12},
		{"more routes than the bound", 40_000, 5 * stats.MaxRankedKeys, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.messages), 42))
			now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
			s, msgs := randomStatsStore(t, rng, now, tc.messages, tc.distinctRoutes, tc.frequentRoutes)
			ms := func(n int) *time.Duration { d := time.Duration(n) * time.Millisecond; return &d }
			filters := []domain.Filter{
				{}, {Name: "billing"}, {Name: "nobody"}, {StatusMin: 400, StatusMax: 499}, {StatusMin: 404, StatusMax: 404},
				{StatusMin: 300}, {StatusMax: 199}, {MinDuration: ms(2), MaxDuration: ms(900)}, {MaxDuration: ms(0)},
				{From: now.Add(-97 * time.Minute), To: now.Add(-31 * time.Minute)}, {From: now.Add(-50*time.Minute + 1)},
				{Method: "POST"}, {PathPrefix: "/v1/orders/1"}, {Text: "heron", StatusMin: 200, StatusMax: 299},
				{Name: "shop", MinDuration: ms(1), Method: "GET"},
			}
			ranges := []struct {
				from, to time.Time
				interval int
			}{
				{now.Add(-3 * time.Hour), now.Add(time.Minute), 2},      // 15m, the whole store
				{now.Add(-3 * time.Hour), now.Add(time.Minute), 0},      // 1m, 181 buckets
				{now.Add(-150*time.Minute + 7*time.Second), now, 3},     // 1h, a first bucket before from
				{now.Add(-time.Hour), now.Add(-10*time.Minute + 1), 1},  // 5m, a to off the second
				{now.Add(-26 * time.Hour), now.Add(-25 * time.Hour), 0}, // nothing stored
			}
			scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
			slices.SortFunc(msgs, func(a, b domain.Message) int {
				if domain.Precedes(a, b) {
					return -1
				}
				return 1
			})
			for _, f := range filters {
				matches := f.Matcher()
				for _, r := range ranges {
					at := now.Add(time.Duration(rng.IntN(3)-1) * 20 * time.Minute)
					q := stats.Query{Scope: scope, From: r.from, To: r.to, Interval: stats.Intervals[r.interval], Filter: f}
					want := stats.NewBuilder(q)
					for _, m := range msgs {
						if m.Scope() == scope && m.Readable(at) && matches(m) {
							want.Add(stats.SampleOf(m))
						}
					}
					got, err := s.Stats(t.Context(), q, at)
					if err != nil {
						t.Fatal(err)
					}
					if wantStats := want.Stats(); !reflect.DeepEqual(got, wantStats) {
						t.Fatalf("filter %+v, [%s, %s) by %s at %s:\n%s", f, r.from.Format(time.TimeOnly), r.to.Format(time.TimeOnly),
							q.Interval.Name, at.Format(time.TimeOnly), statsDiff(got, wantStats))
					}
				}
			}
		})
	}
}

// randomStatsStore fills a store with n random messages over the three hours
// before now, in random order, with distinct routes each on a few messages and
// frequent routes each on a share of its own.
func randomStatsStore(t *testing.T, rng *rand.Rand, now time.Time, n, distinct, frequent int) (*Store, []domain.Message) {
	t.Helper()
	pick := func(values ...string) string { return values[rng.IntN(len(values))] }
	s := New()
	msgs := make([]domain.Message, 0, n)
	for i := range n {
		id, err := domain.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		created := now.Add(-time.Duration(rng.Int64N(int64(3*time.Hour)/1e6)) * time.Millisecond) // ties too
		if i%5 == 0 {
			created = created.Truncate(time.Minute) // on the edges of buckets and ranges
		}
		var path string
		if frequent > 0 && rng.IntN(2) == 0 {
			// Routes of unequal shares, and a query string the route drops.
			path = fmt.Sprintf("/v1/orders/1%d?page=%d", rng.IntN(rng.IntN(frequent)+1), rng.IntN(5))
		} else {
			k := rng.IntN(distinct)
			path = fmt.Sprintf("/v%d/carts/%d%s", 1+k%2, k, pick("", "?x=1", "?"))
		}
		m := domain.Message{ID: id.ID, Reference: id.Reference, Account: pick("acme", "acme", "acme", "globex"), Domain: domain.DomainLive,
			Name: pick("shop", "billing", "search", ""), Method: pick("GET", "POST"), Path: path,
			StatusCode: []int{200, 201, 302, 404, 429, 500, 503, 101, 0, 700}[rng.IntN(10)],
			Duration:   time.Duration(rng.Int64N(int64(2*time.Second)/1000)) * time.Microsecond, HasDuration: rng.IntN(5) > 0,
			Request:   domain.Content{Body: pick("", `{"note":"blue heron"}`, `{"note":"gull"}`)},
			CreatedAt: created, UpdatedAt: created, VisibleAt: created.Add(time.Duration(rng.IntN(30)) * time.Minute),
			ExpiresAt: created.Add(time.Duration(60+rng.IntN(240)) * time.Minute)}
		if i%97 == 0 {
			m.Duration = 0 // a duration of zero is still a duration
		}
		msgs = append(msgs, m)
	}
	for batch := range slices.Chunk(msgs, 500) {
		if err := s.Append(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	return s, msgs
}

// statsDiff names the first parts where got and want differ.
func statsDiff(got, want stats.Stats) string {
	var out string
	if got.Total != want.Total {
		out += fmt.Sprintf("total %+v, want %+v\n", got.Total, want.Total)
	}
	if len(got.Buckets) != len(want.Buckets) {
		out += fmt.Sprintf("%d buckets, want %d\n", len(got.Buckets), len(want.Buckets))
	} else {
		for i := range got.Buckets {
			if got.Buckets[i] != want.Buckets[i] {
				out += fmt.Sprintf("bucket %d: %+v, want %+v\n", i, got.Buckets[i], want.Buckets[i])
				break
			}
		}
	}
	if !reflect.DeepEqual(got.TopPaths, want.TopPaths) {
		out += fmt.Sprintf("top paths %+v, want %+v\n", got.TopPaths, want.TopPaths)
	}
	if !reflect.DeepEqual(got.TopNames, want.TopNames) {
		out += fmt.Sprintf("top names %+v, want %+v\n", got.TopNames, want.TopNames)
	}
	if out == "" {
		out = fmt.Sprintf("%#v\nwant %#v", got, want)
	}
	return out
}
