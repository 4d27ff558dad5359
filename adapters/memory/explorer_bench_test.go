package memory_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Benchmarks of the explorer's reads over a store of benchStored messages spread
// over a day, shaped like logged API traffic (JSON bodies, a dozen header
// values), appended in random order of created_at as reqlog-bench seeds them,
// six in ten on a route of their own (/v1/orders/<id>) as its paths are. Run
// with (REQLOG_BENCH_STORED=1000000 for a million):
//
//	go test -run '^$' -bench 'Search|Stats' -benchmem -cpu 1,2 ./adapters/memory/

// benchNeedleEvery stored messages one holds the searched order id.
const benchNeedleEvery = 10_000

var benchStored = func() int {
	if n, err := strconv.Atoi(os.Getenv("REQLOG_BENCH_STORED")); err == nil && n >= benchNeedleEvery {
		return n
	}
	return 100_000
}()

// explorerStore is filled once: building it takes longer than the benchmarks.
var explorerStore struct {
	store *memory.Store
	now   time.Time
}

func filledStore(b *testing.B) (*memory.Store, time.Time) {
	b.Helper()
	if explorerStore.store != nil {
		return explorerStore.store, explorerStore.now
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := memory.New()
	statuses := []int{200, 200, 200, 201, 204, 302, 400, 404, 429, 500}
	batch := make([]domain.Message, 0, 1000)
	shuffled := rand.New(rand.NewPCG(1, 2)).Perm(benchStored)
	for _, i := range shuffled {
		created := now.Add(-time.Duration(i) * (24 * time.Hour / time.Duration(benchStored)))
		order := fmt.Sprintf("ord_%07d", i)
		if i%benchNeedleEvery == benchNeedleEvery/2 {
			order = fmt.Sprintf("ord_needle%d", i/benchNeedleEvery)
		}
		batch = append(batch, conformance.NewMessage(b, scope, created, func(m *domain.Message) {
			m.Name = []string{"shop-frontend", "billing", "search"}[i%3]
			m.Method = []string{"GET", "POST"}[i%2]
			m.Path = fmt.Sprintf("/v1/orders/%d?expand=items", i%500)
			if i%10 < 6 {
				m.Path = fmt.Sprintf("/v1/orders/%d", 1_000_000+i)
			}
			m.StatusCode = statuses[i%len(statuses)]
			m.Duration, m.HasDuration = time.Duration(i%2000)*137*time.Microsecond, i%7 != 0
			m.Request.Header = domain.Header{
				"Accept": {"application/json"}, "User-Agent": {"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"},
				"X-Request-Id": {fmt.Sprintf("9f1c2a7e-4b1d-4c55-9a8e-%012d", i)}, "Authorization": {domain.Mask},
				"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
			}
			m.Request.Body = fmt.Sprintf(`{"customer":"cus_%06d","items":[{"sku":"SKU-%05d","qty":%d}],"currency":"EUR"}`, i%9000, i%700, i%9)
			m.Response.Header = domain.Header{
				"Content-Type": {"application/json; charset=utf-8"}, "Date": {"Tue, 24 Nov 2026 12:00:00 GMT"},
				"Etag": {`"33a64df551425fcc55e4d42a148795d9f25f89d4"`}, "Server": {"envoy"}, "Vary": {"Accept-Encoding"},
			}
			m.Response.Body = fmt.Sprintf(`{"id":"%s","status":"shipped","total":{"amount":%d,"currency":"EUR"},"lines":[{"sku":"SKU-%05d","name":"standard warehouse item","price":12.5}]}`,
				order, i%10000, i%700)
		}))
		if len(batch) == cap(batch) {
			if err := s.Append(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	explorerStore.store, explorerStore.now = s, now.Add(time.Minute)
	return s, explorerStore.now
}

// BenchmarkSearchSelective is a q that one message in benchNeedleEvery holds:
// a page of 20 walks the whole store, so ns/op over benchStored is the cost of
// searching one message.
func BenchmarkSearchSelective(b *testing.B) {
	s, now := filledStore(b)
	for _, q := range []string{"ord_needle3", "ORD_NEEDLE3", "Zürich"} {
		b.Run("q="+q, func(b *testing.B) {
			query := domain.Query{Scope: scope, Limit: 20, Filter: domain.Filter{Text: q}}
			b.ReportAllocs()
			var found int
			cpu := processCPU()
			for b.Loop() {
				page, err := s.List(b.Context(), query, now)
				if err != nil {
					b.Fatal(err)
				}
				found = len(page.Messages)
			}
			reportCPU(b, cpu)
			if q != "Zürich" && found != 1 {
				b.Fatalf("q=%s found %d messages, want 1", q, found)
			}
		})
	}
}

// BenchmarkStats is the statistics of the whole day in 15-minute buckets, then
// narrowed by a filter and by a search.
func BenchmarkStats(b *testing.B) {
	s, now := filledStore(b)
	for _, tc := range []struct {
		name   string
		filter domain.Filter
	}{
		{"all", domain.Filter{}},
		{"name", domain.Filter{Name: "billing"}},
		{"q", domain.Filter{Text: "cus_000042"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q, err := stats.ParseQuery(map[string][]string{}, now)
			if err != nil {
				b.Fatal(err)
			}
			q.Scope = scope
			from, to := q.Filter.From, q.Filter.To
			q.Filter = tc.filter
			q.Filter.From, q.Filter.To = from, to
			b.ReportAllocs()
			var counted int64
			cpu := processCPU()
			for b.Loop() {
				st, err := s.Stats(b.Context(), q, now)
				if err != nil {
					b.Fatal(err)
				}
				counted = st.Total.Count
			}
			reportCPU(b, cpu)
			if counted == 0 {
				b.Fatal("the statistics counted nothing")
			}
		})
	}
}

// reportCPU adds the process's CPU time per operation since cpu (both cores'
// when walks run in two halves) and per stored message, and wall time per
// stored message: on a shared machine CPU time is the steadier measure.
func reportCPU(b *testing.B, cpu int64) {
	n, stored := float64(b.N), float64(benchStored)
	spent := float64(processCPU() - cpu)
	b.ReportMetric(spent/n/1e6, "cpu-ms/op")
	b.ReportMetric(spent/n/stored, "cpu-ns/message")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n/stored, "ns/message")
}
