package statsengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// Sources are what a store gives the engine: its messages' samples always,
// its rollups and its own aggregation when it has them.
type Sources struct {
	Samples    ports.SampleStreamer
	Rollups    ports.RollupSource    // nil: the store keeps no rollups
	Aggregator ports.StatsAggregator // nil: the store cannot count by itself
	// RollupsOutliveMessages: Rollups yields the rollups of minutes whose
	// messages were purged (ports.RollupKeeper), so the engine counts the
	// part of a query before its RollupsOnlyBefore from them.
	RollupsOutliveMessages bool
}

// Config configures an engine. Its zero value takes the defaults.
type Config struct {
	// Costs are the plans' costs; zero: DefaultCosts.
	Costs Costs
	// CacheBytes bounds the whole hours kept between calls; zero:
	// DefaultCacheBytes, negative: none kept.
	CacheBytes int
	// Probe tells a plan's choice what a query's range holds; nil: the
	// source's RollupHours.
	Probe Probe
	// Plan, when set, is taken for every query it can answer, whatever the
	// costs: for tests and benchmarks that hold one plan to the reference.
	Plan Plan
}

// Engine answers ports.MessageReader.Stats from a store's Sources. It is
// safe for concurrent use.
type Engine struct {
	samples  ports.SampleStreamer
	rollups  ports.RollupSource
	outlive  bool // Sources.RollupsOutliveMessages
	agg      ports.StatsAggregator
	costs    Costs
	probe    Probe
	plan     Plan
	hours    *hourCache
	rankings *rankingsCache
}

// New returns the engine of src; src.Samples is required.
func New(src Sources, cfg Config) (*Engine, error) {
	if src.Samples == nil {
		return nil, errors.New("statsengine: a store must stream its samples")
	}
	limit := cfg.CacheBytes
	if limit == 0 {
		limit = DefaultCacheBytes
	}
	e := &Engine{samples: src.Samples, rollups: src.Rollups, outlive: src.RollupsOutliveMessages && src.Rollups != nil, agg: src.Aggregator,
		costs: cfg.Costs.withDefaults(), probe: cfg.Probe, plan: cfg.Plan, hours: newHourCache(limit), rankings: newRankingsCache()}
	if e.probe == nil {
		e.probe = rollupProbe{e}
	}
	return e, nil
}

// Stats answers q at now as ports.MessageReader.Stats must, by the plan of
// least estimated cost (Costs.choose) or the one Config.Plan pins, and tells
// what it read. A query with a part before its RollupsOnlyBefore is counted
// from the rollups (PlanRollups), that part from them alone, when the
// source keeps them past their messages; otherwise that part counts only
// the messages still readable, as without it.
func (e *Engine) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, Trace, error) {
	var tr Trace
	if err := ctx.Err(); err != nil {
		return stats.Stats{}, tr, fmt.Errorf("statistics: %w", err)
	}
	rollupsOnlyBefore, rollupsOnly := q.RollupsOnlyPart()
	if rollupsOnly = rollupsOnly && e.outlive && q.RollupsAnswer(); !rollupsOnly {
		q.RollupsOnlyBefore = time.Time{}
	}
	f := q.Filter
	f.From, f.To = q.CountedRange()
	if !f.From.Before(f.To) {
		return stats.New(q), tr, nil
	}
	facts, err := e.probe.Probe(ctx, q, now)
	if err != nil {
		return stats.Stats{}, tr, err
	}
	c := e.costs.choose(q, facts, e.rollups != nil, e.agg != nil)
	if _, possible := c.costs[e.plan]; possible && (e.plan != PlanRollups || q.RollupsAnswer()) {
		c.plan = e.plan
	}
	if rollupsOnly {
		c.plan = PlanRollups // the messages of that part are gone
	}
	tr.Plan, tr.Costs = c.plan, c.costs
	var st stats.Stats
	switch c.plan {
	case PlanAggregate:
		st, err = e.agg.AggregateStats(ctx, q, now)
	case PlanRollups:
		st, err = e.countRollups(ctx, q, f, now, facts, &tr)
	default:
		b := stats.NewBuilder(q)
		err = e.stream(ctx, q.Scope, f, now, &tr, b.Add)
		st = b.Stats()
	}
	if err != nil {
		return stats.Stats{}, tr, err
	}
	if rollupsOnly {
		st.RollupsOnlyBefore = rollupsOnlyBefore
	}
	return st, tr, nil
}

// stream adds the samples of scope's messages readable at now that pass f.
func (e *Engine) stream(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, tr *Trace, add func(stats.Sample)) error {
	return e.samples.StreamSamples(ctx, scope, f, now, func(s stats.Sample) error {
		tr.MessagesStreamed++
		add(s)
		return nil
	})
}

// countRollups is PlanRollups: f is q's filter over its counted range.
func (e *Engine) countRollups(ctx context.Context, q stats.Query, f domain.Filter, now time.Time, facts Facts, tr *Trace) (stats.Stats, error) {
	b := stats.NewRollupBuilder(q, now)
	h, err := e.countHours(ctx, q, f, now, facts, b, tr)
	if err != nil {
		return stats.Stats{}, err
	}
	if err := h.streamRefused(ctx, f, now); err != nil {
		return stats.Stats{}, err
	}
	return b.Stats(), nil
}

// Minute is one application's minute of a scope.
type Minute struct {
	Start time.Time
	Name  string
}

// CountRollups counts into b, a stats.RollupBuilder of a query over q's
// range at now, every message q counts (a query the rollups answer:
// stats.Query.RollupsAnswer) but those of the minutes it returns, oldest
// first, which no rollup stood for at now: the caller counts those from
// their messages. Hours come from the cache and are kept as Stats keeps
// them, so that a store's own plan that starts from the rollups (the
// SQLite store's rollups less the messages lacking a word) shares the
// engine's cache instead of keeping another. tr is told what was read.
func (e *Engine) CountRollups(ctx context.Context, q stats.Query, now time.Time, b *stats.RollupBuilder, tr *Trace) ([]Minute, error) {
	if e.rollups == nil || !q.RollupsAnswer() {
		return nil, errors.New("statsengine: CountRollups of a query the rollups do not answer")
	}
	f := q.Filter
	f.From, f.To = q.CountedRange()
	if !f.From.Before(f.To) {
		return nil, nil
	}
	facts, err := rollupProbe{e}.Probe(ctx, q, now)
	if err != nil {
		return nil, err
	}
	h, err := e.countHours(ctx, q, f, now, facts, b, tr)
	if err != nil {
		return nil, err
	}
	refused := make([]Minute, 0, len(h.refused))
	for m := range h.refused {
		refused = append(refused, Minute{time.Unix(m.start, 0).UTC(), m.name})
	}
	slices.SortFunc(refused, func(a, b Minute) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Name, b.Name))
	})
	return refused, nil
}

// countHours counts into b what the rollups answer of q, whose filter over
// its counted range is f: the range before the source's RollupsFrom from
// the messages, each hour from the cache or the minute rollups. The
// minutes no rollup stood for are left in the counter's refused.
func (e *Engine) countHours(ctx context.Context, q stats.Query, f domain.Filter, now time.Time, facts Facts, b *stats.RollupBuilder, tr *Trace) (*hourCounter, error) {
	if facts.versions == nil { // another probe's facts: read what the plan uses
		own, err := rollupProbe{e}.Probe(ctx, q, now)
		if err != nil {
			return nil, err
		}
		facts.rollupsFrom, facts.versions = own.rollupsFrom, own.versions
	}
	if f.From.Before(facts.rollupsFrom) {
		before := f
		before.To = earliest(f.To, facts.rollupsFrom)
		if err := e.stream(ctx, q.Scope, before, now, tr, b.Add); err != nil {
			return nil, err
		}
		f.From = earliest(f.To, facts.rollupsFrom)
	}
	h := &hourCounter{e: e, q: q, now: now, b: b, tr: tr, width: min(q.Interval.Width, time.Hour), refused: map[minuteOf]bool{}}
	// Only the hours that hold messages (RollupHours) are read; those not
	// counted from the cache in runs of consecutive hours, one read each.
	var run []*hourPart
	for _, unix := range slices.Sorted(maps.Keys(facts.versions)) {
		hour := time.Unix(unix, 0).UTC()
		start, end := latest(hour, f.From), earliest(hour.Add(time.Hour), f.To)
		if !start.Before(end) || h.fromCache(start, end, facts.versions[unix]) {
			continue
		}
		if len(run) > 0 && !run[len(run)-1].end.Equal(start) {
			if err := h.read(ctx, run); err != nil {
				return nil, err
			}
			run = run[:0]
		}
		run = append(run, h.part(start, end, facts.versions[unix]))
	}
	if len(run) > 0 {
		if err := h.read(ctx, run); err != nil {
			return nil, err
		}
	}
	if len(h.kept) > 0 {
		b.AddKeptRankings(e.rankings.merged(h.kept))
	}
	return h, nil
}

// minuteOf names one application's minute.
type minuteOf struct {
	start int64 // Unix seconds
	name  string
}

// hourCounter counts a query's hours into its builder: each from the cache,
// or with the consecutive hours not in it from one read of minute rollups.
type hourCounter struct {
	e     *Engine
	q     stats.Query
	now   time.Time
	b     *stats.RollupBuilder
	tr    *Trace
	width time.Duration // of the parts an hour is kept in
	// refused are the minutes no rollup stood for: streamed at the end.
	refused map[minuteOf]bool
	// kept are the spans counted from the cache, whose rankings are added
	// at the end, merged once for them all.
	kept []keptCounted
}

// fromCache counts [start, end) of an hour from the cache, and reports
// true, when the span is kept at version and can stand at now.
func (h *hourCounter) fromCache(start, end time.Time, version uint64) bool {
	key, keepable := keptSpan(h.q, start, end)
	if !keepable {
		return false
	}
	kept := h.e.hours.get(key, version)
	if kept == nil || !kept.countSeries(h.b, start, h.width) {
		return false
	}
	h.tr.KeptHours++
	h.kept = append(h.kept, keptCounted{key, kept})
	return true
}

// hourPart is [start, end) of one hour as read from minute rollups, to keep
// when it starts and ends on its parts (a whole hour, the default range's
// first) and every minute could stand for itself.
type hourPart struct {
	start, end time.Time
	key        spanKey
	keepable   bool
	kept       *keptHour
}

func (h *hourCounter) part(start, end time.Time, version uint64) *hourPart {
	p := &hourPart{start: start, end: end, kept: &keptHour{version: version}}
	if p.key, p.keepable = keptSpan(h.q, start, end); p.keepable {
		p.kept.parts = make([]stats.Rollup, end.Sub(start)/h.width)
	}
	return p
}

// read counts run, consecutive parts of hours, from the minute rollups of
// one read, and keeps the parts that can be kept.
func (h *hourCounter) read(ctx context.Context, run []*hourPart) error {
	name := h.q.Filter.Name
	first, end := run[0].start, run[len(run)-1].end
	err := h.e.readRollups(ctx, h.q.Scope, name, first, end, h.now, h.tr, func(minute time.Time, app string, r *stats.Rollup) error {
		if name != "" && app != name {
			return nil // another application's: nothing this view counts
		}
		i := slices.IndexFunc(run, func(p *hourPart) bool { return minute.Before(p.end) })
		if i < 0 || minute.Before(run[i].start.Truncate(time.Minute)) {
			return fmt.Errorf("statistics: the store gave a rollup of %s for [%s, %s)", domain.FormatTime(minute),
				domain.FormatTime(first), domain.FormatTime(end))
		}
		p := run[i]
		if r == nil || !h.b.AddSeries(minute, minute.Add(time.Minute), app, r) {
			p.keepable = false
			h.refused[minuteOf{minute.Unix(), app}] = true
			h.tr.Refused++
			return nil
		}
		h.tr.Rollups++
		if p.keepable {
			p.kept.parts[minute.Sub(p.start)/h.width].MergeSeries(r)
			p.kept.names.AddCounts(app, r.Count, r.Errors())
		}
		p.kept.rankings.Paths.Merge(&r.Paths)
		p.kept.rankings.Routes.Merge(&r.Routes)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range run {
		h.b.AddRankings(&p.kept.rankings)
		if p.keepable {
			h.e.hours.put(p.key, p.kept)
		}
	}
	return nil
}

// readRollups is the source's Rollups, traced where the source can tell
// what it recounted.
func (e *Engine) readRollups(ctx context.Context, scope domain.Scope, name string, from, to, now time.Time, tr *Trace,
	yield func(time.Time, string, *stats.Rollup) error) error {
	if m, ok := e.rollups.(*Marked); ok {
		return m.rollups(ctx, scope, name, from, to, now, tr, true, yield)
	}
	return e.rollups.Rollups(ctx, scope, name, from, to, now, yield)
}

// streamRefused streams the messages of the refused minutes, one request
// per run of consecutive minutes (of any application), keeping those of the
// refused applications: usually the range's newest minute or two.
func (h *hourCounter) streamRefused(ctx context.Context, f domain.Filter, now time.Time) error {
	if len(h.refused) == 0 {
		return nil
	}
	h.tr.MinutesStreamed += len(h.refused)
	starts := map[int64][]string{}
	for m := range h.refused {
		starts[m.start] = append(starts[m.start], m.name)
	}
	sorted := slices.Sorted(maps.Keys(starts))
	for i := 0; i < len(sorted); {
		j, names := i+1, slices.Clone(starts[sorted[i]])
		for j < len(sorted) && sorted[j] == sorted[j-1]+60 {
			names = append(names, starts[sorted[j]]...)
			j++
		}
		run := f
		run.From = latest(f.From, time.Unix(sorted[i], 0).UTC())
		run.To = earliest(f.To, time.Unix(sorted[j-1]+60, 0).UTC())
		if slices.Min(names) == slices.Max(names) {
			run.Name = names[0] // one application: the store reads only its messages
		}
		err := h.e.stream(ctx, h.q.Scope, run, now, h.tr, func(s stats.Sample) {
			if h.refused[minuteOf{s.CreatedAt.Unix() - mod(s.CreatedAt.Unix(), 60), s.Name}] {
				h.b.Add(s)
			}
		})
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// mod is a modulo that is never negative (times before 1970).
func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
