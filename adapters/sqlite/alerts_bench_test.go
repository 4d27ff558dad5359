package sqlite_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// benchStore is a fresh store and how many messages a benchmark stores in
// it: REQLOG_BENCH_STORED, 100,000 by default.
func benchStore(b *testing.B) (*sqlite.Store, int) {
	stored := 100_000
	if n, err := strconv.Atoi(os.Getenv("REQLOG_BENCH_STORED")); err == nil && n > 0 {
		stored = n
	}
	s, err := sqlite.New(b.Context(), sqlite.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, stored
}

// BenchmarkAlertEvaluation evaluates 1,000 rules over a store of
// REQLOG_BENCH_STORED messages (default 100,000) spread over the last 24
// hours, on the default store:
//
//	REQLOG_BENCH_STORED=1000000 go test -run '^$' -bench AlertEvaluation -benchtime 10x ./adapters/sqlite/
func BenchmarkAlertEvaluation(b *testing.B) {
	s, stored := benchStore(b)
	now := time.Now().UTC().Truncate(time.Minute)
	names := []string{"shop-frontend", "billing", "search"}
	statuses := []int{200, 200, 200, 201, 204, 302, 400, 404, 429, 500}
	batch := make([]domain.Message, 0, 1000)
	for i := range stored {
		created := now.Add(-time.Duration(i+1) * (24 * time.Hour / time.Duration(stored)))
		batch = append(batch, conformance.NewMessage(b, scope, created, func(m *domain.Message) {
			m.Name = names[i%len(names)]
			m.Method = []string{"GET", "POST"}[i%2]
			m.Path = fmt.Sprintf("/v1/orders/%d", i%500)
			m.StatusCode = statuses[i%len(statuses)]
			m.Duration, m.HasDuration = time.Duration(i%2000)*137*time.Microsecond, i%7 != 0
			m.VisibleAt, m.ExpiresAt = created, now.Add(30*24*time.Hour)
		}))
		if len(batch) == cap(batch) {
			if err := s.Append(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := s.Append(b.Context(), batch); err != nil {
		b.Fatal(err)
	}
	alerts, err := sqlite.NewAlertStore(b.Context(), s)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = alerts.Close() })
	conformance.BenchAlertEvaluation(b, s, alerts, scope, names, now.Add(time.Second))
}
