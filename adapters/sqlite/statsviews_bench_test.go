package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// BenchmarkStatsViews prices the statistics rows of docs/benchmarks.md
// ("Kept hours", "Statistics of one word") at a scale a test can seed:
// REQLOG_BENCH_STATS_N messages (100,000 unless set) over the 24 hours
// before a fixed now, four applications, half their paths carrying ids,
// 15 of 16 holding the word "application" (counted as the rollups less the
// rest). Each view is counted once before the timer, which keeps its whole
// hours. With REQLOG_BENCH_STATS_DIR the store is seeded there once and
// read again by later runs, so that two builds are measured on the same
// files:
//
//	REQLOG_BENCH_STATS_DIR=/tmp/statsviews go test -run '^$' -bench StatsViews -benchtime 50x ./adapters/sqlite/
func BenchmarkStatsViews(b *testing.B) {
	n := envInt(b, "REQLOG_BENCH_STATS_N", 100_000)
	dir := os.Getenv("REQLOG_BENCH_STATS_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	// The reads by seq are taken whatever the wall-clock probe would say on
	// a loaded machine: the figures are of the plan, not of the probe.
	s := mustOpenB(b, sqlite.Config{Dir: dir, Stats: daystats.Config{Probe: daystats.FixedProbe(true)}})
	at := seededAt(b, s, dir, n)
	day := map[string][]string{"from": {domain.FormatTime(at.Add(-24 * time.Hour))}, "to": {domain.FormatTime(at)}}
	for _, view := range []struct {
		name   string
		values map[string][]string
	}{
		{"scope", nil},
		{"application", map[string][]string{"name": {"app-1"}}},
		{"q=application", map[string][]string{"q": {"application"}, "from": day["from"], "to": day["to"]}},
		{"q=application,application", map[string][]string{"q": {"application"}, "name": {"app-1"}}},
	} {
		b.Run(view.name, func(b *testing.B) {
			q, err := stats.ParseQuery(view.values, at)
			if err != nil {
				b.Fatal(err)
			}
			q.Scope = scope
			if _, err := s.Stats(b.Context(), q, at); err != nil { // keeps the whole hours
				b.Fatal(err)
			}
			cpu := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				st, err := s.Stats(b.Context(), q, at)
				if err != nil {
					b.Fatal(err)
				}
				if st.Total.Count == 0 {
					b.Fatal("nothing counted")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// seededAt returns the now the store in dir was seeded for, seeding n
// messages first when it holds none.
func seededAt(b *testing.B, s *sqlite.Store, dir string, n int) time.Time {
	b.Helper()
	atFile := filepath.Join(dir, "bench-at.txt")
	if data, err := os.ReadFile(atFile); err == nil {
		at, err := time.Parse(time.RFC3339Nano, string(data))
		if err != nil {
			b.Fatal(err)
		}
		return at
	}
	const apps = 4
	at := time.Now().UTC().Truncate(time.Second)
	for a := range apps {
		msgs := conformance.MessageSeries(b, scope, fmt.Sprintf("app-%d", a), n/apps, at.Add(-24*time.Hour), 24*time.Hour/time.Duration(n/apps))
		for i := range msgs {
			if i%2 == 0 {
				msgs[i].Path = fmt.Sprintf("/v1/orders/%d", a*n+i) // paths that carry ids
			}
			msgs[i].Response.Body = `{"note":"application"}`
			if i%16 == 0 {
				msgs[i].Response.Body = `{"note":"other"}`
			}
		}
		for len(msgs) > 0 {
			k := min(500, len(msgs))
			if err := s.Append(b.Context(), msgs[:k]); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[k:]
		}
	}
	if err := os.WriteFile(atFile, []byte(at.Format(time.RFC3339Nano)), 0o600); err != nil {
		b.Fatal(err)
	}
	return at
}

// envInt is the number the environment variable name holds, or def when
// it is unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}
