package daystats

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Each day file keeps one stats.Rollup per scope, application and minute of
// created (its table rollups), written in the transaction that stores the
// messages. A query they answer (a scope, or one application, over a range)
// is counted from them with stats.RollupBuilder, hour by hour, whole hours
// kept between calls (hours.go); only the minutes a rollup cannot stand for
// (an edge of the range, messages not visible yet or expired) are counted
// from their messages.

// fromRollups counts the call's query, which the rollups answer, from each
// day file's rollups and the messages of the minutes they cannot stand for.
func (c *call) fromRollups(ctx context.Context) (stats.Stats, error) {
	b := stats.NewRollupBuilder(c.q, c.now)
	err := c.eachFile(ctx, func(f *dayfile.File) error {
		refused, err := c.countRollups(ctx, f, c.q, b)
		if err != nil {
			return err
		}
		for _, m := range refused {
			if err := streamSamples(ctx, f, c.q.Scope, m.filter(c.f), c.now, b.Add); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return stats.Stats{}, err
	}
	return b.Stats(), nil
}

// refusedMinute is a minute of one application that no rollup stands for.
type refusedMinute struct {
	start time.Time
	name  string
}

// filter is f narrowed to the minute's application and to the minute.
func (m refusedMinute) filter(f domain.Filter) domain.Filter {
	f.Name = m.name
	if f.From.Before(m.start) {
		f.From = m.start
	}
	if end := m.start.Add(time.Minute); f.To.IsZero() || f.To.After(end) {
		f.To = end
	}
	return f
}

// countRollups counts into b what f's rollups can answer of q, which the
// rollups can answer, and returns the minutes they cannot stand for, for the
// caller to count from their messages (refusedMinute.filter). A whole hour
// of the range kept from an earlier call at its version (hourCache) is
// counted from there; the other hours' rollups are read and counted hour by
// hour (hourReader).
func (c *call) countRollups(ctx context.Context, f *dayfile.File, q stats.Query, b *stats.RollupBuilder) ([]refusedMinute, error) {
	from, to := q.CountedRange()
	h := hourReader{hours: c.r.hours, f: f, q: q, b: b, trace: c.trace, width: min(q.Interval.Width, time.Hour), versions: map[int64]uint64{}}
	// The spans of minutes to read: the range, but the hours kept.
	var spans [][2]int64
	next, end := from.Unix()-59, dayfile.CeilMicro(to)/1e6+1
	first, last := from, to // the day file's part of the range
	if first.Before(f.Day) {
		first = f.Day
	}
	if dayEnd := f.Day.Add(24 * time.Hour); last.After(dayEnd) {
		last = dayEnd
	}
	for hour := first.Add(time.Hour - time.Nanosecond).Truncate(time.Hour); !hour.Add(time.Hour).After(last); hour = hour.Add(time.Hour) {
		version, counted := c.r.hours.countKept(h.key(hour.Unix()), hour, b)
		if counted {
			c.trace.KeptHours++
			if next < hour.Unix() {
				spans = append(spans, [2]int64{next, hour.Unix()})
			}
			next = hour.Unix() + 3600
			continue
		}
		h.versions[hour.Unix()] = version
	}
	if next < end {
		spans = append(spans, [2]int64{next, end})
	}
	for _, span := range spans {
		err := eachRollup(ctx, f, q.Scope, q.Filter.Name, span[0], span[1], h.add)
		if err != nil {
			return nil, err
		}
		h.endHour()
	}
	return h.refused, nil
}

// eachRollup calls yield with the rollup of each minute in [from, to) (Unix
// seconds) of each application of scope in f (of name alone when it is not
// ""), by minute: the rollup parts of a statistics engine. The rollup is
// valid until yield returns; the first error yield returns ends the read.
func eachRollup(ctx context.Context, f *dayfile.File, scope domain.Scope, name string, from, to int64,
	yield func(minute int64, name string, r *stats.Rollup) error) error {
	args := []any{scope.Account, scope.Domain, from, to}
	query := `SELECT minute, name, data FROM rollups WHERE account = ? AND domain = ? AND minute >= ? AND minute < ?`
	if name != "" {
		query += ` AND name = ?`
		args = append(args, name)
	}
	rows, err := f.Read.QueryContext(ctx, query+` ORDER BY minute`, args...)
	if err != nil {
		return f.Error(ctx, "stats: rollups", err)
	}
	defer rows.Close()
	var (
		minute  int64
		app     string
		data    sql.RawBytes // decoded before the next row
		r       stats.Rollup
		decoder rollupcodec.Decoder
	)
	for rows.Next() {
		if err := rows.Scan(&minute, &app, &data); err != nil {
			return f.Error(ctx, "stats: rollups", err)
		}
		if err := decoder.Rollup(data, &r); err != nil {
			return fmt.Errorf("sqlite: %s: rollup of %s at %d: %w", f.Path, app, minute, err)
		}
		if err := yield(minute, app, &r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return f.Error(ctx, "stats: rollups", err)
	}
	return nil
}

func hourOf(unix int64) int64 { return unix - unix%3600 }

// hourReader counts the rollups of a day file one hour at a time: each
// minute in its bucket, the paths and routes of the hour's merge. An hour
// wholly in the range whose every minute could stand for itself is kept, at
// the version it was read at.
type hourReader struct {
	hours *hourCache
	f     *dayfile.File
	q     stats.Query
	b     *stats.RollupBuilder
	trace *Trace
	width time.Duration // of the parts an hour is kept in
	// versions are those of the whole hours of the range, taken before
	// reading them: an hour read whole is kept at its version.
	versions map[int64]uint64
	refused  []refusedMinute

	// The hour being counted: kept is nil before its first minute.
	hour  int64
	kept  *keptHour
	whole bool
}

func (h *hourReader) key(hour int64) hourKey {
	return hourKey{h.f, h.q.Scope.Account, h.q.Scope.Domain, h.q.Filter.Name, hour, h.width}
}

// add counts one minute's rollup of one application (only the filter's
// application's are read, so each counts).
func (h *hourReader) add(minute int64, name string, r *stats.Rollup) error {
	if hour := hourOf(minute); h.kept == nil || hour != h.hour {
		h.endHour()
		h.hour, h.kept = hour, &keptHour{}
		h.kept.version, h.whole = h.versions[hour]
		if h.whole {
			h.kept.parts = make([]stats.Rollup, time.Hour/h.width)
		}
	}
	at := time.Unix(minute, 0).UTC()
	if !h.b.AddSeries(at, at.Add(time.Minute), name, r) {
		h.whole = false
		h.refused = append(h.refused, refusedMinute{at, name})
		return nil
	}
	h.trace.RollupMinutes++
	if h.whole {
		h.kept.parts[time.Duration(minute-h.hour)*time.Second/h.width].MergeSeries(r)
		h.kept.names.AddCounts(name, r.Count, r.Errors())
	}
	h.kept.rankings.Paths.Merge(&r.Paths)
	h.kept.rankings.Routes.Merge(&r.Routes)
	return nil
}

// endHour counts the rankings of the hour being counted, and keeps it if it
// is whole.
func (h *hourReader) endHour() {
	if h.kept == nil {
		return
	}
	h.b.AddRankings(&h.kept.rankings)
	if h.whole {
		h.hours.put(h.key(h.hour), h.kept)
	}
	h.kept = nil
}
