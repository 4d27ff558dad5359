package stats

import (
	"slices"
	"time"
)

// RollupBuilder computes the statistics of a query that RollupsAnswer
// from the rollups of the scope, and from the messages no rollup can stand
// for. Its answer is Builder's over the messages readable at now: the
// same counts and status classes; the same rankings while the range holds at
// most 2·MaxRankedKeys distinct paths and names (KeyCounter); the same
// percentiles where a bucket, or the range, holds at most ExactDurations
// durations, and within 1 % of them past that (DurationDigest).
//
// A store answers such a query at now in three steps:
//
//  1. AddRollup every rollup of the scope (of Filter.Name alone when set)
//     whose minute meets CountedRange.
//  2. AddRollup refuses a rollup that cannot stand for its minute, and the
//     store then streams that minute's messages of that application, those
//     readable at now that pass the filter, through Add. It refuses:
//     - a minute only partly in the counted range: its edges, since `to`
//     defaults to now, `from` given alone is kept as given, and the service
//     narrows the filter's from to retention;
//     - a rollup some message of which is not visible at now: written in the
//     last visibility delay, whatever its created_at (usually the newest
//     minute or two; a backfill of old created_at refuses the minutes it
//     touched until they are visible);
//     - a rollup some message of which has expired at now: the oldest minute
//     of retention, or older minutes a store has not dropped yet.
//  3. Stats.
//
// A store may instead rank from wider spans: when every rollup of a span (an
// hour of a 15 m view) Accepts, AddSeries each and AddRankings their merge.
// It may keep that span for the next query, while no rollup of it grows, as
// the parts of it in each bucket (MergeSeries of the applications' rollups),
// its applications and their merge: AddBuckets each part, AddNames and
// AddRankings.
//
// Rollups are never subtracted from: a minute is counted from its rollup or
// from its messages, whole. A minute without a rollup holds no message.
type RollupBuilder struct {
	q            Query
	now          time.Time
	from, to     time.Time // CountedRange
	stats        Stats
	durations    []DurationDigest // per bucket
	paths, names KeyCounter
	routes       RouteCounter
	// keptPaths are paths AddKeptRankings counted without copying them:
	// Stats ranks them with paths (KeyCounter.TopWith); Merge and Subtract
	// merge them into paths first (settle).
	keptPaths *KeyCounter
}

// NewRollupBuilder returns an empty builder of q's statistics at now.
func NewRollupBuilder(q Query, now time.Time) *RollupBuilder {
	s := New(q)
	from, to := q.CountedRange()
	return &RollupBuilder{q: q, now: now, from: from, to: to, stats: s,
		durations: make([]DurationDigest, len(s.Buckets))}
}

// AddRollup counts r, the rollup of application name over [start, end), and
// reports true; or counts nothing and reports false when r cannot stand for
// that span at now (Accepts). The store then counts the span's messages of
// name through Add instead. A rollup of another application than the
// filter's holds nothing to count: true.
func (b *RollupBuilder) AddRollup(start, end time.Time, name string, r *Rollup) bool {
	if !b.AddSeries(start, end, name, r) {
		return false
	}
	if b.counts(name, r) {
		b.AddRankings(r)
	}
	return true
}

// Accepts reports whether r, a rollup of [start, end), can stand for that
// span at now: the span is wholly in the counted range and in one bucket, and
// every message r counts is readable at now, or the span ends by the query's
// RollupsOnlyBefore and every message was visible (the rollup outlives them).
func (b *RollupBuilder) Accepts(start, end time.Time, r *Rollup) bool {
	if !start.Before(end) || start.Before(b.from) || end.After(b.to) {
		return false
	}
	rollupsOnly := !end.After(b.q.RollupsOnlyBefore) && !b.now.Before(r.AllVisibleAt)
	if !rollupsOnly && !r.ReadableAt(b.now) {
		return false
	}
	return b.q.BucketIndex(start) == b.q.BucketIndex(end.Add(-time.Nanosecond))
}

// counts reports whether r holds messages the query counts.
func (b *RollupBuilder) counts(name string, r *Rollup) bool {
	return (b.q.Filter.Name == "" || name == b.q.Filter.Name) && r.Count > 0
}

// AddSeries counts r as AddRollup does, and reports the same, but for its
// paths and routes: the store counts those through AddRankings, from the
// merge of the rollups of a span wider than a bucket (an hour of a 15 m
// view), all of them counted through AddSeries. Ranking from fewer, wider
// rollups merges fewer keys (paths that carry ids make nearly every path a
// key of its own).
func (b *RollupBuilder) AddSeries(start, end time.Time, name string, r *Rollup) bool {
	if !b.counts(name, r) {
		return true
	}
	if !b.AddBuckets(start, end, r) {
		return false
	}
	b.names.add(name, r.Count, r.Errors(), 0, true)
	return true
}

// AddBuckets counts r's messages, status classes and durations in the
// bucket of [start, end), and reports true; or counts nothing and reports
// false where AddRollup would. r may merge the rollups of several
// applications of the view over that span: the store counts their
// applications through AddNames, their paths and routes through AddRankings.
func (b *RollupBuilder) AddBuckets(start, end time.Time, r *Rollup) bool {
	if !b.Accepts(start, end, r) {
		return false
	}
	i := b.q.BucketIndex(start)
	bucket := &b.stats.Buckets[i]
	bucket.Count += r.Count
	bucket.Dropped += r.Dropped
	for c := range bucket.Status {
		bucket.Status[c] += r.Status[c]
	}
	b.durations[i].Merge(&r.Durations)
	return true
}

// AddRankings counts the paths and routes of r, which it leaves as it was:
// the rollup of a span whose every rollup AddSeries counted, or one of them.
func (b *RollupBuilder) AddRankings(r *Rollup) {
	b.paths.Merge(&r.Paths)
	b.routes.Merge(&r.Routes)
}

// AddKeptRankings is AddRankings of a rollup no one changes from then on
// (a store's cache of a span's rankings): its paths are ranked with the
// builder's own when Stats asks for the top paths, not merged into them.
// Merging a day's near-unique paths into an empty counter in every call
// was most of the CPU of a view kept whole hours answer (docs/benchmarks.md,
// "Ranking without merging every path").
func (b *RollupBuilder) AddKeptRankings(r *Rollup) {
	b.settle()
	b.keptPaths = &r.Paths
	b.routes.Merge(&r.Routes)
}

// settle merges the kept paths into the builder's own.
func (b *RollupBuilder) settle() {
	if b.keptPaths != nil {
		b.paths.Merge(b.keptPaths)
		b.keptPaths = nil
	}
}

// AddNames counts names, the messages and errors per application of spans
// counted through AddBuckets.
func (b *RollupBuilder) AddNames(names *KeyCounter) { b.names.Merge(names) }

// Add counts one message that passed the query's filter and is readable at
// now, of a span no rollup stands for. A message outside the range is
// ignored, as Builder ignores it.
func (b *RollupBuilder) Add(m Sample) {
	i, ok := b.stats.countSample(b.q, m)
	if !ok {
		return
	}
	if m.HasDuration {
		b.durations[i].Add(m.Duration)
	}
	isError := IsError(m.StatusCode)
	b.paths.Add(PathOf(m.Path), isError)
	b.names.Add(m.Name, isError)
	countRoute(&b.routes, m)
}

// Merge adds what o counted, o being a builder of the same query at the same
// now: so that a store may count parts of the range at once, on as many
// processors, and add the parts up.
func (b *RollupBuilder) Merge(o *RollupBuilder) {
	b.settle()
	o.settle() // the same counts, in o's own counter
	for i := range b.stats.Buckets {
		bucket, other := &b.stats.Buckets[i], &o.stats.Buckets[i]
		bucket.Count += other.Count
		bucket.Dropped += other.Dropped
		for c := range bucket.Status {
			bucket.Status[c] += other.Status[c]
		}
		b.durations[i].Merge(&o.durations[i])
	}
	b.paths.Merge(&o.paths)
	b.names.Merge(&o.names)
	b.routes.Merge(&o.routes)
}

// Subtract takes what o counted, a part of what b counted (a builder of the
// same query at the same now), out of b, and reports true: b then counts the
// rest as if only the rest had been added, with the same bounds. So a store
// may count the messages of a q that nearly all of a range's messages match
// as the range's rollups less the few messages that do not. It reports false
// when the rest cannot be told so (DurationDigest.Subtract,
// RouteCounter.Subtract): b is then spoiled, and the store counts the rest
// another way.
func (b *RollupBuilder) Subtract(o *RollupBuilder) bool {
	b.settle()
	o.settle()
	for i := range b.stats.Buckets {
		bucket, other := &b.stats.Buckets[i], &o.stats.Buckets[i]
		if bucket.Count < other.Count || !b.durations[i].Subtract(&o.durations[i]) {
			return false
		}
		bucket.Count -= other.Count
		if bucket.Dropped -= other.Dropped; bucket.Dropped < 0 {
			return false
		}
		for c := range bucket.Status {
			if bucket.Status[c] -= other.Status[c]; bucket.Status[c] < 0 {
				return false
			}
		}
	}
	return b.paths.Subtract(&o.paths) && b.names.Subtract(&o.names) && b.routes.Subtract(&o.routes)
}

// Count is how many messages the builder has counted.
func (b *RollupBuilder) Count() int64 {
	var n int64
	for _, bucket := range b.stats.Buckets {
		n += bucket.Count
	}
	return n
}

// Stats returns the statistics of what was added.
func (b *RollupBuilder) Stats() Stats {
	s := b.stats
	s.Buckets = slices.Clone(s.Buckets)
	var all DurationDigest
	for i := range s.Buckets {
		s.Buckets[i].Duration = b.durations[i].Summary()
		all.Merge(&b.durations[i])
	}
	s.sumBuckets()
	s.Total.Duration = all.Summary()
	if b.keptPaths != nil {
		s.TopPaths = b.paths.TopWith(b.keptPaths, TopPaths)
	} else {
		s.TopPaths = b.paths.Top(TopPaths)
	}
	s.TopNames = b.names.Top(TopNames)
	s.TopRoutes = TopRouteStats(&b.routes, TopRoutes)
	return s
}
