package sqlite_test

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
)

// BenchmarkEachRow prices reading a day's statistics columns (what a
// statistics walk reads) through database/sql's rows.Scan and through the
// driver's rows (eachRow), per row.
func BenchmarkEachRow(b *testing.B) {
	s := mustOpenB(b, sqlite.Config{Dir: b.TempDir()})
	msgs := benchMessages(b, 20_000)
	for start := 0; start < len(msgs); start += 500 {
		if err := s.Append(b.Context(), msgs[start:start+500]); err != nil {
			b.Fatal(err)
		}
	}
	day := msgs[0].CreatedAt
	for _, c := range []struct {
		name string
		raw  bool
	}{{"scan", false}, {"eachRow", true}} {
		b.Run(c.name, func(b *testing.B) {
			start := time.Now()
			rows := 0
			for b.Loop() {
				n, err := s.ReadStatsColumns(b.Context(), day, c.raw)
				if err != nil || n != len(msgs) {
					b.Fatalf("%d rows read of %d: %v", n, len(msgs), err)
				}
				rows += n
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(rows), "ns/row")
		})
	}
}
