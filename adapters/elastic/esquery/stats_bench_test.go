package esquery

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// BenchmarkStats24Hours: Stats over the last 24 hours (96 buckets of 15
// minutes) of 100,000 messages spread over them, on the real node: the
// store's plan, the plan without the split created_at range (statsPlan), and
// with Elasticsearch's default percentile compression. Paths carry ids, as in
// reqlog-bench's traffic, so top paths rank tens of thousands of routes.
//
//	go test -run '^$' -bench Stats24Hours -benchtime 20x ./adapters/elastic/esquery/
func BenchmarkStats24Hours(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	base := elastictest.URL(b)
	client, indices := benchIndices(b, base, "reqlog-bench-stats")
	s := New(client, indices.Names())
	now := time.Now().UTC().Truncate(time.Microsecond)
	b.Cleanup(func() {
		for _, day := range []time.Time{now, now.Add(-24 * time.Hour)} {
			req, _ := http.NewRequest(http.MethodDelete, base+"/"+s.names.For(day), nil)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
	})
	rng := rand.New(rand.NewPCG(5, 6))
	template := fixtures.TrafficMessages(1)[0]
	paths := []string{"/v1/orders/%d", "/v1/users/%d", "/v1/carts/%d/items", "/v1/payments/%d", "/health"}
	batch := make([]domain.Message, 0, 1000)
	for i := range n {
		m := template
		m.ID = fmt.Sprintf("msg_%020d", i)
		m.CreatedAt = now.Add(-time.Duration(rng.Int64N(int64(24 * time.Hour)))).Truncate(time.Microsecond)
		m.UpdatedAt, m.VisibleAt = m.CreatedAt, m.CreatedAt
		m.ExpiresAt = m.CreatedAt.Add(30 * 24 * time.Hour)
		m.Path = paths[rng.IntN(len(paths))]
		if strings.Contains(m.Path, "%d") {
			m.Path = fmt.Sprintf(m.Path, rng.IntN(n))
		}
		m.StatusCode = []int{200, 201, 404, 500}[rng.IntN(4)]
		m.Duration, m.HasDuration = time.Duration(math.Exp(3+1.5*rng.NormFloat64())*1000)*time.Microsecond, true
		m.Request.Body, m.Response.Body = "", `{"ok":true}` // statistics read no body; keep the setup short
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			benchAppend(b, client, s.names, batch)
			batch = batch[:0]
		}
	}
	from := now.Add(-24 * time.Hour)
	q := stats.Query{Scope: domain.Scope{Account: "acme", Domain: "live"}, From: from, To: now,
		Interval: stats.Intervals[2], Filter: domain.Filter{From: from, To: now}}
	fixtures.WaitFor(b, "every message counted after the refresh", 2*time.Minute, func() error {
		st, err := s.AggregateStats(ctx, q, now.Add(time.Second))
		if err == nil && st.Total.Count != n {
			err = fmt.Errorf("Stats counts %d of %d messages", st.Total.Count, n)
		}
		return err
	})
	uncacheable := defaultStatsPlan
	uncacheable.cacheable = false
	defaultCompression := defaultStatsPlan
	defaultCompression.compression = 100
	for _, c := range []struct {
		name string
		plan statsPlan
	}{{"store", defaultStatsPlan}, {"one-range", uncacheable}, {"compression=100", defaultCompression}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.stats(ctx, q, now.Add(time.Second), c.plan); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
