package statsengine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
)

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
