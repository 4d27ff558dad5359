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

// List and Stats, which walk in steps, agree with domain.Filter.Matches and
// stats.Builder on the messages themselves, for random messages,
// filters, cursors and times.
func TestFiltersAgreeWithTheDomain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := domain.Micro(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	pick := func(values ...string) string { return values[rng.IntN(len(values))] }
	s := New()
	var msgs []domain.Message
	for i := range 600 {
		id, err := domain.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		created := now.Add(-time.Duration(rng.IntN(300)) * time.Second) // many ties
		m := domain.Message{ID: id.ID, Reference: id.Reference, Account: pick("acme", "globex"), Domain: domain.DomainLive,
			Name: pick("shop", "billing", "search"), IPAddress: pick("", "10.0.0.1", "2001:db8::1"),
			Method: pick("GET", "POST"), Path: pick("/v1/orders/1", "/v1/orders/2?x=Blue", "/v2/carts"),
			StatusCode: []int{200, 201, 302, 404, 429, 500}[rng.IntN(6)],
			Duration:   time.Duration(rng.IntN(5000)) * time.Microsecond, HasDuration: rng.IntN(4) > 0,
			Request: domain.Content{Header: domain.Header{"X-Tag": {pick("red", "Green")}, "Empty": nil},
				Body: pick("", `{"city":"Zürich"}`, `{"note":"blue heron"}`), Size: i},
			Response:  domain.Content{Header: domain.Header{"Server": {"envoy", pick("edge", "ORIGIN")}}, Body: pick("", "ok")},
			CreatedAt: created, UpdatedAt: created, VisibleAt: created.Add(time.Duration(rng.IntN(3)) * time.Minute),
			ExpiresAt: created.Add(time.Duration(2+rng.IntN(10)) * time.Minute)}
		msgs = append(msgs, m)
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	ms := func(n int) *time.Duration { d := time.Duration(n) * time.Millisecond; return &d }
	filters := []domain.Filter{
		{}, {Name: "billing"}, {Name: "nobody"}, {StatusMin: 400, StatusMax: 499}, {StatusMin: 404, StatusMax: 404},
		{StatusMin: 300}, {Method: "POST", Name: "shop"}, {IPAddress: "2001:db8::1"}, {Path: "/v2/carts"},
		{PathPrefix: "/v1/orders"}, {Text: "blue"}, {Text: "zürich"}, {Text: "origin"}, {Text: "Green", StatusMin: 200, StatusMax: 299},
		{From: now.Add(-100 * time.Second), To: now.Add(-50 * time.Second)}, {MinDuration: ms(1), MaxDuration: ms(3)},
		{MaxDuration: ms(2), Name: "search", Text: "envoy"},
	}
	agreeWithTheDomain(t, s, msgs, filters, now, rng)
}

func agreeWithTheDomain(t *testing.T, s *Store, msgs []domain.Message, filters []domain.Filter, now time.Time, rng *rand.Rand) {
	for _, f := range filters {
		for _, at := range []time.Time{now, now.Add(5 * time.Minute), now.Add(-2 * time.Minute)} {
			scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
			var want []domain.Message
			for _, m := range msgs {
				if m.Scope() == scope && m.Readable(at) && f.Matches(m) {
					want = append(want, m)
				}
			}
			slices.SortFunc(want, func(a, b domain.Message) int {
				if domain.Precedes(a, b) {
					return -1
				}
				return 1
			})
			var got []domain.Message
			q := domain.Query{Scope: scope, Filter: f, Limit: 1 + rng.IntN(7)}
			for {
				page, err := s.List(t.Context(), q, at)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page.Messages...)
				if q.After = page.Next(); q.After == nil {
					break
				}
			}
			what := fmt.Sprintf("filter %+v at %s", f, at.Format(time.TimeOnly))
			if len(got) != len(want) {
				t.Fatalf("%s: listed %d messages, want %d", what, len(got), len(want))
			}
			for i := range want {
				if !domain.SameSubmission(got[i], want[i]) {
					t.Fatalf("%s: message %d is %+v, want %+v", what, i, got[i], want[i])
				}
			}
			sq := stats.Query{Scope: scope, From: now.Add(-10 * time.Minute), To: now.Add(time.Minute),
				Interval: stats.Intervals[0], Filter: f}
			if sq.Filter.From.IsZero() {
				sq.Filter.From, sq.Filter.To = sq.From, sq.To
			}
			reference := stats.NewBuilder(sq)
			for _, m := range want {
				reference.Add(stats.SampleOf(m))
			}
			st, err := s.Stats(t.Context(), sq, at)
			if err != nil {
				t.Fatal(err)
			}
			if wantStats := reference.Stats(); !reflect.DeepEqual(st, wantStats) {
				t.Fatalf("%s: stats %+v, want %+v", what, st, wantStats)
			}
		}
	}
}
