package statsengine

import (
	"context"
	"math"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Plan names how the engine counts a query.
type Plan string

// The plans. Each gives stats.Builder's answer within the contract's bounds
// (stats.RollupBuilder's for PlanRollups, the store's for PlanAggregate).
const (
	// PlanRollups counts the source's minute rollups (whole hours from the
	// engine's cache when it holds them at their version) and streams the
	// messages of the minutes no rollup stands for, and of the range before
	// the source's RollupsFrom. Only for a query rollups answer
	// (stats.Query.RollupsAnswer).
	PlanRollups Plan = "rollups"
	// PlanAggregate asks the store to count (ports.StatsAggregator).
	PlanAggregate Plan = "aggregate"
	// PlanStream streams every message the query counts into stats.Builder.
	PlanStream Plan = "stream"
	// PlanStore is the store's own plan (Sources.Store), for the queries it
	// takes, whatever the costs.
	PlanStore Plan = "store"
)

// A StorePlan is a store's own plan for some queries, which it answers
// better than the engine's plans can (the SQLite store's q of one word, from
// its word index). The engine asks it while it decides, so that one plan
// reads the query's facts for every plan.
type StorePlan interface {
	// Takes reports whether the plan counts q; it reads nothing.
	Takes(q stats.Query) bool
	// CountInto counts q, a query it takes, at now: f is q's filter over
	// its counted range, which is not empty, and b the stats.Builder of q
	// the engine made for it. The answer is b's, or one within the
	// contract's bounds of it.
	CountInto(ctx context.Context, q stats.Query, f domain.Filter, now time.Time, b *stats.Builder) (stats.Stats, error)
}

// Costs are what the plans cost, in any one unit (the defaults count
// microseconds of CPU of this machine, store and service together); the
// engine takes the plan of least estimated cost. They are configuration: a
// store whose reads cost otherwise sets its own.
type Costs struct {
	// StreamedMessage is the cost of one message streamed and counted.
	StreamedMessage float64
	// AggregatedMessage is the cost of one message the store aggregates.
	AggregatedMessage float64
	// Rollup is the cost of one minute rollup read, decoded and counted.
	Rollup float64
	// KeptHour is the cost of one hour counted from the engine's cache.
	KeptHour float64
}

// DefaultCosts: streaming a message costs Elasticsearch and the service
// about 3 µs, aggregating it about 0.6 µs (docs/benchmarks.md); a minute
// rollup of the bench's traffic (about 70 messages of one application)
// about 40 µs to read and merge; an hour from the cache about 100 µs.
var DefaultCosts = Costs{StreamedMessage: 3, AggregatedMessage: 0.6, Rollup: 40, KeptHour: 100}

func (c Costs) withDefaults() Costs {
	if c == (Costs{}) {
		return DefaultCosts
	}
	return c
}

// Facts are what a plan's choice knows of a query before reading it.
type Facts struct {
	// Messages is about how many messages the query's view holds in its
	// counted range (whatever the rest of its filter), or -1 when not known.
	Messages int64
	// Before is about how many of them lie before the source's RollupsFrom,
	// which every plan reads from the messages, or -1 when not known.
	Before int64
	// Rollups is about how many minute rollups PlanRollups would read, and
	// KeptHours how many hours it would count from the engine's cache.
	Rollups   int64
	KeptHours int

	// Read by the default probe, for PlanRollups: the hours meeting the
	// range from RollupsFrom on, clipped to it, oldest first.
	rollupsFrom time.Time
	hours       []hourSpan
}

// A Probe tells a plan's choice what a query's range holds. The default one
// asks the source's RollupHours (no probe of the backend, no clock); a test
// or a store with a better estimate injects its own (Config.Probe).
type Probe interface {
	Probe(ctx context.Context, q stats.Query, now time.Time) (Facts, error)
}

// choice is a plan and the estimated cost of each plan considered (+Inf:
// not possible, or not known).
type choice struct {
	plan  Plan
	costs map[Plan]float64
}

// choose is the plan of least cost among those possible for a query given
// facts: rollups for a query they answer (answers) when the source keeps them, the store's
// aggregation when it offers one, the stream always. With nothing known of
// the range, the cost per message decides between aggregating and
// streaming, and rollups are taken where possible. Nothing here reads a
// clock: the same facts give the same plan.
func (c Costs) choose(f Facts, answers, hasRollups, hasAggregator bool) choice {
	inf := math.Inf(1)
	perMessage := func(cost float64) float64 {
		if f.Messages < 0 {
			return inf
		}
		return float64(f.Messages) * cost
	}
	costs := map[Plan]float64{PlanStream: perMessage(c.StreamedMessage)}
	if hasAggregator {
		costs[PlanAggregate] = perMessage(c.AggregatedMessage)
	}
	if hasRollups && answers {
		rest := float64(f.KeptHours)*c.KeptHour + float64(f.Rollups)*c.Rollup
		switch {
		case f.Before == 0:
			costs[PlanRollups] = rest
		case f.Before > 0:
			costs[PlanRollups] = rest + float64(f.Before)*c.StreamedMessage
		case !hasAggregator:
			// Both plans stream the part before RollupsFrom: compare the rest.
			costs[PlanRollups] = rest
			if f.Messages >= 0 {
				costs[PlanStream] = float64(f.Messages) * c.StreamedMessage
			}
		default:
			costs[PlanRollups] = inf
		}
	}
	// Of equal costs, the plan that asks the store least: rollups (an empty
	// range reads nothing), then the store's aggregation.
	best := choice{plan: PlanStream, costs: costs}
	for _, p := range []Plan{PlanAggregate, PlanRollups} {
		if cost, ok := costs[p]; ok && cost <= costs[best.plan] {
			best.plan = p
		}
	}
	if !math.IsInf(costs[best.plan], 1) {
		return best
	}
	// Nothing known: by the cost per message, rollups where they answer.
	switch {
	case hasRollups && answers && f.Before == 0:
		best.plan = PlanRollups
	case hasAggregator && c.AggregatedMessage < c.StreamedMessage:
		best.plan = PlanAggregate
	default:
		best.plan = PlanStream
	}
	return best
}

// A decision is a query's plan made whole before anything is read: what to
// read, over which filter, from which hours, into which builder. The
// executor (Engine.count) carries it out without asking again.
type decision struct {
	q   stats.Query // RollupsOnlyBefore cleared unless counted so
	now time.Time
	// filter is q's filter over its counted range.
	filter domain.Filter
	choice
	facts Facts
	// rollupsOnly: the part before rollupsOnlyBefore is counted from the
	// rollups alone, and the answer says so.
	rollupsOnly       bool
	rollupsOnlyBefore time.Time
	// answer, when set, is the whole answer: nothing to read.
	answer *stats.Stats
	// The builder the plan feeds: rollups for PlanRollups, stream for
	// PlanStream and PlanStore; PlanAggregate has the store count.
	rollups *stats.RollupBuilder
	stream  *stats.Builder
}

// decide makes q's plan at now: the store's own plan when it takes q
// (PlanStore), else the one of least estimated cost (weigh). Either way
// the query's facts are read once, here, and the builder made last.
func (e *Engine) decide(ctx context.Context, q stats.Query, now time.Time) (decision, error) {
	d := decision{q: q, now: now, filter: q.Filter}
	before, rollupsOnly := q.RollupsOnlyPart()
	answers := q.RollupsAnswer()
	d.filter.From, d.filter.To = q.CountedRange()
	if !d.filter.From.Before(d.filter.To) {
		empty := stats.New(q)
		d.answer = &empty
		return d, nil
	}
	if e.store != nil && e.store.Takes(q) {
		d.plan = PlanStore // q as asked: the store's plan reads its RollupsOnlyBefore itself
	} else if err := e.weigh(ctx, &d, answers, before, rollupsOnly); err != nil {
		return decision{}, err
	}
	switch d.plan {
	case PlanRollups:
		d.rollups = stats.NewRollupBuilder(d.q, now)
	case PlanStream, PlanStore:
		d.stream = stats.NewBuilder(d.q)
	}
	return d, nil
}
