package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Each day file keeps, beside its messages, one stats.Rollup per scope,
// application and minute of created_at (table rollups, schema version 3),
// written in the transaction that stores the messages: Stats answers the
// portal's common view (a scope, or one application, over a range) from
// them, and streams only the minutes a rollup cannot stand for (see
// stats.RollupBuilder).

// rollupMinutes counts the minutes Stats answered from a rollup, and
// keptHours the hours it answered from the hour cache, for tests.
var rollupMinutes, keptHours atomic.Int64

// rollupRow is one minute's rollup as read, not decoded yet.
type rollupRow struct {
	start int64 // Unix seconds
	name  string
	data  []byte
}

// refusedMinute is a minute of one application that no rollup stands for.
type refusedMinute struct {
	start time.Time
	name  string
}

// statsFromRollups counts into b what day's rollups can answer of q, which
// the rollups can answer, and returns the minutes they cannot stand for: the
// caller streams those (refusedMinute.filter). A whole hour
// of the range kept from an earlier call (hourCache) is counted from there;
// the other hours' rollups are read hour by hour (hourReader.count).
func (s *Store) statsFromRollups(ctx context.Context, d *dayfile.File, q stats.Query, now time.Time, b *stats.RollupBuilder) ([]refusedMinute, error) {
	from, to := q.CountedRange()
	h := hourReader{s: s, d: d, q: q, b: b, width: min(q.Interval.Width, time.Hour), versions: map[int64]uint64{}}
	// The spans of minutes to read: the range, but the hours kept.
	var spans [][2]int64
	next, end := from.Unix()-59, dayfile.CeilMicro(to)/1e6+1
	first, last := from, to // the day file's part of the range
	if first.Before(d.Day) {
		first = d.Day
	}
	if dayEnd := d.Day.Add(24 * time.Hour); last.After(dayEnd) {
		last = dayEnd
	}
	for hour := first.Add(time.Hour - time.Nanosecond).Truncate(time.Hour); !hour.Add(time.Hour).After(last); hour = hour.Add(time.Hour) {
		version := s.hours.version(d, hour.Unix())
		if kept := s.hours.get(h.key(hour.Unix()), version); kept != nil && kept.countInto(b, hour, h.width) {
			keptHours.Add(1)
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
		if err := h.read(ctx, span[0], span[1]); err != nil {
			return nil, err
		}
	}
	return h.refused, nil
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

func hourOf(unix int64) int64 { return unix - unix%3600 }

// hourReader counts the rollups of a day file one hour at a time.
type hourReader struct {
	s     *Store
	d     *dayfile.File
	q     stats.Query
	b     *stats.RollupBuilder
	width time.Duration // of the parts an hour is kept in
	// versions are those of the whole hours of the range, taken before
	// reading them: an hour read whole is kept at its version.
	versions map[int64]uint64
	rows     []rollupRow // of one hour, by minute
	refused  []refusedMinute
	whole    stats.Rollup // one row decoded
	decoder  rollupcodec.Decoder
}

func (h *hourReader) key(hour int64) hourKey {
	return hourKey{h.d, h.q.Scope.Account, h.q.Scope.Domain, h.q.Filter.Name, hour, h.width}
}

// read counts the rollups of the minutes in [from, to), Unix seconds.
func (h *hourReader) read(ctx context.Context, from, to int64) error {
	args := []any{h.q.Scope.Account, h.q.Scope.Domain, from, to}
	query := `SELECT minute, name, data FROM rollups WHERE account = ? AND domain = ? AND minute >= ? AND minute < ?`
	if h.q.Filter.Name != "" {
		query += ` AND name = ?`
		args = append(args, h.q.Filter.Name)
	}
	rows, err := h.d.Read.QueryContext(ctx, query+` ORDER BY minute`, args...)
	if err != nil {
		return h.d.Error(ctx, "stats: rollups", err)
	}
	defer rows.Close()
	for rows.Next() {
		var row rollupRow
		if err := rows.Scan(&row.start, &row.name, &row.data); err != nil {
			return h.d.Error(ctx, "stats: rollups", err)
		}
		if len(h.rows) > 0 && hourOf(row.start) != hourOf(h.rows[0].start) {
			if err := h.count(); err != nil {
				return err
			}
		}
		h.rows = append(h.rows, row)
	}
	if err := rows.Err(); err != nil {
		return h.d.Error(ctx, "stats: rollups", err)
	}
	return h.count()
}

// count counts h.rows, one hour's, and empties them: each minute in its
// bucket, the paths and routes of their merge. An hour wholly in the range
// whose every minute could stand for itself is kept, at the version it was
// read at.
func (h *hourReader) count() error {
	if len(h.rows) == 0 {
		return nil
	}
	defer func() { h.rows = h.rows[:0] }()
	hour := hourOf(h.rows[0].start)
	version, whole := h.versions[hour]
	kept := &keptHour{version: version}
	if whole {
		kept.parts = make([]stats.Rollup, time.Hour/h.width)
	}
	// Only the filter's application's rows are read, so each counts.
	for _, row := range h.rows {
		if err := h.decoder.Rollup(row.data, &h.whole); err != nil {
			return fmt.Errorf("sqlite: %s: rollup of %s at %d: %w", h.d.Path, row.name, row.start, err)
		}
		at := time.Unix(row.start, 0).UTC()
		if !h.b.AddSeries(at, at.Add(time.Minute), row.name, &h.whole) {
			whole = false
			h.refused = append(h.refused, refusedMinute{at, row.name})
			continue
		}
		rollupMinutes.Add(1)
		if whole {
			kept.parts[time.Duration(row.start-hour)*time.Second/h.width].MergeSeries(&h.whole)
			kept.names.AddCounts(row.name, h.whole.Count, h.whole.Errors())
		}
		kept.rankings.Paths.Merge(&h.whole.Paths)
		kept.rankings.Routes.Merge(&h.whole.Routes)
	}
	h.b.AddRankings(&kept.rankings)
	if whole {
		h.s.hours.put(h.key(hour), kept)
	}
	return nil
}
