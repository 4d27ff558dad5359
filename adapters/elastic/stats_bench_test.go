package elastic

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkStats24Hours: Stats over the last 24 hours (96 buckets of 15
// minutes) of 100,000 messages spread over them, on the real node, with the
// store's percentile compression and with Elasticsearch's default.
//
//	go test -run '^$' -bench Stats24Hours -benchtime 20x ./adapters/elastic/
func BenchmarkStats24Hours(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	base := elastictest.URL(b)
	s, err := New(ctx, Config{Addresses: []string{base}, IndexPrefix: "reqlog-bench-stats"})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	b.Cleanup(func() {
		for _, day := range []time.Time{now, now.Add(-24 * time.Hour)} {
			req, _ := http.NewRequest(http.MethodDelete, base+"/"+s.names.For(day), nil)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
		_ = s.Close(ctx)
	})
	rng := rand.New(rand.NewPCG(5, 6))
	template := benchMessages(1)[0]
	paths := []string{"/v1/orders", "/v1/users", "/v1/carts", "/v1/payments", "/health"}
	batch := make([]domain.Message, 0, 1000)
	for i := range n {
		m := template
		m.ID = fmt.Sprintf("msg_%020d", i)
		m.CreatedAt = now.Add(-time.Duration(rng.Int64N(int64(24 * time.Hour)))).Truncate(time.Microsecond)
		m.UpdatedAt, m.VisibleAt = m.CreatedAt, m.CreatedAt
		m.ExpiresAt = m.CreatedAt.Add(30 * 24 * time.Hour)
		m.Path = paths[rng.IntN(len(paths))]
		m.StatusCode = []int{200, 201, 404, 500}[rng.IntN(4)]
		m.Duration, m.HasDuration = time.Duration(math.Exp(3+1.5*rng.NormFloat64())*1000)*time.Microsecond, true
		m.Request.Body, m.Response.Body = "", `{"ok":true}` // statistics read no body; keep the setup short
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			if err := s.Append(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	from := now.Add(-24 * time.Hour)
	q := domain.StatsQuery{Scope: domain.Scope{Account: "acme", Domain: "live"}, From: from, To: now,
		Interval: domain.Intervals[2], Filter: domain.Filter{From: from, To: now}}
	WaitFor(b, "every message counted after the refresh", 2*time.Minute, func() error {
		stats, err := s.Stats(ctx, q, now.Add(time.Second))
		if err == nil && stats.Total.Count != n {
			err = fmt.Errorf("Stats counts %d of %d messages", stats.Total.Count, n)
		}
		return err
	})
	// The store's compression, and Elasticsearch's default for comparison.
	for _, compression := range []int{percentileCompression, 100} {
		b.Run(fmt.Sprintf("compression=%d", compression), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.stats(ctx, q, now.Add(time.Second), compression); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
