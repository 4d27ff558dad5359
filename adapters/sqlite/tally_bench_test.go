package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkAppendTallies prices what an ingest rule drops against what it
// keeps: Append of batches of the 1.8 KB submission kept whole (kind=messages,
// BenchmarkAppend's words case) or dropped, as tallies (kind=tallies: a row of
// the narrow table and the rollups; issue 39 asks at most a third of a
// message), and of a batch of one kept in ten (kind=sampled). It reports
// exchanges per second, the process's CPU per exchange and the disk per
// exchange.
//
//	go test -run '^$' -bench AppendTallies -benchtime 40x ./adapters/sqlite/
func BenchmarkAppendTallies(b *testing.B) {
	for _, kind := range []string{"messages", "tallies", "sampled"} {
		b.Run(fmt.Sprintf("batch=500/kind=%s", kind), func(b *testing.B) {
			const batch = 500
			dir := b.TempDir()
			s := mustOpenB(b, sqlite.Config{Dir: dir})
			batches := make([][]domain.Message, b.N)
			for i := range batches {
				batches[i] = benchMessages(b, batch)
				for j := range batches[i] {
					if kind == "tallies" || kind == "sampled" && j%10 != 0 {
						batches[i][j] = batches[i][j].AsTally()
					}
				}
			}
			measureAppend(b, s, dir, batches, "exchange")
		})
	}
}
