package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Stats counts the messages of q's range in the narrowest index, reading only
// its entries and their slots (and records only when the filter reads them):
// bucket, status, duration, application and the hash of the route are all in
// the slot. Durations are counted as whole microseconds and summarised by
// selection (domain.SummariseMicros). A long range is walked in two halves on
// two goroutines when the process has two processors.
//
// The result is domain.StatsBuilder's to the bit as long as the range holds
// at most domain.MaxRankedKeys distinct routes (each half keeps at most
// MaxRankedKeys route counters, the request 2·MaxRankedKeys, as the builder
// does); past that both rankings are approximate. Two routes whose 64-bit
// hashes collide would be counted as one (routeHash; about one chance in 10⁷
// for a million distinct routes). Ranges the slots cannot express in
// nanoseconds, and stores of more than 2·MaxRankedKeys application names, are
// counted by domain.StatsBuilder itself.
func (s *Store) Stats(ctx context.Context, q domain.StatsQuery, now time.Time) (domain.Stats, error) {
	release, err := s.admitWholeWalk(ctx)
	if err != nil {
		return domain.Stats{}, fmt.Errorf("memory: stats: %w", err)
	}
	defer release()
	s.mu.RLock()
	defer s.mu.RUnlock()
	index := s.index(domain.Query{Scope: q.Scope, Filter: q.Filter})
	if index == nil {
		return domain.NewStatsBuilder(q).Stats(), nil
	}
	var stats domain.Stats
	if plan, ok := s.planStats(q); ok {
		stats, err = s.countStats(ctx, index, q, plan, now)
	} else {
		stats, err = s.buildStats(ctx, index, q, now)
	}
	if err != nil {
		return domain.Stats{}, fmt.Errorf("memory: stats: %w", err)
	}
	return stats, nil
}

// buildStats feeds domain.StatsBuilder, reading each message's path from its
// record: the reference countStats must agree with.
func (s *Store) buildStats(ctx context.Context, index *tree, q domain.StatsQuery, now time.Time) (domain.Stats, error) {
	builder := domain.NewStatsBuilder(q)
	// The builder copies the paths it keeps: views are enough here.
	err := s.walk(ctx, index, domain.Query{Scope: q.Scope, Filter: q.Filter}, now, func(n uint32, m *domain.Message) bool {
		builder.Add(domain.StatsSample{CreatedAt: m.CreatedAt, StatusCode: m.StatusCode,
			Duration: m.Duration, HasDuration: m.HasDuration, Path: recordPath(s.record(n)), Name: m.Name, Route: m.Route})
		return true
	})
	if err != nil {
		return domain.Stats{}, err
	}
	return builder.Stats(), nil
}

// statsPlan is a statistics query in the slots' terms: Unix nanoseconds.
type statsPlan struct {
	first, width int64 // the first bucket's start, the buckets' width
	buckets      int
	lo, hi       int64 // created_at counted, both included: the query's range and the filter's
}

// planStats is q in nanoseconds, false when some bound lies outside what an
// int64 of nanoseconds holds (slots clamp such times) or the store has more
// application names than the builder would count exactly.
func (s *Store) planStats(q domain.StatsQuery) (statsPlan, bool) {
	inNanos := func(t time.Time) bool { return t.After(minNanos) && t.Before(maxNanos) }
	first := q.FirstBucket()
	if s.names.len() > 2*domain.MaxRankedKeys || !inNanos(first) || !inNanos(q.To.Add(q.Interval.Width)) ||
		q.Interval.Width <= 0 {
		return statsPlan{}, false
	}
	p := statsPlan{first: first.UnixNano(), width: int64(q.Interval.Width), buckets: q.BucketCount(),
		lo: q.From.UnixNano(), hi: q.To.UnixNano() - 1}
	if f := q.Filter.From; !f.IsZero() {
		if !inNanos(f) {
			return statsPlan{}, false
		}
		p.lo = max(p.lo, f.UnixNano())
	}
	if t := q.Filter.To; !t.IsZero() {
		if !inNanos(t) {
			return statsPlan{}, false
		}
		p.hi = min(p.hi, t.UnixNano()-1)
	}
	return p, true
}

// span is a range of created_at, both ends included.
type span struct{ lo, hi int64 }

// parallelStatsFrom is the size of index from which a range is walked in two
// halves: below it a goroutine costs more than it saves. Tests lower it.
var parallelStatsFrom = 1 << 15

// spans divides the plan's range into the halves walked at once: at a bucket's
// start, so that each bucket is counted by one walk.
func (p statsPlan) spans(indexLen int) []span {
	whole := []span{{p.lo, p.hi}}
	if indexLen < parallelStatsFrom || runtime.GOMAXPROCS(0) < 2 || p.lo >= p.hi {
		return whole
	}
	mid := p.lo + (p.hi-p.lo)/2
	mid = p.first + (mid-p.first)/p.width*p.width
	if mid <= p.lo {
		return whole
	}
	return []span{{mid, p.hi}, {p.lo, mid - 1}}
}

// countStats counts the plan's range, one statsPart per span.
func (s *Store) countStats(ctx context.Context, index *tree, q domain.StatsQuery, p statsPlan, now time.Time) (domain.Stats, error) {
	spans := p.spans(index.Len())
	parts := make([]*statsPart, len(spans))
	errs := make([]error, len(spans))
	var wg sync.WaitGroup
	for i := range spans {
		parts[i] = newStatsPart(&p, s.names.len(), len(spans))
		if s.templates.len() > 1 { // else no message has a template: none to read
			parts[i].templateNames, parts[i].slotTemplates = &s.templates, &s.slotTemplates
		}
		count := func() { errs[i] = s.countSpan(ctx, index, q, now, spans[i], parts[i]) }
		if i < len(spans)-1 {
			wg.Go(count)
		} else {
			count()
		}
	}
	wg.Wait()
	defer func() {
		for _, part := range parts {
			part.release()
		}
	}()
	for _, err := range errs {
		if err != nil {
			return domain.Stats{}, err
		}
	}
	return s.mergeStats(q, parts), nil
}

// countSpan counts into part the messages of span that are readable at now
// and pass q's filter, newest first as List walks.
func (s *Store) countSpan(ctx context.Context, index *tree, q domain.StatsQuery, now time.Time, sp span, part *statsPart) error {
	f := q.Filter
	if f.Method != "" || f.IPAddress != "" || f.Path != "" || f.PathPrefix != "" || f.Text != "" {
		// The filter reads the record: walk as List does, within the span.
		f.From, f.To = time.Unix(0, sp.lo).UTC(), time.Unix(0, sp.hi+1).UTC()
		return s.walk(ctx, index, domain.Query{Scope: q.Scope, Filter: f}, now, func(n uint32, _ *domain.Message) bool {
			sl := s.slots.at(n)
			part.add(sl.created, n, sl)
			return true
		})
	}
	passes, ok := s.slotFilterOf(f)
	if !ok {
		return nil
	}
	at := nanos(now)
	var batch [statsBatch]struct {
		created int64
		slot    uint32
	}
	var queued, walked int
	count := func() {
		// Slots lie in the order messages came, not in the index's: load
		// them all first, so that their cache misses overlap.
		var touched int64
		for _, e := range batch[:queued] {
			touched ^= s.slots.at(e.slot).visible
		}
		part.touched ^= touched
		for _, e := range batch[:queued] {
			sl := s.slots.at(e.slot)
			if at < sl.visible || at >= sl.expires || !passes.admits(sl) ||
				(passes.byTemplate && s.slotTemplates.at(e.slot) != passes.template) {
				continue
			}
			part.add(e.created, e.slot, sl)
		}
		queued = 0
	}
	var stopped error
	index.AscendGreaterOrEqual(entry{created: sp.hi, top: true}, func(e entry) bool {
		if e.created < sp.lo {
			return false // everything further on is older still
		}
		if walked++; walked%walkCheckEvery == 0 {
			if stopped = ctx.Err(); stopped != nil {
				return false
			}
		}
		batch[queued].created, batch[queued].slot = e.created, e.slot
		if queued++; queued == statsBatch {
			count()
		}
		return true
	})
	if stopped == nil {
		count()
	}
	return stopped
}

// statsBatch is how many index entries a statistics walk gathers before it
// reads their slots.
const statsBatch = 64

// slotFilter is a filter that reads no record (application, status, duration;
// the range is the walk's), as domain.Filter.Matches reads those fields.
type slotFilter struct {
	name                 uint32
	byName               bool
	template             uint32
	byTemplate           bool
	statusMin, statusMax int64
	durationBounded      bool
	minDuration          time.Duration
	maxDuration          time.Duration
}

// slotFilterOf is f on slots, false when no stored message has f's name.
func (s *Store) slotFilterOf(f domain.Filter) (slotFilter, bool) {
	sf := slotFilter{statusMin: math.MinInt64, statusMax: math.MaxInt64,
		durationBounded: f.HasDurationBounds(), minDuration: math.MinInt64, maxDuration: math.MaxInt64}
	if f.Name != "" {
		name, ok := s.names.lookup(f.Name)
		if !ok {
			return sf, false
		}
		sf.name, sf.byName = name, true
	}
	if f.Route != "" {
		template, ok := s.templates.lookup(f.Route)
		if !ok {
			return sf, false
		}
		sf.template, sf.byTemplate = template, true
	}
	if f.StatusMin != 0 {
		sf.statusMin = int64(f.StatusMin)
	}
	if f.StatusMax != 0 {
		sf.statusMax = int64(f.StatusMax)
	}
	if f.MinDuration != nil {
		sf.minDuration = *f.MinDuration
	}
	if f.MaxDuration != nil {
		sf.maxDuration = *f.MaxDuration
	}
	return sf, true
}

func (f *slotFilter) admits(sl *slot) bool {
	if f.durationBounded && (!sl.hasDuration || sl.duration < f.minDuration || sl.duration > f.maxDuration) {
		return false
	}
	status := int64(sl.status)
	return (!f.byName || sl.name == f.name) && status >= f.statusMin && status <= f.statusMax
}

// statsPart is what one walk counted. A walk meets each bucket's messages one
// after the other, so each bucket's durations are one run of durations.
type statsPart struct {
	plan                 *statsPlan
	buckets              []domain.StatsBucket // Count and Status
	durationsFrom        []int                // where each bucket's run starts
	durationsTo          []int                // and ends
	durations            *[]int64             // microseconds, pooled
	names                []tally              // by interned name
	routes               routeTally
	templates            domain.RouteCounter // top_routes
	templateNames        *interner[string]   // the store's, read under its lock
	slotTemplates        *templateTable
	bucket               int   // the bucket of the last message counted
	bucketLo, bucketNext int64 // its start and the next one's
	touched              int64 // what loading slots ahead read, kept so that the loads are
}

type tally struct{ count, errors int64 }

// durationBuffers recycles the durations of finished requests: a day of a
// million messages is 8 MB of them, which requests in a row would otherwise
// allocate and leave to the collector each time.
var durationBuffers = sync.Pool{New: func() any { return new([]int64) }}

func newStatsPart(p *statsPlan, names, parts int) *statsPart {
	durations := durationBuffers.Get().(*[]int64)
	*durations = (*durations)[:0]
	return &statsPart{plan: p, buckets: make([]domain.StatsBucket, p.buckets),
		durationsFrom: make([]int, p.buckets), durationsTo: make([]int, p.buckets), durations: durations,
		names: make([]tally, names), routes: newRouteTally(parts), bucketLo: math.MaxInt64, bucketNext: math.MinInt64}
}

func (p *statsPart) release() {
	if p.durations != nil {
		durationBuffers.Put(p.durations)
		p.durations = nil
	}
}

// add counts message n, created at created (in the plan's range), of slot sl.
func (p *statsPart) add(created int64, n uint32, sl *slot) {
	if created < p.bucketLo || created >= p.bucketNext {
		p.bucket = int((created - p.plan.first) / p.plan.width)
		p.bucketLo = p.plan.first + int64(p.bucket)*p.plan.width
		p.bucketNext = p.bucketLo + p.plan.width
		p.durationsFrom[p.bucket] = len(*p.durations)
		p.durationsTo[p.bucket] = len(*p.durations)
	}
	b := &p.buckets[p.bucket]
	b.Count++
	b.Status.Add(int(sl.status))
	if sl.hasDuration {
		*p.durations = append(*p.durations, int64(sl.duration/time.Microsecond))
		p.durationsTo[p.bucket] = len(*p.durations)
	}
	isError := domain.IsError(int(sl.status))
	name := &p.names[sl.name]
	name.count++
	if isError {
		name.errors++
	}
	p.routes.add(sl.route, n, isError)
	if p.slotTemplates == nil {
		return
	}
	if template := p.slotTemplates.at(n); template != 0 {
		p.templates.Add(p.templateNames.value(template), isError, sl.duration, sl.hasDuration)
	}
}

// routeTally counts messages by route hash, holding at most limit counters:
// when a new route finds it full, only the keep most counted stay, as
// domain.StatsBuilder does with paths. Its table is open addressing on the
// hash's low bits, which a keyed hash spreads evenly: cheaper than a map for
// a walk that meets a new route on most messages.
type routeTally struct {
	table       []int32 // 1 + the route's counter in counts, 0 for none
	counts      []routeCount
	limit, keep int
}

type routeCount struct {
	route         uint64
	count, errors int64
	slot          uint32 // a message of the route, to read its text from
}

// newRouteTally shares the builder's bound among a request's parts.
func newRouteTally(parts int) routeTally {
	limit := 2 * domain.MaxRankedKeys / parts
	return routeTally{table: make([]int32, 1<<bits.Len(uint(2*limit))), // at most half full
		counts: make([]routeCount, 0, 1024), limit: limit, keep: domain.MaxRankedKeys / parts}
}

// at is where route's counter is, or would go, in the table.
func (t *routeTally) at(route uint64) *int32 {
	mask := uint64(len(t.table) - 1)
	for i := route & mask; ; i = (i + 1) & mask {
		if c := t.table[i]; c == 0 || t.counts[c-1].route == route {
			return &t.table[i]
		}
	}
}

func (t *routeTally) add(route uint64, slot uint32, isError bool) {
	at := t.at(route)
	if *at == 0 {
		if len(t.counts) >= t.limit {
			t.prune()
			at = t.at(route)
		}
		t.counts = append(t.counts, routeCount{route: route, slot: slot})
		*at = int32(len(t.counts))
	}
	c := &t.counts[*at-1]
	c.count++
	if isError {
		c.errors++
	}
}

// grow makes room in the table for n routes, keeping it at most half full.
func (t *routeTally) grow(n int) {
	t.table = make([]int32, 1<<bits.Len(uint(2*n)))
	for i, c := range t.counts {
		*t.at(c.route) = int32(i + 1)
	}
}

// prune keeps the keep most counted routes: those counted more often than
// the keep-th, then, of those counted as often, the first met. Most routes
// have been counted a few times, so a histogram of small counts finds the
// keep-th; only when it is past the histogram are the routes ordered.
func (t *routeTally) prune() {
	const small = 64
	var histogram [small]int
	for _, c := range t.counts {
		histogram[min(c.count, small-1)]++
	}
	above, least := 0, int64(small-1)
	for ; least > 0 && above+histogram[least] < t.keep; least-- {
		above += histogram[least]
	}
	if least == small-1 { // rare: the keep-th was counted small-1 times or more
		slices.SortFunc(t.counts, func(a, b routeCount) int {
			if c := cmp.Compare(b.count, a.count); c != 0 {
				return c
			}
			return cmp.Compare(a.route, b.route)
		})
		t.counts = t.counts[:t.keep]
	} else {
		ties := t.keep - above
		kept := t.counts[:0]
		for _, c := range t.counts {
			if c.count > least || (c.count == least && ties > 0) {
				if c.count == least {
					ties--
				}
				kept = append(kept, c)
			}
		}
		t.counts = kept
	}
	clear(t.table)
	for i, c := range t.counts {
		*t.at(c.route) = int32(i + 1)
	}
}

// mergeStats adds the parts up into q's statistics.
func (s *Store) mergeStats(q domain.StatsQuery, parts []*statsPart) domain.Stats {
	stats := domain.NewStats(q)
	var joined []int64
	for i := range stats.Buckets {
		b := &stats.Buckets[i]
		var run []int64
		for _, part := range parts {
			pb := part.buckets[i]
			b.Count += pb.Count
			for c := range b.Status {
				b.Status[c] += pb.Status[c]
			}
			if r := (*part.durations)[part.durationsFrom[i]:part.durationsTo[i]]; len(run) == 0 {
				run = r
			} else if len(r) > 0 { // not when spans start at a bucket's start
				joined = append(append(joined[:0], run...), r...)
				run = joined
			}
		}
		b.Duration = domain.SummariseMicros(run)
		stats.Total.Count += b.Count
		for c := range b.Status {
			stats.Total.Status[c] += b.Status[c]
		}
	}
	all := *parts[0].durations
	for _, part := range parts[1:] {
		all = append(all, *part.durations...)
	}
	*parts[0].durations = all // so that the pool gets the grown buffer
	stats.Total.Duration = domain.SummariseMicros(all)
	stats.TopNames = s.topNames(parts)
	stats.TopPaths = s.topRoutes(parts)
	for _, part := range parts[1:] {
		parts[0].templates.Merge(&part.templates)
	}
	stats.TopRoutes = parts[0].templates.Top(domain.TopRoutes)
	return stats
}

// topNames ranks the applications as domain.Top does.
func (s *Store) topNames(parts []*statsPart) []domain.KeyCount {
	names := []domain.KeyCount{}
	for n := range parts[0].names {
		var kc domain.KeyCount
		for _, part := range parts {
			kc.Count += part.names[n].count
			kc.Errors += part.names[n].errors
		}
		if kc.Count > 0 {
			kc.Key = s.names.value(uint32(n))
			names = append(names, kc)
		}
	}
	slices.SortFunc(names, domain.CompareKeyCounts)
	return names[:min(domain.TopNames, len(names))]
}

// topRoutes ranks the routes as domain.Top ranks paths: count descending, then
// text. Only routes counted as often as the TopPaths-th have their text read.
func (s *Store) topRoutes(parts []*statsPart) []domain.KeyCount {
	merged := &parts[0].routes
	for _, part := range parts[1:] {
		if len(part.routes.counts) > 0 && len(merged.table) < 2*(len(merged.counts)+len(part.routes.counts)) {
			merged.grow(len(merged.counts) + len(part.routes.counts))
		}
		for _, c := range part.routes.counts {
			if at := merged.at(c.route); *at != 0 {
				merged.counts[*at-1].count += c.count
				merged.counts[*at-1].errors += c.errors
			} else {
				merged.counts = append(merged.counts, c)
				*at = int32(len(merged.counts))
			}
		}
	}
	// The TopPaths-th highest count, 0 while fewer routes were counted.
	var best []int64
	for _, c := range merged.counts {
		if len(best) == domain.TopPaths && c.count <= best[len(best)-1] {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, c.count, func(have, want int64) int {
			if have >= want {
				return -1
			}
			return 1
		})
		best = slices.Insert(best, at, c.count)
		best = best[:min(len(best), domain.TopPaths)]
	}
	var least int64
	if len(best) == domain.TopPaths {
		least = best[len(best)-1]
	}
	ranked := []domain.KeyCount{}
	for _, c := range merged.counts {
		if c.count >= least {
			// A view of the record while the lock is held; copied below.
			ranked = append(ranked, domain.KeyCount{Key: domain.RouteOf(recordPath(s.record(c.slot))),
				Count: c.count, Errors: c.errors})
		}
	}
	slices.SortFunc(ranked, domain.CompareKeyCounts)
	ranked = ranked[:min(domain.TopPaths, len(ranked))]
	for i := range ranked {
		ranked[i].Key = strings.Clone(ranked[i].Key)
	}
	return ranked
}
