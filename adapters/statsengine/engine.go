package statsengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// Sources are what a store gives the engine: its messages' samples always,
// its rollups, its own aggregation and its own plan when it has them.
type Sources struct {
	Samples    ports.SampleStreamer
	Rollups    ports.RollupSource    // nil: the store keeps no rollups
	Aggregator ports.StatsAggregator // nil: the store cannot count by itself
	Store      StorePlan             // nil: the engine's plans count every query
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
	// source's RollupHours, which PlanRollups reads in any case.
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
	store    StorePlan
	costs    Costs
	probe    Probe // Config.Probe; nil: probeRollups alone
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
	e := &Engine{samples: src.Samples, rollups: src.Rollups, outlive: src.RollupsOutliveMessages && src.Rollups != nil, agg: src.Aggregator, store: src.Store,
		costs: cfg.Costs.withDefaults(), probe: cfg.Probe, plan: cfg.Plan, hours: newHourCache(limit), rankings: newRankingsCache()}
	return e, nil
}

// Stats answers q at now as ports.MessageReader.Stats must, and tells what
// it read: the plan is made whole first (decide), then carried out (count).
func (e *Engine) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, Trace, error) {
	if err := ctx.Err(); err != nil {
		return stats.Stats{}, Trace{}, fmt.Errorf("statistics: %w", err)
	}
	d, err := e.decide(ctx, q, now)
	if err != nil {
		return stats.Stats{}, Trace{}, err
	}
	return e.count(ctx, d)
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
	d := decision{q: q, now: now, filter: q.Filter, rollups: b}
	d.filter.From, d.filter.To = q.CountedRange()
	if !d.filter.From.Before(d.filter.To) {
		return nil, nil
	}
	var err error
	if d.facts, err = e.probeRollups(ctx, q, d.filter.From, d.filter.To); err != nil {
		return nil, err
	}
	h, err := e.countHours(ctx, d, tr)
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
