package stats

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Interval is a bucket width of the statistics.
type Interval struct {
	Name  string // as the API writes it: "15m"
	Width time.Duration
}

// Intervals are the bucket widths the statistics offer, narrowest first. Each
// divides a day, so buckets aligned on Unix time are aligned in UTC.
var Intervals = []Interval{
	{"1m", time.Minute}, {"5m", 5 * time.Minute}, {"15m", 15 * time.Minute},
	{"1h", time.Hour}, {"6h", 6 * time.Hour}, {"1d", 24 * time.Hour},
}

// Bucket counts of the statistics.
const (
	// DefaultBuckets is the most buckets the default interval gives.
	DefaultBuckets = 100
	// MaxBuckets is the most buckets a query may ask for.
	MaxBuckets = 1500
	// DefaultRange is the range of the statistics when from is not given.
	DefaultRange = 24 * time.Hour
	// TopPaths and TopNames are how many paths and applications the statistics rank.
	TopPaths = 10
	TopNames = 20
)

// Query asks for a scope's traffic statistics over [From, To) in buckets
// of Interval, starting at From rounded down to the interval.
type Query struct {
	Scope domain.Scope
	// From and To are the range the buckets cover.
	From, To time.Time
	// Filter selects the messages counted. Its From and To start as the
	// range's; the service may narrow them (retention), never widen them.
	Filter   domain.Filter
	Interval Interval
	// RollupsOnlyBefore, when after the counted range's start, is the
	// retention of the messages' edge, on a minute: the range before it is
	// counted from the rollups a store keeps past its messages, whether or
	// not those are still stored and readable (RollupBuilder.Accepts). The
	// service sets it on a query the rollups answer alone; a store that
	// counted so says it (Stats.RollupsOnlyBefore).
	RollupsOnlyBefore time.Time
}

// RollupsOnlyPart is where the part of q's counted range counted from
// rollups alone ends (RollupsOnlyBefore, at most the range's end), and
// false when there is no such part.
func (q Query) RollupsOnlyPart() (before time.Time, ok bool) {
	from, to := q.CountedRange()
	if !q.RollupsOnlyBefore.After(from) || !from.Before(to) {
		return time.Time{}, false
	}
	if to.Before(q.RollupsOnlyBefore) {
		return to, true
	}
	return q.RollupsOnlyBefore, true
}

// RollupsAnswer reports whether rollups can answer q: its filter selects by
// range and application at most. Every other filter (q, duration bounds, ip,
// method, path, path prefix, status) reads what a rollup does not keep, and
// so does any filter added later.
func (q Query) RollupsAnswer() bool {
	f := q.Filter
	f.Name, f.From, f.To = "", time.Time{}, time.Time{}
	return f == domain.Filter{}
}

// CountedRange is the range of created_at the statistics count: the query's,
// narrowed by its filter's (the service narrows it to retention).
func (q Query) CountedRange() (from, to time.Time) {
	from, to = q.From, q.To
	if f := q.Filter.From; f.After(from) {
		from = f
	}
	if t := q.Filter.To; !t.IsZero() && t.Before(to) {
		to = t
	}
	return from, to
}

// FirstBucket is the start of the first bucket: From rounded down to the interval.
func (q Query) FirstBucket() time.Time { return AlignDown(q.From, q.Interval.Width) }

// BucketCount is how many buckets the range spans.
func (q Query) BucketCount() int { return bucketCount(q.From, q.To, q.Interval.Width) }

// BucketIndex is the bucket t falls in; t must lie in the range.
func (q Query) BucketIndex(t time.Time) int {
	return int(t.Sub(q.FirstBucket()) / q.Interval.Width)
}

// AlignDown and bucketCount count in Unix seconds (every interval is whole
// seconds): a time.Duration since 1970 saturates past the year 2262, which
// gave a year-9999 range a negative bucket count.
func AlignDown(t time.Time, width time.Duration) time.Time {
	secs, w := t.Unix(), int64(width/time.Second)
	r := secs % w
	if r < 0 {
		r += w
	}
	return time.Unix(secs-r, 0).UTC()
}

// AlignUp is t rounded up to width, in whole seconds as AlignDown.
func AlignUp(t time.Time, width time.Duration) time.Time {
	down := AlignDown(t, width)
	if down.Equal(t) {
		return down
	}
	return down.Add(width)
}

func bucketCount(from, to time.Time, width time.Duration) int {
	w := int64(width / time.Second)
	span := to.Unix() - AlignDown(from, width).Unix()
	if to.Nanosecond() > 0 {
		span++ // the partial second still needs its bucket
	}
	return int((span + w - 1) / w)
}

// ParseQuery reads the statistics' query parameters at now: every fetch
// filter, the range (default: the last DefaultRange, with from rounded
// down to the interval) and the interval (default: the narrowest that gives at
// most DefaultBuckets buckets).
func ParseQuery(values map[string][]string, now time.Time) (Query, error) {
	p := domain.NewQueryParams(values)
	q := Query{Filter: p.Filter()}
	var named bool
	if v, ok := p.Get("interval"); ok {
		if q.Interval, named = intervalNamed(v); !named {
			p.Invalid("interval", "must be one of 1m, 5m, 15m, 1h, 6h, 1d")
		}
	}
	if err := p.Err(); err != nil {
		return Query{}, err
	}
	f := &q.Filter
	if f.To.IsZero() {
		f.To = domain.Micro(now)
	}
	defaultFrom := f.From.IsZero()
	if defaultFrom {
		f.From = f.To.Add(-DefaultRange)
	}
	if !f.From.Before(f.To) {
		p.Invalid("from", "must be before to (to defaults to now)")
		return Query{}, p.Err()
	}
	if !named {
		q.Interval = Intervals[len(Intervals)-1]
		for _, iv := range Intervals {
			if bucketCount(f.From, f.To, iv.Width) <= DefaultBuckets {
				q.Interval = iv
				break
			}
		}
	}
	if n := bucketCount(f.From, f.To, q.Interval.Width); n > MaxBuckets {
		p.Invalid("interval", "gives %d buckets over this range, more than %d: choose a wider interval or a shorter range", n, MaxBuckets)
		return Query{}, p.Err()
	}
	q.From, q.To = f.From, f.To
	if defaultFrom {
		q.From = q.FirstBucket()
		f.From = q.From
	}
	return q, nil
}

func intervalNamed(name string) (Interval, bool) {
	for _, iv := range Intervals {
		if iv.Name == name {
			return iv, true
		}
	}
	return Interval{}, false
}

// StatusCounts counts messages by status class: StatusCounts[0] holds the 1xx,
// StatusCounts[4] the 5xx.
type StatusCounts [5]int64

// Add counts one message of status code.
func (c *StatusCounts) Add(code int) { c[min(max(code/100, 1), 5)-1]++ }

// DurationSummary summarises the durations of some messages, in milliseconds.
// Count 0 means none had a duration, and the percentiles are meaningless.
type DurationSummary struct {
	Count         int64
	P50, P95, P99 float64
}

// Bucket is the traffic of one bucket, or of the whole range.
type Bucket struct {
	Start time.Time // zero for the whole range
	Count int64
	// Dropped is how many of Count an ingest rule dropped: tallies, counted
	// and not stored.
	Dropped  int64
	Status   StatusCounts
	Duration DurationSummary
}

// KeyCount ranks a path or an application: how many messages it has, and how
// many of them have a status of 400 or more.
type KeyCount struct {
	Key           string
	Count, Errors int64
}

// Stats is the reply of the statistics.
type Stats struct {
	From, To time.Time
	Interval Interval
	Total    Bucket
	Buckets  []Bucket   // every bucket of the range, oldest first
	TopPaths []KeyCount // paths without their query string
	TopNames []KeyCount
	// TopRoutes ranks the route templates of the messages that have one.
	TopRoutes []RouteStats
	// RollupsOnlyBefore, when not zero, is where messages begin: what was
	// created before it is counted from the rollups alone, its messages
	// having expired (counts, dropped, status classes, percentiles, paths,
	// routes and applications as the rollups keep them). It is at most To.
	RollupsOnlyBefore time.Time
}

// New returns q's statistics with every bucket present and empty, for a
// store to fill.
func New(q Query) Stats {
	s := Stats{From: q.From, To: q.To, Interval: q.Interval,
		Buckets: make([]Bucket, q.BucketCount()), TopPaths: []KeyCount{}, TopNames: []KeyCount{}, TopRoutes: []RouteStats{}}
	first := q.FirstBucket()
	for i := range s.Buckets {
		s.Buckets[i].Start = first.Add(time.Duration(i) * q.Interval.Width)
	}
	return s
}

// PathOf is a path without its query string, as statistics rank paths.
func PathOf(path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		return path[:i]
	}
	return path
}

// IsError reports whether a status counts as an error in the statistics.
func IsError(code int) bool { return code >= 400 }

// Builder computes statistics from the messages themselves, exactly: the
// memory store's way, and a fallback for a store that cannot aggregate. Each
// route's percentiles come from a DurationDigest (RouteCounter): exact up to
// ExactDurations durations of the route, within 1 % past that.
type Builder struct {
	q         Query
	stats     Stats
	durations [][]float64 // per bucket, in milliseconds
	paths     KeyCounter
	names     KeyCounter
	routes    RouteCounter
}

// NewBuilder returns an empty builder of q's statistics.
func NewBuilder(q Query) *Builder {
	s := New(q)
	return &Builder{q: q, stats: s, durations: make([][]float64, len(s.Buckets))}
}

// Add counts one message that passed the query's filter. A message outside the
// range is ignored.
func (b *Builder) Add(m Sample) {
	i, ok := b.stats.countSample(b.q, m)
	if !ok {
		return
	}
	if m.HasDuration {
		b.durations[i] = append(b.durations[i], float64(m.Duration.Microseconds())/1000)
	}
	b.paths.Add(PathOf(m.Path), IsError(m.StatusCode))
	b.names.Add(m.Name, IsError(m.StatusCode))
	countRoute(&b.routes, m)
}

// countSample counts m in its bucket of s, q's statistics, and returns the
// bucket; false, counting nothing, when m lies outside q's range.
func (s *Stats) countSample(q Query, m Sample) (int, bool) {
	if m.CreatedAt.Before(q.From) || !m.CreatedAt.Before(q.To) {
		return 0, false
	}
	i := q.BucketIndex(m.CreatedAt)
	s.Buckets[i].Count++
	s.Buckets[i].Status.Add(m.StatusCode)
	if m.Dropped {
		s.Buckets[i].Dropped++
	}
	return i, true
}

// MaxRankedKeys bounds how many paths or applications a Builder counts at
// once, so that a range of a million distinct paths cannot take a million
// counters per request. Up to this many distinct keys the ranking is exact;
// past it the least counted are dropped from time to time, and the ranking is
// approximate, as Elasticsearch's terms aggregation is.
const MaxRankedKeys = 10_000

// Sample is what the statistics read of one message.
type Sample struct {
	CreatedAt   time.Time
	StatusCode  int
	Duration    time.Duration
	HasDuration bool
	Path, Name  string
	Route       string // "" when the message has none
	Dropped     bool   // a tally (domain.Message.Tally)
}

// SampleOf is what the statistics read of m.
func SampleOf(m domain.Message) Sample {
	return Sample{CreatedAt: m.CreatedAt, StatusCode: m.StatusCode, Duration: m.Duration,
		HasDuration: m.HasDuration, Path: m.Path, Name: m.Name, Route: m.Route, Dropped: m.Tally}
}

// Stats returns the statistics of what was added.
func (b *Builder) Stats() Stats {
	s := b.stats
	s.Buckets = slices.Clone(s.Buckets)
	var all []float64
	for i := range s.Buckets {
		s.Buckets[i].Duration = Summarise(b.durations[i])
		all = append(all, b.durations[i]...)
	}
	s.sumBuckets()
	s.Total.Duration = Summarise(all)
	s.TopPaths = b.paths.Top(TopPaths)
	s.TopNames = b.names.Top(TopNames)
	s.TopRoutes = TopRouteStats(&b.routes, TopRoutes)
	return s
}

// sumBuckets sets the total's count and status classes to the buckets' sums:
// every builder's last step but the durations and the rankings.
func (s *Stats) sumBuckets() {
	s.Total.Count, s.Total.Dropped, s.Total.Status = 0, 0, StatusCounts{}
	for _, bucket := range s.Buckets {
		s.Total.Count += bucket.Count
		s.Total.Dropped += bucket.Dropped
		for c := range bucket.Status {
			s.Total.Status[c] += bucket.Status[c]
		}
	}
}

// Top returns the n keys of most messages, by count descending then key ascending.
func Top(counts map[string]*KeyCount, n int) []KeyCount {
	all := make([]KeyCount, 0, len(counts))
	for _, kc := range counts {
		all = append(all, *kc)
	}
	slices.SortFunc(all, CompareKeyCounts)
	return all[:min(n, len(all))]
}

// CompareKeyCounts orders rankings: count descending, then key ascending.
func CompareKeyCounts(a, b KeyCount) int {
	if c := cmp.Compare(b.Count, a.Count); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// Summarise returns the count and exact percentiles of durations (in any
// order; it sorts them in place), interpolating between neighbouring ranks.
func Summarise(durations []float64) DurationSummary {
	if len(durations) == 0 {
		return DurationSummary{}
	}
	slices.Sort(durations)
	return DurationSummary{Count: int64(len(durations)),
		P50: Percentile(durations, 0.50), P95: Percentile(durations, 0.95), P99: Percentile(durations, 0.99)}
}

// Percentile is the p-th percentile (0 to 1) of sorted values, interpolated
// linearly between ranks ⌊p·(n−1)⌋ and ⌈p·(n−1)⌉, rounded to the microsecond.
func Percentile(sorted []float64, p float64) float64 {
	lo, hi, rank := percentileRanks(len(sorted), p)
	return interpolate(sorted[lo], sorted[hi], rank-float64(lo))
}

// percentileRanks are the ranks Percentile interpolates between, and where
// between them p falls, among n values.
func percentileRanks(n int, p float64) (lo, hi int, rank float64) {
	rank = p * float64(n-1)
	return int(math.Floor(rank)), int(math.Ceil(rank)), rank
}

func interpolate(lo, hi, frac float64) float64 {
	v := lo + (hi-lo)*frac
	return math.Round(v*1000) / 1000
}

// selectRank reorders a so that a[k] holds the value of rank k, every value
// before it is no greater and every value after it no smaller: a quickselect
// with three-way partitions (durations repeat), sorting what is left once it
// is small or its pivots keep choosing badly.
func selectRank(a []int64, k int) {
	if k == 0 { // the next rank up: the least of what is left
		least := 0
		for i, v := range a {
			if v < a[least] {
				least = i
			}
		}
		a[0], a[least] = a[least], a[0]
		return
	}
	for budget := 2 * bits.Len(uint(len(a))); len(a) > 32; budget-- {
		if budget == 0 {
			break
		}
		mid := len(a) / 2
		pivot := max(min(a[0], a[mid]), min(max(a[0], a[mid]), a[len(a)-1])) // median of three
		lt, i, gt := 0, 0, len(a)
		for i < gt {
			switch v := a[i]; {
			case v < pivot:
				a[lt], a[i] = v, a[lt]
				lt++
				i++
			case v > pivot:
				gt--
				a[i], a[gt] = a[gt], v
			default:
				i++
			}
		}
		switch {
		case k < lt:
			a = a[:lt]
		case k >= gt:
			a, k = a[gt:], k-gt
		default:
			return // a[k] is the pivot, and every value equal to it lies around it
		}
	}
	slices.Sort(a)
}
