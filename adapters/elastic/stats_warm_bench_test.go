package elastic

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/elastic/internal/fixtures"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// BenchmarkStatsWarm24Hours: the default 24 h statistics of a seeded store
// (reqlog-bench -direct elasticsearch ... seed, prefix in
// REQLOG_BENCH_STATS_PREFIX, scope in REQLOG_BENCH_STATS_SCOPE, default
// bench:live) for the scope and for its busiest application, one call a
// second after a first, cold one, while the benchmark appends 12 messages a
// second now (reqlog-bench's -rate 4 -items 3 -live): the latency's p50
// and p99, the requests each call sends the node (Trace.StoreRequests), and
// this process's CPU per call (the node's from /proc with
// REQLOG_BENCH_NODE_PID).
//
//	REQLOG_TEST_ELASTICSEARCH_URL=http://127.0.0.1:9281 REQLOG_BENCH_STATS_PREFIX=reqlog \
//	  go test -run '^$' -bench StatsWarm24Hours -benchtime 30x ./adapters/elastic/
func BenchmarkStatsWarm24Hours(b *testing.B) {
	prefix := os.Getenv("REQLOG_BENCH_STATS_PREFIX")
	if prefix == "" {
		b.Skip("REQLOG_BENCH_STATS_PREFIX names no seeded store")
	}
	account, dom, _ := strings.Cut(cmp.Or(os.Getenv("REQLOG_BENCH_STATS_SCOPE"), "bench:live"), ":")
	scope := domain.Scope{Account: account, Domain: dom}
	ctx := context.Background()
	s, err := New(ctx, Config{Addresses: []string{elastictest.URL(b)}, IndexPrefix: prefix, RefreshInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(ctx) })
	query := func(values url.Values) stats.Query {
		now := time.Now()
		q, err := stats.ParseQuery(values, now)
		if err != nil {
			b.Fatal(err)
		}
		q.Scope = scope
		return q
	}
	cold, _, err := s.StatsTraced(ctx, query(nil), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if len(cold.TopNames) == 0 {
		b.Fatalf("no message of %s/%s in the last 24 hours", account, dom)
	}
	names := make([]string, len(cold.TopNames))
	for i, kc := range cold.TopNames {
		names[i] = kc.Key
	}
	stop := appendLive(b, s, scope, names)
	defer stop()
	for _, view := range []struct {
		name   string
		values url.Values
	}{{"scope", nil}, {"one-application", url.Values{"name": {names[0]}}}} {
		b.Run(view.name, func(b *testing.B) {
			if _, _, err := s.StatsTraced(ctx, query(view.values), time.Now()); err != nil { // cold
				b.Fatal(err)
			}
			var took []time.Duration
			requests := 0
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			cpu, node := processCPU(b), nodeCPU(b)
			for b.Loop() {
				<-tick.C
				q := query(view.values)
				began := time.Now()
				_, tr, err := s.StatsTraced(ctx, q, began)
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(began))
				requests += tr.StoreRequests
			}
			n := float64(len(took))
			b.ReportMetric(float64(processCPU(b)-cpu)/n/1e6, "cpu-ms/op")
			if node >= 0 {
				b.ReportMetric(float64(nodeCPU(b)-node)/n/1e6, "node-cpu-ms/op")
			}
			b.ReportMetric(float64(requests)/n, "requests/op")
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)])/1e6, "p99-ms")
		})
	}
}

// appendLive appends three messages of names every 250 ms, created then,
// until the returned stop is called.
func appendLive(b *testing.B, s *Store, scope domain.Scope, names []string) (stop func()) {
	done, wg := make(chan struct{}), sync.WaitGroup{}
	template := fixtures.TrafficMessages(1)[0]
	rng := rand.New(rand.NewPCG(7, 8))
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			batch := make([]domain.Message, 3)
			for i := range batch {
				m := template
				m.ID = uuid.Must(uuid.NewV7()).String()
				m.Account, m.Domain, m.Name = scope.Account, scope.Domain, names[rng.IntN(len(names))]
				m.CreatedAt = domain.Micro(time.Now())
				m.UpdatedAt, m.VisibleAt, m.ExpiresAt = m.CreatedAt, m.CreatedAt.Add(time.Second), m.CreatedAt.Add(domain.DefaultRetention)
				m.Path = fmt.Sprintf("/v1/orders/%d", rng.IntN(1_000_000))
				batch[i] = m
			}
			if err := s.Append(context.Background(), batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// nodeCPU is the CPU time the node's process has used (REQLOG_BENCH_NODE_PID),
// or -1 when not known.
func nodeCPU(b *testing.B) time.Duration {
	pid := os.Getenv("REQLOG_BENCH_NODE_PID")
	if pid == "" {
		return -1
	}
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// utime and stime are the 14th and 15th fields, after the command in ().
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	var utime, stime int64
	if _, err := fmt.Sscan(fields[11], &utime); err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Sscan(fields[12], &stime); err != nil {
		b.Fatal(err)
	}
	return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
}
