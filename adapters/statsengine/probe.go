package statsengine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
)

// weigh chooses d's plan among the engine's own, from what the probes
// tell of its range: the one of least estimated cost (Costs.choose) or the
// one Config.Plan pins, given whether the rollups answer d's query and the
// part before rollupsOnlyBefore its rollups alone count (rollupsOnly).
// That part is counted from the rollups (PlanRollups) when the source keeps
// them past their messages; otherwise it counts only the messages still
// readable, as without it.
func (e *Engine) weigh(ctx context.Context, d *decision, answers bool, rollupsOnlyBefore time.Time, rollupsOnly bool) error {
	if d.rollupsOnly = rollupsOnly && e.outlive && answers; d.rollupsOnly {
		d.rollupsOnlyBefore = rollupsOnlyBefore
	} else {
		d.q.RollupsOnlyBefore = time.Time{}
	}
	d.facts = Facts{Messages: -1, Before: -1}
	if e.rollups != nil && answers { // the hours PlanRollups reads, whichever probe
		var err error
		if d.facts, err = e.probeRollups(ctx, d.q, d.filter.From, d.filter.To); err != nil {
			return err
		}
	}
	if e.probe != nil {
		injected, err := e.probe.Probe(ctx, d.q, d.now)
		if err != nil {
			return err
		}
		injected.rollupsFrom, injected.hours = d.facts.rollupsFrom, d.facts.hours
		d.facts = injected
	}
	d.choice = e.costs.choose(d.facts, answers, e.rollups != nil, e.agg != nil)
	if _, possible := d.costs[e.plan]; possible && (e.plan != PlanRollups || answers) {
		d.plan = e.plan
	}
	if d.rollupsOnly {
		d.plan = PlanRollups // the messages of that part are gone
	}
	return nil
}

// probeRollups is the default probe: the source's hours meeting [from, to),
// q's counted range, their versions against the engine's cache.
func (e *Engine) probeRollups(ctx context.Context, q stats.Query, from, to time.Time) (Facts, error) {
	f := Facts{Messages: -1, Before: -1}
	rollupsFrom, err := e.rollups.RollupsFrom(ctx)
	if err != nil {
		return f, fmt.Errorf("statistics: %w", err)
	}
	f.rollupsFrom = rollupsFrom
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
	err = e.rollups.RollupHours(ctx, q.Scope, q.Filter.Name, from, to, func(hour time.Time, version uint64, inHour, rollups int64) error {
		start, end := hour, hour.Add(time.Hour)
		if start.Before(from) {
			start = from
		}
		if to.Before(end) {
			end = to
		}
		if !start.Before(end) {
			return nil
		}
		f.hours = append(f.hours, hourSpan{start, end, version})
		share := float64(end.Sub(start)) / float64(time.Hour)
		if inHour < 0 || messages < 0 {
			messages = -1
		} else {
			messages += int64(math.Ceil(share * float64(inHour)))
		}
		if key, keepable := keptSpan(q, start, end); keepable && e.hours.holds(key, version) {
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
	slices.SortFunc(f.hours, func(a, b hourSpan) int { return a.start.Compare(b.start) })
	return f, nil
}

// hourSpan is the part [start, end) of an hour a query counts, and the
// hour's version at the source.
type hourSpan struct {
	start, end time.Time
	version    uint64
}
