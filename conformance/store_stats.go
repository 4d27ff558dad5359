package conformance

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// percentileSlack absorbs floating point noise in a store's percentiles:
// durations are whole microseconds, so half of one cannot hide a wrong rank.
const percentileSlack = 0.0005

// statsQuery asks for scope's statistics over [from, to) in buckets of interval,
// with filter's range set to the query's as the service sets it.
func statsQuery(scope domain.Scope, from, to time.Time, interval string, filter domain.Filter) stats.Query {
	filter.From, filter.To = from, to
	q := stats.Query{Scope: scope, From: from, To: to, Filter: filter}
	for _, iv := range stats.Intervals {
		if iv.Name == interval {
			q.Interval = iv
		}
	}
	if q.Interval.Width == 0 {
		panic("unknown interval " + interval)
	}
	return q
}

// counted are the messages q's statistics count at now, by the domain's rules.
func counted(msgs []domain.Message, q stats.Query, now time.Time) []domain.Message {
	match := q.Filter.Matcher()
	var out []domain.Message
	for _, m := range msgs {
		if m.Scope() == q.Scope && m.Readable(now) && match(m) &&
			!m.CreatedAt.Before(q.From) && m.CreatedAt.Before(q.To) {
			out = append(out, m)
		}
	}
	return out
}

// expectedStats is what the contract says Stats must return for q at now over
// msgs, computed exactly by stats.Builder.
func expectedStats(msgs []domain.Message, q stats.Query, now time.Time) stats.Stats {
	b := stats.NewBuilder(q)
	for _, m := range counted(msgs, q, now) {
		b.Add(stats.SampleOf(m))
	}
	return b.Stats()
}

// sortedDurations are the durations in milliseconds of the messages q counts
// at now, per bucket and in all, each sorted.
func sortedDurations(msgs []domain.Message, q stats.Query, now time.Time) (perBucket [][]float64, all []float64) {
	perBucket = make([][]float64, q.BucketCount())
	for _, m := range counted(msgs, q, now) {
		if ms, ok := m.DurationMS(); ok {
			i := q.BucketIndex(m.CreatedAt)
			perBucket[i] = append(perBucket[i], ms)
			all = append(all, ms)
		}
	}
	for _, d := range perBucket {
		slices.Sort(d)
	}
	slices.Sort(all)
	return perBucket, all
}

func getStats(t testing.TB, s ports.MessageStore, q stats.Query, now time.Time) stats.Stats {
	t.Helper()
	got, err := s.Stats(t.Context(), q, now)
	if err != nil {
		t.Fatalf("Stats(%s) at %s: %v", describeStatsQuery(q), domain.FormatTime(now), err)
	}
	return got
}

// assertStats fails unless got is q's statistics at now over msgs: every count
// exact, every bucket present, aligned and oldest first, each percentile
// between the durations at ranks ⌊p·(n−1)⌋ and ⌈p·(n−1)⌉.
func assertStats(t testing.TB, msgs []domain.Message, q stats.Query, now time.Time, got stats.Stats) {
	t.Helper()
	what := fmt.Sprintf("Stats(%s) at %s", describeStatsQuery(q), domain.FormatTime(now))
	want := expectedStats(msgs, q, now)
	perBucket, all := sortedDurations(msgs, q, now)
	var diff []string
	if !got.From.Equal(want.From) || !got.To.Equal(want.To) || got.Interval != want.Interval {
		diff = append(diff, fmt.Sprintf("range [%s, %s) by %q, want [%s, %s) by %q",
			domain.FormatTime(got.From), domain.FormatTime(got.To), got.Interval.Name,
			domain.FormatTime(want.From), domain.FormatTime(want.To), want.Interval.Name))
	}
	diff = append(diff, bucketDiff("total", want.Total, got.Total, all)...)
	if len(got.Buckets) != len(want.Buckets) {
		diff = append(diff, fmt.Sprintf("%d buckets, want %d", len(got.Buckets), len(want.Buckets)))
	} else {
		for i := range want.Buckets {
			name := fmt.Sprintf("bucket %d", i)
			if !got.Buckets[i].Start.Equal(want.Buckets[i].Start) {
				diff = append(diff, fmt.Sprintf("%s starts at %s, want %s", name,
					domain.FormatTime(got.Buckets[i].Start), domain.FormatTime(want.Buckets[i].Start)))
			}
			diff = append(diff, bucketDiff(name, want.Buckets[i], got.Buckets[i], perBucket[i])...)
		}
	}
	if !slices.Equal(got.TopPaths, want.TopPaths) {
		diff = append(diff, fmt.Sprintf("top paths %v, want %v", got.TopPaths, want.TopPaths))
	}
	if !slices.Equal(got.TopNames, want.TopNames) {
		diff = append(diff, fmt.Sprintf("top names %v, want %v", got.TopNames, want.TopNames))
	}
	diff = append(diff, topRoutesDiff(msgs, q, now, want.TopRoutes, got.TopRoutes)...)
	if len(diff) > 0 {
		t.Errorf("%s differs from the contract's:\n  %s", what, strings.Join(diff, "\n  "))
	}
}

// bucketDiff compares the counts exactly and the percentiles by rank bounds
// over sorted, the bucket's durations.
func bucketDiff(name string, want, got stats.Bucket, sorted []float64) []string {
	var diff []string
	if got.Count != want.Count || got.Dropped != want.Dropped || got.Status != want.Status {
		diff = append(diff, fmt.Sprintf("%s: count %d (%d dropped), status %v; want %d (%d), %v", name, got.Count, got.Dropped, got.Status, want.Count, want.Dropped, want.Status))
	}
	if got.Duration.Count != want.Duration.Count {
		diff = append(diff, fmt.Sprintf("%s: %d durations, want %d", name, got.Duration.Count, want.Duration.Count))
		return diff
	}
	return append(diff, percentileDiff(name, got.Duration, sorted, tolerance(len(sorted)))...)
}

// tolerance is how far from the neighbouring ranks' durations a percentile
// of n durations may lie: nowhere for small sets, within 1 % for large ones
// (as the contract allows; past stats.ExactDurations stores summarise).
func tolerance(n int) float64 {
	if n > stats.ExactDurations {
		return 0.01
	}
	return 0
}

// percentileDiff checks each percentile of got lies between the durations of
// sorted at its neighbouring ranks, widened by tolerance (a fraction: the
// contract allows 1 % for large sets).
func percentileDiff(name string, got stats.DurationSummary, sorted []float64, tolerance float64) []string {
	if len(sorted) == 0 {
		return nil
	}
	var diff []string
	for _, p := range []struct {
		p   float64
		got float64
	}{{0.50, got.P50}, {0.95, got.P95}, {0.99, got.P99}} {
		rank := p.p * float64(len(sorted)-1)
		lo, hi := sorted[int(math.Floor(rank))]*(1-tolerance), sorted[int(math.Ceil(rank))]*(1+tolerance)
		if p.got < lo-percentileSlack || p.got > hi+percentileSlack {
			diff = append(diff, fmt.Sprintf("%s: p%02.0f = %v, want between %v and %v (of %v)", name, p.p*100, p.got, lo, hi, sorted))
		}
	}
	return diff
}

func describeStatsQuery(q stats.Query) string {
	return fmt.Sprintf("%s/%s, [%s, %s) by %s, %s", q.Scope.Account, q.Scope.Domain,
		domain.FormatTime(q.From), domain.FormatTime(q.To), q.Interval.Name, describeFilter(q.Filter))
}

// statsRange is six aligned hours ending at or before the anchor's hour, so
// that every fixture created in it is readable at f.now().
func statsRange(f fixtures) (from, to time.Time) {
	to = f.anchor.Truncate(time.Hour)
	return to.Add(-6 * time.Hour), to
}

// Buckets of one hour over six hours, two of them empty, one without any
// duration; messages exactly at from, just before it, just before to and at to;
// hidden messages in an empty bucket.
func testStatsBuckets(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	at := func(hour int, d time.Duration) time.Time { return from.Add(time.Duration(hour)*time.Hour + d) }
	status := func(code int) func(*domain.Message) { return func(m *domain.Message) { m.StatusCode = code } }
	msgs := []domain.Message{
		f.message(scopeLive, from, status(200), withDuration(10)),
		f.message(scopeLive, at(0, 59*time.Minute), status(201), withDuration(30)),
		f.message(scopeLive, at(0, time.Minute), status(500)),
		f.message(scopeLive, at(3, 0), status(204)),
		f.message(scopeLive, at(3, time.Hour-time.Microsecond), status(418)),
		f.message(scopeLive, to.Add(-time.Microsecond), status(200), withDuration(42.5)),
	}
	bucket1 := []int{100, 200, 302, 404, 503}
	for i := range 11 {
		msgs = append(msgs, f.message(scopeLive, at(1, time.Duration(i)*time.Minute), status(bucket1[i%5]),
			withDuration(float64(i*i)*7.125+0.001)))
	}
	readable := slices.Clone(msgs)
	msgs = append(msgs,
		f.message(scopeLive, from.Add(-time.Microsecond), withDuration(1)),
		f.message(scopeLive, to, withDuration(1)),
		f.message(scopeLive, at(4, time.Minute), func(m *domain.Message) { m.VisibleAt = f.now().Add(time.Microsecond) }),
		f.message(scopeTest, at(4, time.Minute)),
		f.message(scopeOtherLive, at(2, time.Minute)),
	)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), readable)

	q := statsQuery(scopeLive, from, to, "1h", domain.Filter{})
	got := getStats(t, s, q, f.now())
	// The counts stated by hand, then every figure against the reference.
	wantCounts := []int64{3, 11, 0, 2, 0, 1}
	wantDurations := []int64{2, 11, 0, 0, 0, 1}
	var gotCounts, gotDurations []int64
	for _, b := range got.Buckets {
		gotCounts = append(gotCounts, b.Count)
		gotDurations = append(gotDurations, b.Duration.Count)
	}
	if !slices.Equal(gotCounts, wantCounts) || !slices.Equal(gotDurations, wantDurations) {
		t.Errorf("Stats(%s): bucket counts %v with %v durations, want %v with %v", describeStatsQuery(q), gotCounts, gotDurations, wantCounts, wantDurations)
	}
	if want := (stats.StatusCounts{3, 6, 2, 3, 3}); got.Total.Count != 17 || got.Total.Status != want || got.Total.Duration.Count != 14 {
		t.Errorf("Stats(%s): total %d, status %v, %d durations; want 17, %v, 14", describeStatsQuery(q), got.Total.Count, got.Total.Status, got.Total.Duration.Count, want)
	}
	assertStats(t, msgs, q, f.now(), got)
}

// The ten most frequent paths without query string and the twenty most
// frequent names, by count descending then key ascending, with errors (≥ 400).
func testStatsTop(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	var msgs []domain.Message
	add := func(n int, edit func(i int, m *domain.Message)) {
		for i := range n {
			msgs = append(msgs, f.message(scopeLive, from.Add(time.Duration(len(msgs))*time.Second), func(m *domain.Message) { edit(i, m) }))
		}
	}
	// Paths: counts 5, 5, 4, 3, 3, 3, 2, 2, 1, 1, 1, 1; the last two 1s fall off.
	paths := []struct {
		path   string
		count  int
		errors int
	}{
		{"/v1/users", 5, 0}, {"/v1/orders", 5, 2}, {"/v1/items", 4, 4}, {"/z", 3, 1}, {"/a", 3, 0}, {"/m", 3, 3},
		{"/v1/orders/42", 2, 1}, {"/", 2, 0}, {"/b", 1, 1}, {"/c", 1, 0}, {"/d", 1, 0}, {"/e", 1, 0},
	}
	for _, p := range paths {
		add(p.count, func(i int, m *domain.Message) {
			m.Name = "shop"
			m.Path = p.path
			if i%2 == 1 {
				m.Path += fmt.Sprintf("?page=%d&q=x", i) // ranked without its query string
			}
			m.StatusCode = 200
			if i < p.errors {
				m.StatusCode = []int{400, 404, 499, 500, 503}[i]
			}
		})
	}
	// Names: shop 31 (from the paths), a tie of two names differing in case
	// only, then nineteen of one each, the last two of which fall off.
	add(3, func(i int, m *domain.Message) { m.Name, m.StatusCode = "billing", 200+200*(i%2) })
	add(3, func(i int, m *domain.Message) { m.Name, m.StatusCode = "Billing", 399 })
	for k := range 19 {
		add(1, func(_ int, m *domain.Message) { m.Name, m.StatusCode = fmt.Sprintf("app-%02d", 18-k), 500 })
	}
	readable := slices.Clone(msgs)
	// Hidden messages that would change the ranking.
	hidden := f.message(scopeLive, from.Add(time.Hour), func(m *domain.Message) {
		m.Path, m.Name = "/e", "app-18"
		m.VisibleAt = f.now().Add(time.Microsecond)
	})
	msgs = append(msgs, hidden, f.message(scopeTest, from, func(m *domain.Message) { m.Path, m.Name = "/e", "app-18" }))
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), readable)

	wantPaths := []stats.KeyCount{
		{Key: "/v1/orders", Count: 5, Errors: 2}, {Key: "/v1/users", Count: 5}, {Key: "/v1/items", Count: 4, Errors: 4},
		{Key: "/a", Count: 3}, {Key: "/m", Count: 3, Errors: 3}, {Key: "/z", Count: 3, Errors: 1},
		{Key: "/", Count: 2}, {Key: "/v1/orders/42", Count: 2, Errors: 1}, {Key: "/b", Count: 1, Errors: 1}, {Key: "/c", Count: 1},
	}
	wantNames := []stats.KeyCount{{Key: "shop", Count: 31, Errors: 12}, {Key: "Billing", Count: 3}, {Key: "billing", Count: 3, Errors: 1}}
	for k := range 17 {
		wantNames = append(wantNames, stats.KeyCount{Key: fmt.Sprintf("app-%02d", k), Count: 1, Errors: 1})
	}
	// Paths among the shop's messages (the others would rank), names among all.
	for _, tc := range []struct {
		filter domain.Filter
		check  func(stats.Stats) (got, want []stats.KeyCount)
	}{
		{domain.Filter{Name: "shop"}, func(s stats.Stats) ([]stats.KeyCount, []stats.KeyCount) { return s.TopPaths, wantPaths }},
		{domain.Filter{}, func(s stats.Stats) ([]stats.KeyCount, []stats.KeyCount) { return s.TopNames, wantNames }},
	} {
		q := statsQuery(scopeLive, from, to, "6h", tc.filter)
		if ref, want := tc.check(expectedStats(msgs, q, f.now())); !slices.Equal(ref, want) {
			t.Fatalf("fixture error: the reference ranks %v", ref)
		}
		got := getStats(t, s, q, f.now())
		if top, want := tc.check(got); !slices.Equal(top, want) {
			t.Errorf("Stats(%s): ranked\n  %v\nwant\n  %v", describeStatsQuery(q), top, want)
		}
		assertStats(t, msgs, q, f.now(), got)
	}
}

// Only messages readable at the call's now count: from VisibleAt (inclusive)
// until ExpiresAt (exclusive).
func testStatsReadableAt(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	control := f.message(scopeLive, from.Add(time.Hour), withDuration(5))
	late := f.message(scopeLive, from.Add(2*time.Hour), withDuration(7), func(m *domain.Message) {
		m.VisibleAt = m.UpdatedAt.Add(20*time.Minute + 17*time.Microsecond)
	})
	early := f.message(scopeLive, from.Add(30*time.Minute), withDuration(9)) // expires first
	msgs := []domain.Message{control, late, early}
	mustAppend(t, s, msgs)
	waitForStored(t, s, late.VisibleAt, msgs)

	q := statsQuery(scopeLive, from, to, "1h", domain.Filter{})
	for _, read := range []struct {
		label string
		now   time.Time
		want  int64
	}{
		{"one microsecond before VisibleAt", late.VisibleAt.Add(-time.Microsecond), 2},
		{"exactly at VisibleAt", late.VisibleAt, 3},
		{"one microsecond before ExpiresAt", early.ExpiresAt.Add(-time.Microsecond), 3},
		{"exactly at ExpiresAt", early.ExpiresAt, 2},
	} {
		got := getStats(t, s, q, read.now)
		if got.Total.Count != read.want {
			t.Errorf("Stats %s (%s): total %d, want %d", read.label, domain.FormatTime(read.now), got.Total.Count, read.want)
		}
		assertStats(t, msgs, q, read.now, got)
	}
}

func testStatsScopeIsolation(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	scopes := []domain.Scope{scopeLive, scopeTest, scopeOtherLive}
	var msgs []domain.Message
	for i, scope := range scopes {
		// The same names and paths in every scope, one more message in each.
		msgs = append(msgs, f.series(scope, i+2, from.Add(time.Hour+time.Duration(i)*time.Microsecond), time.Minute, withDuration(float64(i+1)))...)
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	for i, scope := range scopes {
		for _, filter := range []domain.Filter{{}, {Name: "shop"}, {Text: "ok"}} {
			q := statsQuery(scope, from, to, "15m", filter)
			got := getStats(t, s, q, f.now())
			if got.Total.Count != int64(i+2) {
				t.Errorf("Stats(%s): total %d, want %d", describeStatsQuery(q), got.Total.Count, i+2)
			}
			assertStats(t, msgs, q, f.now(), got)
		}
	}
	for _, stranger := range []domain.Scope{
		{Account: "acm", Domain: domain.DomainLive},
		{Account: "ACME", Domain: domain.DomainLive},
		{Account: "acme", Domain: ""},
	} {
		q := statsQuery(stranger, from, to, "1h", domain.Filter{})
		assertStats(t, msgs, q, f.now(), getStats(t, s, q, f.now()))
	}
}

// Every fetch filter narrows the statistics, over ranges aligned or not and at
// every interval.
func testStatsFilters(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	from, to := statsRange(f)
	names := []string{"shop", "billing", "Shop"}
	methods := []string{"GET", "POST", "DELETE", "PUT"}
	statuses := []int{200, 201, 404, 500, 302, 101, 429}
	var msgs []domain.Message
	for i := range 120 {
		created := from.Add(time.Duration(i) * 179 * time.Second) // nearly six hours
		msgs = append(msgs, f.message(scopeLive, created, func(m *domain.Message) {
			m.Name = names[i%len(names)]
			m.Method = methods[i%len(methods)]
			m.StatusCode = statuses[i%len(statuses)]
			m.Path = fmt.Sprintf("/v1/orders/%d?page=%d", i%6, i%2)
			if i%4 != 3 {
				withDuration(float64(i%13)*25.25 + float64(i)*0.001)(m)
			}
			if i%5 == 0 {
				m.Response.Body = `{"error":"Payment declined: card expired"}`
			}
			if i%10 == 0 {
				m.IPAddress = "10.0.0.1"
			}
		}))
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)

	bound := func(v float64) *time.Duration { d := millis(v); return &d }
	for _, tc := range []struct {
		interval string
		from, to time.Time
		filter   domain.Filter
	}{
		{"1h", from, to, domain.Filter{}},
		{"1h", from, to, domain.Filter{Name: "shop"}},
		{"1h", from, to, domain.Filter{Text: "payment declined"}},
		{"1h", from, to, domain.Filter{Text: "PAYMENT", Name: "billing"}},
		{"1h", from, to, domain.Filter{StatusMin: 400, StatusMax: 499}},
		{"1h", from, to, domain.Filter{StatusMin: 404, StatusMax: 404}},
		{"1h", from, to, domain.Filter{MinDuration: bound(100)}},
		{"1h", from, to, domain.Filter{MaxDuration: bound(100)}},
		{"1h", from, to, domain.Filter{MinDuration: bound(50.5), MaxDuration: bound(151.5)}},
		{"1h", from, to, domain.Filter{Method: "POST", PathPrefix: "/v1/orders/1"}},
		{"1h", from, to, domain.Filter{Path: "/v1/orders/2?page=0"}},
		{"1h", from, to, domain.Filter{IPAddress: "10.0.0.1"}},
		{"15m", from, to, domain.Filter{Text: "declined", StatusMin: 100, StatusMax: 299, MinDuration: bound(0)}},
		{"5m", from.Add(2 * time.Hour), from.Add(3 * time.Hour), domain.Filter{}},
		{"1m", from.Add(time.Hour), from.Add(90 * time.Minute), domain.Filter{}},
		// A range not aligned to its interval: the first bucket starts before from.
		{"15m", msgs[10].CreatedAt, msgs[100].CreatedAt, domain.Filter{}},
		{"1h", from.Add(10*time.Minute + time.Microsecond), to.Add(-7 * time.Minute), domain.Filter{Name: "billing"}},
		{"6h", from, to, domain.Filter{}},
		{"1d", from.Add(-24 * time.Hour), to, domain.Filter{}},
	} {
		q := statsQuery(scopeLive, tc.from, tc.to, tc.interval, tc.filter)
		n := len(counted(msgs, q, f.now()))
		inRange := len(counted(msgs, statsQuery(scopeLive, tc.from, tc.to, tc.interval, domain.Filter{}), f.now()))
		if n == 0 || (n == inRange && tc.filter != domain.Filter{}) {
			t.Fatalf("fixture error: %s counts %d of the %d messages in its range", describeStatsQuery(q), n, inRange)
		}
		assertStats(t, msgs, q, f.now(), getStats(t, s, q, f.now()))
	}
	// The service may narrow the filter's range within the query's (retention):
	// the buckets stay the query's, only the messages in both count.
	q := statsQuery(scopeLive, from, to, "1h", domain.Filter{})
	q.Filter.From, q.Filter.To = from.Add(90*time.Minute), to.Add(-30*time.Minute)
	assertStats(t, msgs, q, f.now(), getStats(t, s, q, f.now()))
}
