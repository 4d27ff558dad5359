package memory_test

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
)

// BenchmarkAlertEvaluation evaluates 1,000 rules over the explorer
// benchmarks' store (benchStored messages over a day; a million with
// REQLOG_BENCH_STORED=1000000):
//
//	REQLOG_BENCH_STORED=1000000 go test -run '^$' -bench AlertEvaluation -benchtime 20x ./adapters/memory/
func BenchmarkAlertEvaluation(b *testing.B) {
	s, now := filledStore(b)
	conformance.BenchAlertEvaluation(b, s, memory.NewAlertStore(), scope, []string{"shop-frontend", "billing", "search"}, now)
}

// BenchmarkAlertStore is what alerting adds to the statistics on this store:
// the same rounds over no traffic.
func BenchmarkAlertStore(b *testing.B) {
	conformance.BenchAlertEvaluation(b, conformance.NoTraffic{}, memory.NewAlertStore(), scope, []string{"shop-frontend", "billing", "search"},
		time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
}
