package mongo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// benchStored is how many messages the read benchmarks store, spread over the
// last 24 hours; one of them holds benchToken in its response body. Few, as
// the embedded FerretDB scans (it decodes every document of the scope).
const (
	benchStored = 2000
	benchToken  = "ord_8f7d2c"
)

// openFilled opens a store on a fresh database holding benchStored messages,
// and returns the time they are all readable at.
func openFilled(b *testing.B) (*mongo.Store, time.Time) {
	uri, db := mongotest.NewDatabase(b)
	s, err := mongo.New(b.Context(), mongo.Config{URI: uri, Database: db})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	now := time.Now()
	batch := make([]domain.Message, 0, 500)
	for i := range benchStored {
		m := benchMessage(b, now.Add(-time.Duration(i)*24*time.Hour/benchStored))
		m.ExpiresAt = now.Add(time.Hour)
		m.Path = fmt.Sprintf("/v1/orders/%d?page=%d", i%50, i%7)
		m.Name = fmt.Sprintf("app-%d", i%30)
		m.StatusCode = []int{200, 201, 204, 302, 404, 500}[i%6]
		m.Duration, m.HasDuration = time.Duration(i%997)*time.Millisecond, i%10 != 0
		if i == benchStored/2 {
			m.Response.Body = `{"order":"` + benchToken + `"}`
		}
		if batch = append(batch, m); len(batch) == cap(batch) {
			if err := s.Append(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return s, now.Add(time.Second)
}

// BenchmarkReads measures the explorer's reads over benchStored messages:
// statistics of 24 hours in 15-minute buckets, and a search matching one message.
func BenchmarkReads(b *testing.B) {
	s, now := openFilled(b)
	b.Run("stats-24h/"+s.StatsMethod(), func(b *testing.B) {
		q, err := stats.ParseQuery(nil, now)
		if err != nil {
			b.Fatal(err)
		}
		q.Scope = scope
		for b.Loop() {
			st, err := s.Stats(b.Context(), q, now)
			if err != nil {
				b.Fatal(err)
			}
			if st.Total.Count != benchStored {
				b.Fatalf("counted %d messages, want %d", st.Total.Count, benchStored)
			}
		}
	})
	b.Run("search-one", func(b *testing.B) {
		q := domain.Query{Scope: scope, Filter: domain.Filter{Text: benchToken}, Limit: 50}
		for b.Loop() {
			page, err := s.List(b.Context(), q, now)
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Messages) != 1 {
				b.Fatalf("found %d messages, want 1", len(page.Messages))
			}
		}
	})
}
