package rollupcodec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// reportCPU reports the processor time the process spent per operation
// while f ran b.N of them: on a shared machine a steadier figure than the
// time on the clock.
func reportCPU(b *testing.B, f func()) {
	cpu := func() time.Duration {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			b.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	b.ResetTimer()
	before := cpu()
	f()
	b.ReportMetric(float64(cpu()-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// loadTraffic makes messages in the load tool's mix (cmd/reqlog-bench,
// gen.go): ten applications, its path templates with ids up to 100,000 (two
// of them carry the id in the query string), its status weights, durations
// log-uniform from 1 ms to 2 s to the microsecond, one in ten unknown.
type loadTraffic struct{ rng *rand.Rand }

var (
	loadApplications = []string{"shop-frontend", "checkout", "billing-api", "mobile-ios", "mobile-android",
		"partner-gateway", "search", "inventory", "notifications", "admin-console"}
	loadPaths = []string{"/v1/orders/%d", "/v1/orders?page=%d&sort=-created_at", "/v1/users/%d/profile",
		"/v1/products/%d/reviews", "/api/v2/payments/%d/refunds", "/v1/search?q=item%d&limit=20",
		"/v1/carts/%d/items", "/v1/invoices/%d.pdf", "/oauth/token", "/healthz"}
	// loadStatuses repeats each status by its weight.
	loadStatuses = func() []int {
		var out []int
		for code, weight := range map[int]int{200: 62, 201: 9, 204: 4, 301: 1, 304: 3, 400: 5, 401: 3, 403: 2,
			404: 5, 409: 1, 422: 2, 429: 1, 500: 1, 502: 1, 503: 1} {
			for range weight {
				out = append(out, code)
			}
		}
		return out
	}()
)

func (g loadTraffic) message(created time.Time) domain.Message {
	path := loadPaths[g.rng.IntN(len(loadPaths))]
	if strings.Contains(path, "%d") {
		path = fmt.Sprintf(path, g.rng.IntN(100_000))
	}
	m := domain.Message{Name: loadApplications[g.rng.IntN(len(loadApplications))], Path: path,
		StatusCode: loadStatuses[g.rng.IntN(len(loadStatuses))], CreatedAt: created,
		VisibleAt: created.Add(5 * time.Second), ExpiresAt: created.Add(domain.DefaultRetention)}
	if g.rng.IntN(10) != 0 {
		ms := math.Exp(g.rng.Float64() * math.Log(2000))
		m.Duration, m.HasDuration = time.Duration(ms*1000)*time.Microsecond, true
	}
	return m
}

// minuteRollups are the rollups, by application, of n messages in the minute
// at start.
func (g loadTraffic) minuteRollups(start time.Time, n int) map[string]*stats.Rollup {
	rollups := map[string]*stats.Rollup{}
	for i := range n {
		m := g.message(start.Add(time.Duration(i) * time.Minute / time.Duration(n)))
		if rollups[m.Name] == nil {
			rollups[m.Name] = &stats.Rollup{}
		}
		rollups[m.Name].AddMessage(m)
	}
	return rollups
}

// rollupBase is the start of the benchmarks' day.
var rollupBase = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

// rollupKey is a rollup's application and minute (or quarter hour).
type rollupKey struct {
	name  string
	start time.Time
}

// messagesPerMinute is the load tool's realistic minute.
const messagesPerMinute = 700

// The encoded rollups of a realistic minute, against the narrow rows a store
// streams into stats.Builder without them (created_at, status, duration as
// 8, 2 and 8 bytes, name and path).
func BenchmarkRollupMinuteSize(b *testing.B) {
	g := loadTraffic{rand.New(rand.NewPCG(1, 2))}
	var rollupBytes, rowBytes int
	for range b.N {
		start := rollupBase
		for _, r := range g.minuteRollups(start, messagesPerMinute) {
			data := AppendRollup(nil, r)
			rollupBytes += len(data)
		}
	}
	for range messagesPerMinute {
		m := g.message(rollupBase)
		rowBytes += 18 + len(m.Name) + len(m.Path)
	}
	b.ReportMetric(float64(rollupBytes)/float64(b.N), "rollup-B/minute")
	b.ReportMetric(float64(rollupBytes)/float64(b.N)/messagesPerMinute, "rollup-B/msg")
	b.ReportMetric(float64(rowBytes)/messagesPerMinute, "row-B/msg")
}

// The cost of counting one message: into its minute's rollup on the write
// path, against stats.Builder.Add (the fallback's).
func BenchmarkRollupAdd(b *testing.B) {
	g := loadTraffic{rand.New(rand.NewPCG(3, 4))}
	msgs := make([]domain.Message, 10*messagesPerMinute)
	for i := range msgs {
		msgs[i] = g.message(rollupBase.Add(time.Duration(i) * time.Minute / messagesPerMinute))
	}
	b.Run("rollup", func(b *testing.B) {
		rollups := map[string]*stats.Rollup{}
		for i := range b.N {
			if i%messagesPerMinute == 0 {
				clear(rollups)
			}
			m := msgs[i%len(msgs)]
			r := rollups[m.Name]
			if r == nil {
				r = &stats.Rollup{}
				rollups[m.Name] = r
			}
			r.AddMessage(m)
		}
	})
	b.Run("statsbuilder", func(b *testing.B) {
		q := stats.Query{From: rollupBase, To: rollupBase.Add(10 * time.Minute), Interval: stats.Intervals[0]}
		builder := stats.NewBuilder(q)
		for i := range b.N {
			if i%messagesPerMinute == 0 {
				builder = stats.NewBuilder(q)
			}
			builder.Add(stats.SampleOf(msgs[i%len(msgs)]))
		}
	})
}

// Merging an application's minutes into its hour, per minute merged; and the
// encoding and decoding of one minute's rollup, per rollup.
func BenchmarkRollupMergeAndCodec(b *testing.B) {
	g := loadTraffic{rand.New(rand.NewPCG(5, 6))}
	var minutes []*stats.Rollup
	var encoded [][]byte
	for i := range 60 {
		for _, r := range g.minuteRollups(rollupBase.Add(time.Duration(i)*time.Minute), messagesPerMinute) {
			minutes = append(minutes, r)
			data := AppendRollup(nil, r)
			encoded = append(encoded, data)
			break
		}
	}
	b.Run("merge", func(b *testing.B) {
		var hour stats.Rollup
		for i := range b.N {
			if i%len(minutes) == 0 {
				hour = stats.Rollup{}
			}
			hour.Merge(minutes[i%len(minutes)])
		}
	})
	b.Run("encode", func(b *testing.B) {
		var buf []byte
		for i := range b.N {
			buf = AppendRollup(buf[:0], minutes[i%len(minutes)])
		}
	})
	b.Run("decode", func(b *testing.B) {
		var r stats.Rollup
		var decoder Decoder
		for i := range b.N {
			if err := decoder.Rollup(encoded[i%len(encoded)], &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A day's statistics of a scope at the load tool's rate (700 messages a
// minute, 1,008,000 in all, ten applications), by the default interval
// (15m): from 14,400 encoded minute rollups, decoded and merged, or from 960
// rollups of quarter hours; against
// stats.Builder over the same messages' samples, the fallback without
// rollups (reading the rows is the store's and not counted in either).
func BenchmarkStatsDay(b *testing.B) {
	g := loadTraffic{rand.New(rand.NewPCG(7, 8))}
	type stored struct {
		start time.Time
		name  string
		data  []byte
	}
	var rollups []stored
	var samples []stats.Sample
	for minute := range 24 * 60 {
		start := rollupBase.Add(time.Duration(minute) * time.Minute)
		for i := range messagesPerMinute {
			m := g.message(start.Add(time.Duration(i) * time.Minute / messagesPerMinute))
			samples = append(samples, stats.SampleOf(m))
		}
	}
	// The same messages into their minutes' rollups.
	byMinute := map[rollupKey]*stats.Rollup{}
	for _, s := range samples {
		key := rollupKey{s.Name, s.CreatedAt.Truncate(time.Minute)}
		if byMinute[key] == nil {
			byMinute[key] = &stats.Rollup{}
		}
		byMinute[key].Add(s)
	}
	byQuarter := map[rollupKey]*stats.Rollup{}
	for key, r := range byMinute {
		data := AppendRollup(nil, r)
		rollups = append(rollups, stored{key.start, key.name, data})
		quarter := rollupKey{key.name, key.start.Truncate(15 * time.Minute)}
		if byQuarter[quarter] == nil {
			byQuarter[quarter] = &stats.Rollup{}
		}
		byQuarter[quarter].Merge(r)
	}
	// A store may also keep rollups of quarter hours, merged from its minutes,
	// for intervals of 15m and wider.
	var quarterRollups []stored
	for key, r := range byQuarter {
		data := AppendRollup(nil, r)
		quarterRollups = append(quarterRollups, stored{key.start, key.name, data})
	}
	now := rollupBase.Add(24 * time.Hour)
	for _, c := range []struct {
		name   string
		filter string
	}{{"scope", ""}, {"application", "checkout"}} {
		q, err := stats.ParseQuery(map[string][]string{"from": {domain.FormatTime(rollupBase)}, "to": {domain.FormatTime(now)}}, now)
		if err != nil {
			b.Fatal(err)
		}
		q.Filter.Name = c.filter
		for _, rc := range []struct {
			name    string
			rollups []stored
			width   time.Duration
		}{{"minute-rollups", rollups, time.Minute}, {"quarter-hour-rollups", quarterRollups, 15 * time.Minute}} {
			b.Run(c.name+"/"+rc.name, func(b *testing.B) {
				var r stats.Rollup
				var decoder Decoder
				reportCPU(b, func() {
					for range b.N {
						builder := stats.NewRollupBuilder(q, now)
						for _, s := range rc.rollups {
							if c.filter != "" && s.name != c.filter {
								continue
							}
							if err := decoder.Rollup(s.data, &r); err != nil {
								b.Fatal(err)
							}
							if !builder.AddRollup(s.start, s.start.Add(rc.width), s.name, &r) {
								b.Fatal("refused")
							}
						}
						_ = builder.Stats()
					}
				})
			})
		}
		b.Run(c.name+"/statsbuilder", func(b *testing.B) {
			reportCPU(b, func() {
				for range b.N {
					builder := stats.NewBuilder(q)
					for _, s := range samples {
						if c.filter == "" || s.Name == c.filter {
							builder.Add(s)
						}
					}
					_ = builder.Stats()
				}
			})
		})
	}
}
