package statsengine

import (
	"context"
	"fmt"
	"math"
	"time"

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
)

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

	// Read by the default probe, for the plan to use again.
	rollupsFrom time.Time
	versions    map[int64]uint64 // of the hours meeting the range, by Unix second
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

// choose is the plan of least cost among those possible for q given facts:
// rollups for a query they answer when the source keeps them, the store's
// aggregation when it offers one, the stream always. With nothing known of
// the range, the cost per message decides between aggregating and
// streaming, and rollups are taken where possible. Nothing here reads a
// clock: the same facts give the same plan.
func (c Costs) choose(q stats.Query, f Facts, hasRollups, hasAggregator bool) choice {
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
	if hasRollups && q.RollupsAnswer() {
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
	case hasRollups && q.RollupsAnswer() && f.Before == 0:
		best.plan = PlanRollups
	case hasAggregator && c.AggregatedMessage < c.StreamedMessage:
		best.plan = PlanAggregate
	default:
		best.plan = PlanStream
	}
	return best
}

// rollupProbe is the default Probe: the source's hours, their versions
// against the engine's cache.
type rollupProbe struct{ e *Engine }

func (p rollupProbe) Probe(ctx context.Context, q stats.Query, now time.Time) (Facts, error) {
	f := Facts{Messages: -1, Before: -1}
	if p.e.rollups == nil || !q.RollupsAnswer() {
		return f, nil
	}
	from, to := q.CountedRange()
	rollupsFrom, err := p.e.rollups.RollupsFrom(ctx)
	if err != nil {
		return f, fmt.Errorf("statistics: %w", err)
	}
	f.rollupsFrom = rollupsFrom
	f.versions = map[int64]uint64{}
	// What lies before RollupsFrom has no rollups to tell of it: then how
	// many messages the range holds is not known.
	before := from.Before(rollupsFrom)
	if before {
		from = rollupsFrom
	} else {
		f.Before = 0
	}
	if !from.Before(to) {
		return f, nil
	}
	var messages int64
	err = p.e.rollups.RollupHours(ctx, q.Scope, q.Filter.Name, from, to, func(hour time.Time, version uint64, inHour, rollups int64) error {
		f.versions[hour.Unix()] = version
		start, end := latest(hour, from), earliest(hour.Add(time.Hour), to)
		if !start.Before(end) {
			return nil
		}
		share := float64(end.Sub(start)) / float64(time.Hour)
		if inHour < 0 || messages < 0 {
			messages = -1
		} else {
			messages += int64(math.Ceil(share * float64(inHour)))
		}
		if key, keepable := keptSpan(q, start, end); keepable && p.e.hours.holds(key, version) {
			f.KeptHours++
		} else {
			f.Rollups += int64(math.Ceil(share * float64(rollups)))
		}
		return nil
	})
	if err != nil {
		return Facts{}, fmt.Errorf("statistics: %w", err)
	}
	if !before {
		f.Messages = messages
	}
	return f, nil
}
