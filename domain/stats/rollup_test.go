package stats

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// rollupWorld is a store's messages and the rollups it would have written
// with them: one per application and minute of created_at.
type rollupWorld struct {
	msgs     []domain.Message
	rollups  map[rollupKey]*Rollup
	byMinute map[rollupKey][]domain.Message // what a store streams
	delay    time.Duration                  // visibility delay
}

type rollupKey struct {
	name  string
	start time.Time
}

var rollupBase = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

// rollupRoutes are the templates of the world's messages; some have none.
var rollupRoutes = []string{"/v1/items/{id}", "/v1/items", "/v1/items/{id}/pay", "/health", "/v1/items/{id}/refund"}

// newRollupWorld makes random messages: a few or thousands, names and paths
// uniform or skewed, paths with and without query strings, statuses 100 to
// 599, durations present or not and of every shape, some written long after
// their created_at (a backfill), some expiring within the range.
func newRollupWorld(rng *rand.Rand) *rollupWorld {
	w := &rollupWorld{rollups: map[rollupKey]*Rollup{}, byMinute: map[rollupKey][]domain.Message{}, delay: time.Duration(rng.IntN(10)) * time.Second}
	n := []int{0, 1, 7, 60, 400, 3000, 12_000}[rng.IntN(7)]
	span := []time.Duration{3 * time.Minute, 50 * time.Minute, 5 * time.Hour, 27 * time.Hour}[rng.IntN(4)]
	retention := []time.Duration{span / 2, span, 30 * 24 * time.Hour}[rng.IntN(3)]
	pick := func(k int, skewed bool) int {
		if skewed {
			return min(int(rng.ExpFloat64()*float64(k)/6), k-1)
		}
		return rng.IntN(k)
	}
	names := []string{"shop", "Shop", "billing", "search", "mobile-ios", "mobile-android", "admin", "a", "checkout", "partner"}[:1+rng.IntN(10)]
	paths := 1 + rng.IntN([]int{3, 40, 900}[rng.IntN(3)])
	skewNames, skewPaths, skewStatus := rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0
	durationShape := slices.Sorted(func(yield func(string) bool) {
		for k := range durationShapes {
			if !yield(k) {
				return
			}
		}
	})[rng.IntN(len(durationShapes))]
	for range n {
		created := rollupBase.Add(time.Duration(rng.Int64N(int64(span/time.Microsecond))) * time.Microsecond)
		stored := created.Add(time.Duration(rng.Int64N(2_000_000)) * time.Microsecond)
		if rng.IntN(50) == 0 { // a backfill: stored long after its created_at
			stored = rollupBase.Add(span).Add(time.Duration(rng.Int64N(20_000_000)) * time.Microsecond)
		}
		m := domain.Message{Name: names[pick(len(names), skewNames)], CreatedAt: created, UpdatedAt: stored,
			VisibleAt: stored.Add(w.delay), ExpiresAt: created.Add(retention)}
		m.Path = fmt.Sprintf("/v1/items/%d", pick(paths, skewPaths))
		switch rng.IntN(5) {
		case 0:
			m.Path += fmt.Sprintf("?page=%d", rng.IntN(9))
		case 1:
			m.Path += "?"
		}
		if r := pick(len(rollupRoutes)+1, skewPaths); r < len(rollupRoutes) {
			m.Route = rollupRoutes[r]
		}
		m.StatusCode = 100 + rng.IntN(500)
		if skewStatus {
			m.StatusCode = []int{200, 200, 200, 200, 201, 304, 404, 500}[rng.IntN(8)]
		}
		if rng.IntN(8) != 0 {
			m.Duration, m.HasDuration = time.Duration(durationShapes[durationShape](rng))*time.Microsecond, true
		}
		m.Tally = m.StatusCode%3 == 0 // what an ingest rule dropped; no draw, so the worlds stay as they were
		w.msgs = append(w.msgs, m)
		key := rollupKey{m.Name, m.CreatedAt.Truncate(time.Minute)}
		if w.rollups[key] == nil {
			w.rollups[key] = &Rollup{}
		}
		w.rollups[key].AddMessage(m)
		w.byMinute[key] = append(w.byMinute[key], m)
	}
	return w
}

// query is a random query at a random now: ranges aligned to the minute or
// not, to at now or before, the filter's from narrowed to retention or not,
// every interval that gives at most MaxBuckets buckets, a name or none.
func (w *rollupWorld) query(rng *rand.Rand) (Query, time.Time) {
	now := rollupBase.Add(time.Duration(rng.Int64N(int64(30*time.Hour/time.Microsecond))) * time.Microsecond)
	if len(w.msgs) > 0 && rng.IntN(2) == 0 { // around the newest writes, some not visible yet
		latest := slices.MaxFunc(w.msgs, func(a, b domain.Message) int { return a.UpdatedAt.Compare(b.UpdatedAt) }).UpdatedAt
		now = latest.Add(time.Duration(rng.Int64N(int64(w.delay/time.Microsecond)+2_000_000)-1_000_000) * time.Microsecond)
	}
	var from, to time.Time
	switch rng.IntN(3) {
	case 0: // to at now
		to = now
		from = to.Add(-time.Duration(1+rng.Int64N(int64(30*time.Hour/time.Microsecond))) * time.Microsecond)
	case 1: // whole minutes
		from = rollupBase.Add(time.Duration(rng.IntN(28*60)-60) * time.Minute)
		to = from.Add(time.Duration(1+rng.IntN(29*60)) * time.Minute)
	default:
		from = rollupBase.Add(time.Duration(rng.Int64N(int64(28*time.Hour/time.Microsecond))) * time.Microsecond)
		to = from.Add(time.Duration(1+rng.Int64N(int64(3*time.Hour/time.Microsecond))) * time.Microsecond)
	}
	var usable []Interval
	for _, iv := range Intervals {
		if bucketCount(from, to, iv.Width) <= MaxBuckets {
			usable = append(usable, iv)
		}
	}
	q := Query{From: from, To: to, Interval: usable[rng.IntN(len(usable))]}
	q.Filter.From, q.Filter.To = from, to
	if oldest := now.Add(-time.Duration(rng.Int64N(int64(30*time.Hour/time.Microsecond))) * time.Microsecond); rng.IntN(3) == 0 && oldest.After(from) {
		q.Filter.From = oldest // narrowed to retention
	}
	if rng.IntN(5) == 0 { // which rollups cannot answer
		q.Filter.Route = rollupRoutes[rng.IntN(len(rollupRoutes))]
	}
	if len(w.msgs) > 0 && rng.IntN(3) == 0 {
		q.Filter.Name = w.msgs[rng.IntN(len(w.msgs))].Name
	} else if rng.IntN(6) == 0 {
		q.Filter.Name = "nobody"
	}
	return q, now
}

func sortedRollupKeys(m map[rollupKey]*Rollup) []rollupKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b rollupKey) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return a.start.Compare(b.start)
	})
}

// counted are the messages Builder counts for q at now.
func (w *rollupWorld) counted(q Query, now time.Time) []domain.Message {
	var out []domain.Message
	match := q.Filter.Matcher()
	for _, m := range w.msgs {
		if m.Readable(now) && match(m) {
			out = append(out, m)
		}
	}
	return out
}

// answer is what a store answers from its rollups (decoded from their
// encoding, fed in random order, at times merged into hours, at times ranked
// by hour),
// streaming the messages of what they cannot stand for.
func (w *rollupWorld) answer(t *testing.T, rng *rand.Rand, q Query, now time.Time) (stats Stats, refused, rankedHours, keptHours int) {
	from, to := q.CountedRange()
	type span struct {
		name       string
		start, end time.Time
		r          *Rollup
	}
	var spans []span
	hours := map[rollupKey]*Rollup{}
	useHours := rng.IntN(3) == 0 // refused where the interval is narrower
	// Maps are read in key order throughout, so that the seeded rng draws the
	// same numbers each run and the coverage floors of the test hold every run.
	for _, key := range sortedRollupKeys(w.rollups) {
		r := w.rollups[key]
		if !key.start.Before(to) || !key.start.Add(time.Minute).After(from) {
			continue // the store reads the minutes that meet the range
		}
		if q.Filter.Name != "" && key.name != q.Filter.Name && rng.IntN(4) != 0 {
			continue // and the filter's application's alone, mostly
		}
		var read Rollup // a copy, as a store reads it
		read.Merge(r)
		if useHours {
			hour := rollupKey{key.name, key.start.Truncate(time.Hour)}
			if hours[hour] == nil {
				hours[hour] = &Rollup{}
			}
			hours[hour].Merge(&read)
			continue
		}
		spans = append(spans, span{key.name, key.start, key.start.Add(time.Minute), &read})
	}
	for _, key := range sortedRollupKeys(hours) {
		r := hours[key]
		spans = append(spans, span{key.name, key.start, key.start.Add(time.Hour), r})
	}
	rng.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
	// The spans counted by two builders, added up (RollupBuilder.Merge).
	b, other := NewRollupBuilder(q, now), NewRollupBuilder(q, now)
	match := q.Filter.Matcher()
	stream := func(b *RollupBuilder, s span) {
		for minute := s.start; minute.Before(s.end); minute = minute.Add(time.Minute) {
			for _, m := range w.byMinute[rollupKey{s.name, minute}] {
				if m.Readable(now) && match(m) {
					b.Add(SampleOf(m))
				}
			}
		}
	}
	if !useHours && rng.IntN(2) == 0 {
		// Ranked by hour: an hour's minutes (of every application the
		// filter counts) read without their keys, and the rankings of their
		// merge, when every minute can stand for itself.
		byHour := map[time.Time][]span{}
		for _, s := range spans {
			byHour[s.start.Truncate(time.Hour)] = append(byHour[s.start.Truncate(time.Hour)], s)
		}
		k := 0
		for _, hour := range slices.SortedFunc(maps.Keys(byHour), time.Time.Compare) {
			group := byHour[hour]
			b := b
			if k++; k%2 == 0 {
				b = other
			}
			whole := true
			for _, s := range group {
				whole = whole && b.Accepts(s.start, s.end, s.r)
			}
			if !whole {
				for _, s := range group {
					if !b.AddRollup(s.start, s.end, s.name, s.r) {
						refused++
						stream(b, s)
					}
				}
				continue
			}
			if !hour.Before(from) && !hour.Add(time.Hour).After(to) && rng.IntN(2) == 0 {
				// A whole hour as a store keeps it: its buckets' part of it
				// (the view's applications merged), its applications, and
				// the rankings of its merge.
				width := min(q.Interval.Width, time.Hour)
				parts := make([]Rollup, time.Hour/width)
				var names KeyCounter
				var merged Rollup
				for _, s := range group {
					if q.Filter.Name != "" && s.name != q.Filter.Name {
						continue
					}
					parts[s.start.Sub(hour)/width].MergeSeries(s.r)
					names.AddCounts(s.name, s.r.Count, s.r.Errors())
					merged.Merge(s.r)
				}
				for i := range parts {
					if start := hour.Add(time.Duration(i) * width); parts[i].Count > 0 && !b.AddBuckets(start, start.Add(width), &parts[i]) {
						t.Fatalf("AddBuckets refused %s of an hour whose minutes it accepts", domain.FormatTime(start))
					}
				}
				b.AddNames(&names)
				b.AddRankings(&merged)
				keptHours++
				continue
			}
			var merged Rollup
			for _, s := range group {
				if !b.AddSeries(s.start, s.end, s.name, s.r) {
					t.Fatalf("AddSeries refused the rollup of %s at %s, which it accepts", s.name, domain.FormatTime(s.start))
				}
				if q.Filter.Name == "" || s.name == q.Filter.Name {
					merged.Merge(s.r)
				}
			}
			b.AddRankings(&merged)
			rankedHours++
		}
		b.Merge(other)
		return b.Stats(), refused, rankedHours, keptHours
	}
	for k, s := range spans {
		b := b
		if k%2 == 1 {
			b = other
		}
		if b.AddRollup(s.start, s.end, s.name, s.r) {
			continue
		}
		refused++
		stream(b, s)
	}
	b.Merge(other)
	return b.Stats(), refused, 0, 0
}

// The differential test: rollups plus the messages they cannot stand for give
// Builder's statistics over the readable messages. Counts, status
// classes and rankings are equal; percentiles equal where a bucket holds at
// most ExactDurations durations, and within 1 % past that.
func TestRollupStatsAreStatsBuilders(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	var refused, sketched, routeFiltered, rankedHours, keptHours int
	for round := range 200 {
		w := newRollupWorld(rng)
		for range 6 {
			q, now := w.query(rng)
			what := fmt.Sprintf("round %d, %d messages, [%s, %s) counting [%s, %s) by %s, name %q, route %q, now %s", round, len(w.msgs),
				domain.FormatTime(q.From), domain.FormatTime(q.To), domain.FormatTime(q.Filter.From), domain.FormatTime(q.Filter.To), q.Interval.Name, q.Filter.Name, q.Filter.Route, domain.FormatTime(now))
			counted := w.counted(q, now)
			ref := NewBuilder(q)
			for _, m := range counted {
				ref.Add(SampleOf(m))
			}
			var got Stats
			var n int
			switch {
			case q.Filter.Route != "" && q.RollupsAnswer():
				t.Fatalf("%s: rollups answer a route filter, which they do not keep", what)
			case q.Filter.Route != "": // a store streams every message matching it
				b := NewRollupBuilder(q, now)
				for _, m := range counted {
					b.Add(SampleOf(m))
				}
				got = b.Stats()
				routeFiltered++
			case !q.RollupsAnswer():
				t.Fatalf("%s: rollups do not answer", what)
			default:
				var ranked, kept int
				got, n, ranked, kept = w.answer(t, rng, q, now)
				rankedHours, keptHours = rankedHours+ranked, keptHours+kept
			}
			want := ref.Stats()
			refused += n
			if diff := statsDiff(q, counted, want, got); diff != "" {
				t.Fatalf("%s:\n%s", what, diff)
			}
			if got.Total.Duration.Count > ExactDurations {
				sketched++
			}
		}
	}
	// The worlds must reach what the test is for.
	if sketched < 50 || refused < 500 || routeFiltered < 50 || rankedHours < 50 || keptHours < 20 {
		t.Errorf("only %d queries summarised more than %d durations, %d rollups refused, %d filtered by route, %d hours ranked whole, %d kept whole",
			sketched, ExactDurations, refused, routeFiltered, rankedHours, keptHours)
	}
	t.Logf("%d queries past %d durations, %d rollups refused, %d hours ranked whole, %d kept whole", sketched, ExactDurations, refused, rankedHours, keptHours)
}

// statsDiff compares got with want, Builder's over counted: counts,
// status classes and rankings exactly; percentiles exactly where a bucket
// holds at most ExactDurations durations and within 1 % past that.
func statsDiff(q Query, counted []domain.Message, want, got Stats) string {
	var diff []string
	if !got.From.Equal(want.From) || !got.To.Equal(want.To) || got.Interval != want.Interval || len(got.Buckets) != len(want.Buckets) {
		return fmt.Sprintf("range [%s, %s) by %s in %d buckets, want [%s, %s) by %s in %d", domain.FormatTime(got.From), domain.FormatTime(got.To),
			got.Interval.Name, len(got.Buckets), domain.FormatTime(want.From), domain.FormatTime(want.To), want.Interval.Name, len(want.Buckets))
	}
	perBucket := make([][]float64, len(want.Buckets))
	var all []float64
	for _, m := range counted {
		if ms, ok := m.DurationMS(); ok && !m.CreatedAt.Before(q.From) && m.CreatedAt.Before(q.To) {
			i := q.BucketIndex(m.CreatedAt)
			perBucket[i] = append(perBucket[i], ms)
			all = append(all, ms)
		}
	}
	compare := func(name string, want, got Bucket, durations []float64) {
		if !got.Start.Equal(want.Start) || got.Count != want.Count || got.Dropped != want.Dropped || got.Status != want.Status || got.Duration.Count != want.Duration.Count {
			diff = append(diff, fmt.Sprintf("%s: %+v, want %+v", name, got, want))
			return
		}
		if want.Duration.Count <= ExactDurations {
			if got.Duration != want.Duration {
				diff = append(diff, fmt.Sprintf("%s: durations %+v, want %+v", name, got.Duration, want.Duration))
			}
			return
		}
		slices.Sort(durations)
		for _, p := range []struct {
			p   float64
			got float64
		}{{0.50, got.Duration.P50}, {0.95, got.Duration.P95}, {0.99, got.Duration.P99}} {
			lo, hi, _ := percentileRanks(len(durations), p.p)
			if p.got < durations[lo]*0.99-0.0005 || p.got > durations[hi]*1.01+0.0005 {
				diff = append(diff, fmt.Sprintf("%s: p%.0f of %d = %v, want within 1 %% of %v to %v",
					name, p.p*100, len(durations), p.got, durations[lo], durations[hi]))
			}
		}
	}
	compare("total", want.Total, got.Total, all)
	for i := range want.Buckets {
		compare(fmt.Sprintf("bucket %d", i), want.Buckets[i], got.Buckets[i], perBucket[i])
	}
	if !slices.Equal(got.TopPaths, want.TopPaths) {
		diff = append(diff, fmt.Sprintf("top paths %v, want %v", got.TopPaths, want.TopPaths))
	}
	if !slices.Equal(got.TopNames, want.TopNames) {
		diff = append(diff, fmt.Sprintf("top names %v, want %v", got.TopNames, want.TopNames))
	}
	// Both count each route's durations in a DurationDigest, whose summary
	// does not depend on the order of Add and Merge.
	if !slices.Equal(got.TopRoutes, want.TopRoutes) {
		diff = append(diff, fmt.Sprintf("top routes %v, want %v", got.TopRoutes, want.TopRoutes))
	}
	return strings.Join(diff, "\n")
}

func TestRollupsAnswer(t *testing.T) {
	d := time.Millisecond
	for _, c := range []struct {
		filter domain.Filter
		want   bool
	}{
		{domain.Filter{}, true},
		{domain.Filter{Name: "shop", From: rollupBase, To: rollupBase.Add(time.Hour)}, true},
		{domain.Filter{Route: "/orders/{id}"}, false}, // no status is kept per route
		{domain.Filter{Text: "x"}, false}, {domain.Filter{Method: "GET"}, false}, {domain.Filter{IPAddress: "10.0.0.1"}, false},
		{domain.Filter{Path: "/a"}, false}, {domain.Filter{PathPrefix: "/a"}, false}, {domain.Filter{StatusMin: 400}, false},
		{domain.Filter{StatusMax: 499}, false}, {domain.Filter{MinDuration: &d}, false}, {domain.Filter{MaxDuration: &d}, false},
	} {
		if got := (Query{Filter: c.filter}).RollupsAnswer(); got != c.want {
			t.Errorf("RollupsAnswer with %+v = %v, want %v", c.filter, got, c.want)
		}
	}
}

// AddRollup refuses what a rollup cannot stand for, and counts nothing then.
func TestAddRollupRefuses(t *testing.T) {
	minute := rollupBase.Add(10 * time.Minute)
	q := Query{From: rollupBase.Add(5*time.Minute + time.Second), To: rollupBase.Add(time.Hour), Interval: Intervals[1]}
	q.Filter.From, q.Filter.To = q.From, q.To
	now := rollupBase.Add(2 * time.Hour)
	r := &Rollup{}
	r.AddMessage(domain.Message{Name: "shop", CreatedAt: minute, VisibleAt: minute, ExpiresAt: minute.Add(24 * time.Hour), StatusCode: 500, Path: "/a"})
	for _, c := range []struct {
		what       string
		start, end time.Time
		now        time.Time
		want       bool
	}{
		{"a whole minute", minute, minute.Add(time.Minute), now, true},
		{"the minute from starts in", rollupBase.Add(5 * time.Minute), rollupBase.Add(6 * time.Minute), now, false},
		{"a minute past to", q.To, q.To.Add(time.Minute), now, false},
		{"two buckets", minute, minute.Add(10 * time.Minute), now, false},
		{"an empty span", minute, minute, now, false},
		{"not visible yet", minute, minute.Add(time.Minute), minute.Add(-time.Microsecond), false},
		{"visible just now", minute, minute.Add(time.Minute), minute, true},
		{"expired", minute, minute.Add(time.Minute), minute.Add(24 * time.Hour), false},
	} {
		b := NewRollupBuilder(q, c.now)
		if got := b.AddRollup(c.start, c.end, "shop", r); got != c.want {
			t.Errorf("%s: AddRollup = %v, want %v", c.what, got, c.want)
		}
		if total := b.Stats().Total.Count; (total == 1) != c.want {
			t.Errorf("%s: counted %d messages", c.what, total)
		}
	}
	// Another application than the filter's: nothing to count, nothing to stream.
	q.Filter.Name = "billing"
	b := NewRollupBuilder(q, now)
	if !b.AddRollup(minute, minute.Add(time.Minute), "shop", r) || b.Stats().Total.Count != 0 {
		t.Error("a rollup of an application the filter excludes was counted or refused")
	}
}
