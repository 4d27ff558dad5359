package statsengine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// count carries out d, a plan decide made whole, and tells what it read.
func (e *Engine) count(ctx context.Context, d decision) (stats.Stats, Trace, error) {
	if d.answer != nil {
		return *d.answer, Trace{}, nil
	}
	tr := Trace{Plan: d.plan, Costs: d.costs}
	var st stats.Stats
	var err error
	switch d.plan {
	case PlanRollups:
		st, err = e.countRollups(ctx, d, &tr)
	case PlanStream:
		err = e.stream(ctx, d.q.Scope, d.filter, d.now, &tr, d.stream.Add)
		st = d.stream.Stats()
	case PlanAggregate:
		st, err = e.agg.AggregateStats(ctx, d.q, d.now)
	case PlanStore:
		st, err = e.store.CountInto(ctx, d.q, d.filter, d.now, d.stream)
	}
	if err != nil {
		return stats.Stats{}, tr, err
	}
	if d.rollupsOnly {
		st.RollupsOnlyBefore = d.rollupsOnlyBefore
	}
	return st, tr, nil
}

// countRollups is PlanRollups into d's builder: the hours, then the
// messages of the minutes no rollup stood for.
func (e *Engine) countRollups(ctx context.Context, d decision, tr *Trace) (stats.Stats, error) {
	h, err := e.countHours(ctx, d, tr)
	if err != nil {
		return stats.Stats{}, err
	}
	if err := h.streamRefused(ctx, d.filter, d.now); err != nil {
		return stats.Stats{}, err
	}
	return d.rollups.Stats(), nil
}

// countHours counts into d's rollup builder what the rollups answer of its
// query: the range before the source's RollupsFrom from the messages, each
// hour from the cache or the minute rollups. The minutes no rollup stood
// for are left in the counter's refused.
func (e *Engine) countHours(ctx context.Context, d decision, tr *Trace) (*hourCounter, error) {
	q, now, facts, b := d.q, d.now, d.facts, d.rollups
	if d.filter.From.Before(facts.rollupsFrom) {
		before := d.filter
		before.To = earliest(before.To, facts.rollupsFrom)
		if err := e.stream(ctx, q.Scope, before, now, tr, b.Add); err != nil {
			return nil, err
		}
	}
	h := &hourCounter{e: e, q: q, now: now, b: b, tr: tr, width: min(q.Interval.Width, time.Hour), refused: map[minuteOf]bool{}}
	// Only the hours that hold messages (RollupHours) are read; those not
	// counted from the cache in runs of consecutive hours, one read each.
	var run []*hourPart
	for _, hour := range facts.hours {
		if h.fromCache(hour.start, hour.end, hour.version) {
			continue
		}
		if len(run) > 0 && !run[len(run)-1].end.Equal(hour.start) {
			if err := h.read(ctx, run); err != nil {
				return nil, err
			}
			run = run[:0]
		}
		run = append(run, h.part(hour.start, hour.end, hour.version))
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

// stream adds the samples of scope's messages readable at now that pass f.
func (e *Engine) stream(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, tr *Trace, add func(stats.Sample)) error {
	return e.samples.StreamSamples(ctx, scope, f, now, func(s stats.Sample) error {
		tr.MessagesStreamed++
		add(s)
		return nil
	})
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
