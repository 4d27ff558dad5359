package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/domain/stats"
)

// Counts stay true at scale: 100,000 exchanges over a day, kept whole in
// one scope and sampled 1 in 10 in another (the other nine tallies, as the
// ingester appends them), give the same statistics, bucket by bucket
// (counts, status classes and so error rates, percentiles, rankings), by
// the rollups' read and by a filter's; only dropped differs.
func TestSampledTrafficCountsAsTrafficKeptWhole(t *testing.T) {
	const exchanges = 100_000
	if testing.Short() {
		t.Skip("100,000 exchanges twice; not in -short")
	}
	sample := conformance.SampleOneIn(t, 10)
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	whole, sampled := scope, domain.Scope{Account: "sampled", Domain: domain.DomainLive}
	rng := rand.New(rand.NewPCG(39, 2))
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	var dropped int64
	for start := 0; start < exchanges; start += 5000 {
		var a, b []domain.Message
		for range 5000 {
			m := conformance.NewMessage(t, whole, day.Add(time.Duration(rng.Int64N(int64(24*time.Hour)))), func(m *domain.Message) {
				m.Name = []string{"shop", "billing", "search", "admin"}[rng.IntN(4)]
				m.Path = fmt.Sprintf("/v1/items/%d", rng.IntN(40))
				m.Route = []string{"/v1/items/{id}", ""}[rng.IntN(2)]
				m.StatusCode = []int{200, 200, 200, 201, 302, 404, 500, 503}[rng.IntN(8)]
				m.Duration, m.HasDuration = time.Duration(rng.ExpFloat64()*80_000)*time.Microsecond, rng.IntN(6) != 0
			})
			a = append(a, m)
			id, err := domain.NewIdentity()
			if err != nil {
				t.Fatal(err)
			}
			m.ID, m.Reference, m.Account, m.Domain = id.ID, id.Reference, sampled.Account, sampled.Domain
			if !sample.Apply(&m, rules.SourceAPI).Stored {
				dropped++
			}
			b = append(b, m)
		}
		if err := s.Append(opCtx(t), a); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(opCtx(t), b); err != nil {
			t.Fatal(err)
		}
	}
	if dropped < exchanges*8/10 || dropped > exchanges*95/100 {
		t.Fatalf("the sample dropped %d of %d", dropped, exchanges)
	}
	at := time.Now().Add(time.Minute)
	for _, filter := range []domain.Filter{{}, {Name: "billing"}, {StatusMin: 500, StatusMax: 599}, {Text: "items"}} {
		q := stats.Query{From: day, To: day.Add(24 * time.Hour), Interval: stats.Intervals[2], Filter: filter}
		q.Filter.From, q.Filter.To = q.From, q.To
		q.Scope = whole
		want, err := s.Stats(opCtx(t), q, at)
		if err != nil {
			t.Fatal(err)
		}
		q.Scope = sampled
		got, err := s.Stats(opCtx(t), q, at)
		if err != nil {
			t.Fatal(err)
		}
		if filter == (domain.Filter{}) && (got.Total.Dropped != dropped || want.Total.Count != exchanges) {
			t.Errorf("counted %d of %d, %d dropped; want %d dropped", got.Total.Count, want.Total.Count, got.Total.Dropped, dropped)
		}
		got.Total.Dropped = 0
		for i := range got.Buckets {
			got.Buckets[i].Dropped = 0
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("filter %+v: the sampled traffic's statistics\n%+v\ndiffer from the whole traffic's\n%+v", filter, got.Total, want.Total)
		}
	}
}
