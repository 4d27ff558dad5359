package sqlite_test

import (
	"cmp"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// BenchmarkListPages is the store's part of an export: pages of 1,000
// messages (app.ExportPageSize) of the 1.8 KB submission, newest first,
// each after the last one's cursor, through a day of 20,000. It reports the
// process's CPU per message read.
//
//	go test -run '^$' -bench ListPages -benchtime 20x ./adapters/sqlite/
func BenchmarkListPages(b *testing.B) {
	const stored, pageSize = 20_000, 1000
	s := mustOpenB(b, sqlite.Config{Dir: b.TempDir()})
	for range stored / 500 {
		if err := s.Append(b.Context(), benchMessages(b, 500)); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now().Add(time.Hour)
	cpu := cpuTime(b)
	read := 0
	b.ResetTimer()
	for range b.N {
		read += listAll(b, s, domain.Query{Scope: scope, Limit: pageSize}, now, nil)
	}
	b.StopTimer()
	if read != b.N*stored {
		b.Fatalf("read %d messages, want %d", read, b.N*stored)
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(read), "cpu-µs/msg")
}

// BenchmarkStats is /v1/stats over a day of 20,000 messages of the 1.8 KB
// submission: the scope (from the rollups), a q of one word that every
// message holds (from the word and statistics indexes alone), a q of one
// word that 40 messages hold in their path (those rows read by seq) and a q
// of two (each message read whole and checked). It reports the CPU per
// message of the day.
//
//	go test -run '^$' -bench 'Stats$' -benchtime 5x ./adapters/sqlite/
func BenchmarkStats(b *testing.B) {
	const stored, rare = 20_000, "ord_zq7x3k9w"
	s := mustOpenB(b, sqlite.Config{Dir: b.TempDir()})
	for range stored / 500 {
		msgs := benchMessages(b, 500)
		msgs[0].Path = "/orders/" + rare
		if err := s.Append(b.Context(), msgs); err != nil {
			b.Fatal(err)
		}
	}
	at := time.Now().Add(time.Hour)
	counted := map[string]int64{rare: stored / 500}
	for _, q := range []string{"", "application", rare, "application/json"} {
		b.Run("q="+q, func(b *testing.B) {
			values := map[string][]string{}
			if q != "" {
				values["q"] = []string{q}
			}
			query, err := stats.ParseQuery(values, at)
			if err != nil {
				b.Fatal(err)
			}
			query.Scope = scope
			cpu := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				st, err := s.Stats(b.Context(), query, at)
				if err != nil {
					b.Fatal(err)
				}
				if want := cmp.Or(counted[q], stored); st.Total.Count != want {
					b.Fatalf("counted %d, want %d", st.Total.Count, want)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N*stored), "cpu-ns/msg")
		})
	}
}
