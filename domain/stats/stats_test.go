package stats

import (
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

var statsNow = time.Date(2026, 11, 24, 10, 7, 31, 123456789, time.UTC)

func TestParseStatsQueryDefaults(t *testing.T) {
	q, err := ParseQuery(url.Values{}, statsNow)
	if err != nil {
		t.Fatal(err)
	}
	// The last 24 hours ending now, from rounded down to the interval; 15m is
	// the narrowest interval giving at most 100 buckets (5m gives 289).
	wantTo := domain.Micro(statsNow)
	wantFrom := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	if !q.From.Equal(wantFrom) || !q.To.Equal(wantTo) || q.Interval.Name != "15m" || q.Interval.Width != 15*time.Minute {
		t.Errorf("default range [%s, %s) by %s, want [%s, %s) by 15m", domain.FormatTime(q.From), domain.FormatTime(q.To), q.Interval.Name, domain.FormatTime(wantFrom), domain.FormatTime(wantTo))
	}
	if !q.Filter.From.Equal(q.From) || !q.Filter.To.Equal(q.To) {
		t.Errorf("the filter's range [%s, %s) is not the query's", domain.FormatTime(q.Filter.From), domain.FormatTime(q.Filter.To))
	}
	if n := q.BucketCount(); n != 97 {
		t.Errorf("BucketCount = %d, want 97 (24 h 7 min 31 s in 15-minute buckets)", n)
	}
	if q.Scope != (domain.Scope{}) {
		t.Errorf("Scope = %+v: the service sets it, not the parameters", q.Scope)
	}
}

func TestParseStatsQueryRangeAndInterval(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		query          string
		from, to       string
		interval       string
		buckets        int
		firstBucketAt  string
		filterNonEmpty bool
	}{
		// The narrowest interval giving at most 100 buckets.
		{"from=2026-11-24T08:00:00Z&to=2026-11-24T09:00:00Z", "2026-11-24T08:00:00Z", "2026-11-24T09:00:00Z", "1m", 60, "2026-11-24T08:00:00Z", false},
		{"from=2026-11-24T08:00:00Z&to=2026-11-24T09:40:00Z", "2026-11-24T08:00:00Z", "2026-11-24T09:40:00Z", "1m", 100, "2026-11-24T08:00:00Z", false},
		{"from=2026-11-24T08:00:00Z&to=2026-11-24T09:40:01Z", "2026-11-24T08:00:00Z", "2026-11-24T09:40:01Z", "5m", 21, "2026-11-24T08:00:00Z", false},
		{"from=2026-11-17T00:00:00Z&to=2026-11-24T00:00:00Z", "2026-11-17T00:00:00Z", "2026-11-24T00:00:00Z", "6h", 28, "2026-11-17T00:00:00Z", false},
		{"from=2026-10-01T00:00:00Z&to=2026-11-24T00:00:00Z", "2026-10-01T00:00:00Z", "2026-11-24T00:00:00Z", "1d", 54, "2026-10-01T00:00:00Z", false},
		// An explicit from stays as given; the first bucket starts before it.
		{"from=2026-11-24T08:20:00Z&to=2026-11-24T10:00:00Z&interval=1h", "2026-11-24T08:20:00Z", "2026-11-24T10:00:00Z", "1h", 2, "2026-11-24T08:00:00Z", false},
		{"from=2026-11-24T08:20:00Z&to=2026-11-24T10:00:01Z&interval=1h", "2026-11-24T08:20:00Z", "2026-11-24T10:00:01Z", "1h", 3, "2026-11-24T08:00:00Z", false},
		// An explicit interval, to defaulting to now, or from to 24 hours before to.
		{"interval=1h", "2026-11-23T10:00:00Z", "2026-11-24T10:07:31.123456Z", "1h", 25, "2026-11-23T10:00:00Z", false},
		{"to=2026-11-24T06:30:00Z&interval=6h", "2026-11-23T06:00:00Z", "2026-11-24T06:30:00Z", "6h", 5, "2026-11-23T06:00:00Z", false},
		{"from=2026-11-24T09:00:00Z&interval=5m", "2026-11-24T09:00:00Z", "2026-11-24T10:07:31.123456Z", "5m", 14, "2026-11-24T09:00:00Z", false},
		// Exactly MaxBuckets.
		{"from=2026-11-23T00:00:00Z&to=2026-11-24T01:00:00Z&interval=1m", "2026-11-23T00:00:00Z", "2026-11-24T01:00:00Z", "1m", 1500, "2026-11-23T00:00:00Z", false},
		// Every fetch filter applies.
		{"q=ord_8f7d&name=shop&status_code=4xx&min_duration_ms=5&interval=1d", "2026-11-23T00:00:00Z", "2026-11-24T10:07:31.123456Z", "1d", 2, "2026-11-23T00:00:00Z", true},
	}
	for _, c := range cases {
		values, _ := url.ParseQuery(c.query)
		q, err := ParseQuery(values, statsNow)
		if err != nil {
			t.Errorf("ParseStatsQuery(%s): %v", c.query, err)
			continue
		}
		if !q.From.Equal(at(c.from)) || !q.To.Equal(at(c.to)) || q.Interval.Name != c.interval || q.BucketCount() != c.buckets || !q.FirstBucket().Equal(at(c.firstBucketAt)) {
			t.Errorf("ParseStatsQuery(%s) = [%s, %s) by %s in %d buckets from %s; want [%s, %s) by %s in %d from %s", c.query,
				domain.FormatTime(q.From), domain.FormatTime(q.To), q.Interval.Name, q.BucketCount(), domain.FormatTime(q.FirstBucket()),
				c.from, c.to, c.interval, c.buckets, c.firstBucketAt)
		}
		if c.filterNonEmpty && (q.Filter.Text != "ord_8f7d" || q.Filter.Name != "shop" || q.Filter.StatusMin != 400 || q.Filter.MinDuration == nil) {
			t.Errorf("ParseStatsQuery(%s): filter %+v misses parameters", c.query, q.Filter)
		}
	}
}

func TestParseStatsQueryErrors(t *testing.T) {
	for raw, field := range map[string]string{
		"from=2026-11-22T00:00:00Z&to=2026-11-24T00:00:00Z&interval=1m": "interval", // 2,880 buckets
		"from=2026-11-23T00:00:00Z&to=2026-11-24T01:01:00Z&interval=1m": "interval", // 1,501 buckets
		"from=2020-01-01T00:00:00Z&to=2026-11-24T00:00:00Z":             "interval", // over 1,500 days
		"interval=2h": "interval", "interval=": "interval", "interval=1H": "interval", "interval=60m": "interval",
		"from=2026-11-24T00:00:00Z&to=2026-11-24T00:00:00Z": "to",
		"from=2026-11-24T01:00:00Z&to=2026-11-24T00:00:00Z": "to",
		"from=2026-11-25T00:00:00Z":                         "from", // after to's default, now
		"q=%21%21":                                          "q",
		"max_duration_ms=-1":                                "max_duration_ms",
	} {
		values, _ := url.ParseQuery(raw)
		_, err := ParseQuery(values, statsNow)
		if verr := (*domain.ValidationError)(nil); !errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != field {
			t.Errorf("%s: err = %v, want a ValidationError naming %s", raw, err, field)
		}
	}
}

func TestBucketIndexAndAlignment(t *testing.T) {
	q := Query{From: time.Date(2026, 11, 24, 8, 20, 0, 0, time.UTC), To: time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC), Interval: Intervals[3]}
	for _, c := range []struct {
		at   time.Time
		want int
	}{
		{q.From, 0}, {time.Date(2026, 11, 24, 8, 59, 59, 999999000, time.UTC), 0},
		{time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC), 1}, {q.To.Add(-time.Microsecond), 2},
	} {
		if got := q.BucketIndex(c.at); got != c.want {
			t.Errorf("BucketIndex(%s) = %d, want %d", domain.FormatTime(c.at), got, c.want)
		}
	}
	// Every interval divides a day: a day's buckets start at midnight UTC.
	for _, iv := range Intervals {
		day := Query{From: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Add(iv.Width / 2), To: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), Interval: iv}
		if got := day.FirstBucket(); !got.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("interval %s: first bucket %s, want midnight", iv.Name, domain.FormatTime(got))
		}
	}
}

func TestSummariseAndPercentile(t *testing.T) {
	if got := Summarise(nil); got != (DurationSummary{}) {
		t.Errorf("Summarise(nil) = %+v, want the zero summary (null)", got)
	}
	if got := Summarise([]float64{12.345}); got != (DurationSummary{Count: 1, P50: 12.345, P95: 12.345, P99: 12.345}) {
		t.Errorf("Summarise of one = %+v", got)
	}
	// Unsorted input; ranks p·(n−1) = 1.5, 2.85, 2.97 interpolate linearly.
	if got := Summarise([]float64{40, 10, 30, 20}); got != (DurationSummary{Count: 4, P50: 25, P95: 38.5, P99: 39.7}) {
		t.Errorf("Summarise(40, 10, 30, 20) = %+v, want 4, 25, 38.5, 39.7", got)
	}
	// Eleven values 0..10: p50 is exactly the middle one.
	values := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	if got := Summarise(values); got.P50 != 5 || got.P95 != 9.5 || got.P99 != 9.9 || !slices.IsSorted(values) {
		t.Errorf("Summarise(10..0) = %+v (input sorted in place: %v)", got, slices.IsSorted(values))
	}
	// Rounded to the microsecond.
	for _, c := range []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{[]float64{0.001, 0.002}, 0.5, 0.002}, // 0.0015 rounds half away from zero
		{[]float64{1, 2}, 1.0 / 3, 1.333},
		{[]float64{1, 2, 4}, 0, 1},
		{[]float64{1, 2, 4}, 1, 4},
		{[]float64{86400000, 86400000}, 0.99, 86400000},
	} {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
		}
	}
}

func TestStatusCountsAdd(t *testing.T) {
	var c StatusCounts
	for _, code := range []int{100, 199, 200, 299, 300, 399, 400, 404, 499, 500, 599} {
		c.Add(code)
	}
	if c != (StatusCounts{2, 2, 2, 3, 2}) {
		t.Errorf("StatusCounts = %v, want [2 2 2 3 2]", c)
	}
}

func TestStatsBuilder(t *testing.T) {
	from := time.Date(2026, 11, 24, 8, 20, 0, 0, time.UTC) // not aligned: the first bucket starts at 08:00
	q := Query{From: from, To: from.Add(3*time.Hour + 40*time.Minute), Interval: Intervals[3]}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	samples := []Sample{
		{CreatedAt: from, StatusCode: 200, Path: "/v1/orders?page=2", Name: "shop", Duration: ms(10_000), HasDuration: true},
		{CreatedAt: from.Add(39 * time.Minute), StatusCode: 404, Path: "/v1/orders", Name: "shop", Duration: ms(30_500), HasDuration: true},
		{CreatedAt: from.Add(40 * time.Minute), StatusCode: 503, Path: "/v1/users", Name: "billing", Dropped: true},
		{CreatedAt: from.Add(3*time.Hour + 39*time.Minute), StatusCode: 101, Path: "/ws", Name: "Shop", Duration: ms(1), HasDuration: true},
		// Outside [From, To): ignored.
		{CreatedAt: from.Add(-time.Microsecond), StatusCode: 500, Path: "/v1/orders", Name: "shop"},
		{CreatedAt: q.To, StatusCode: 500, Path: "/v1/orders", Name: "shop"},
	}
	b := NewBuilder(q)
	for _, s := range samples {
		b.Add(s)
	}
	got := b.Stats()
	starts := []time.Time{}
	var counts []int64
	for _, bucket := range got.Buckets {
		starts = append(starts, bucket.Start)
		counts = append(counts, bucket.Count)
	}
	wantStarts := []time.Time{
		time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC),
	}
	if !slices.EqualFunc(starts, wantStarts, time.Time.Equal) || !slices.Equal(counts, []int64{2, 1, 0, 1}) {
		t.Errorf("buckets start %v with counts %v, want %v with [2 1 0 1]", starts, counts, wantStarts)
	}
	if d := got.Buckets[0].Duration; d != (DurationSummary{Count: 2, P50: 20.25, P95: 29.475, P99: 30.295}) {
		t.Errorf("bucket 0 durations %+v", d)
	}
	if d := got.Buckets[1].Duration; d.Count != 0 {
		t.Errorf("bucket 1 has no duration, summary %+v, want Count 0 (null)", d)
	}
	if got.Buckets[1].Dropped != 1 || got.Buckets[0].Dropped != 0 {
		t.Errorf("dropped %d and %d in buckets 0 and 1, want 0 and 1", got.Buckets[0].Dropped, got.Buckets[1].Dropped)
	}
	if got.Total.Count != 4 || got.Total.Dropped != 1 || got.Total.Status != (StatusCounts{1, 1, 0, 1, 1}) || got.Total.Duration.Count != 3 || got.Total.Duration.P50 != 10 {
		t.Errorf("total %+v", got.Total)
	}
	wantPaths := []KeyCount{{"/v1/orders", 2, 1}, {"/v1/users", 1, 1}, {"/ws", 1, 0}}
	wantNames := []KeyCount{{"shop", 2, 1}, {"Shop", 1, 0}, {"billing", 1, 1}}
	if !slices.Equal(got.TopPaths, wantPaths) || !slices.Equal(got.TopNames, wantNames) {
		t.Errorf("top paths %v names %v, want %v %v", got.TopPaths, got.TopNames, wantPaths, wantNames)
	}
	if !got.From.Equal(q.From) || !got.To.Equal(q.To) || got.Interval != q.Interval {
		t.Errorf("range [%s, %s) by %s, want the query's", domain.FormatTime(got.From), domain.FormatTime(got.To), got.Interval.Name)
	}
	// Stats leaves the builder as it was: a second call gives the same.
	if again := b.Stats(); !slices.Equal(again.Buckets, got.Buckets) || again.Total != got.Total {
		t.Errorf("a second Stats differs: %+v", again.Total)
	}
}

func TestStatsBuilderEmpty(t *testing.T) {
	q := Query{From: statsNow.Add(-time.Hour), To: statsNow, Interval: Intervals[2]}
	got := NewBuilder(q).Stats()
	if len(got.Buckets) != 5 || got.Total != (Bucket{}) || got.TopPaths == nil || got.TopNames == nil || len(got.TopPaths)+len(got.TopNames) != 0 {
		t.Errorf("empty statistics = %+v, want 5 empty buckets and empty (not nil) rankings", got)
	}
}

func TestTop(t *testing.T) {
	counts := map[string]*KeyCount{}
	for i, key := range []string{"b", "a", "c", "a", "d", "b", "e"} {
		kc := counts[key]
		if kc == nil {
			kc = &KeyCount{Key: key}
			counts[key] = kc
		}
		kc.Count++
		kc.Errors += int64(i % 2)
	}
	want := []KeyCount{{"a", 2, 2}, {"b", 2, 1}, {"c", 1, 0}}
	if got := Top(counts, 3); !slices.Equal(got, want) {
		t.Errorf("Top(3) = %v, want %v", got, want)
	}
	if got := Top(counts, 10); len(got) != 5 {
		t.Errorf("Top(10) of 5 keys = %v", got)
	}
	if got := PathOf("/v1/orders?page=2?x"); got != "/v1/orders" {
		t.Errorf("RouteOf = %q", got)
	}
	if IsError(399) || !IsError(400) || !IsError(599) {
		t.Error("IsError: errors are status 400 and above")
	}
}
