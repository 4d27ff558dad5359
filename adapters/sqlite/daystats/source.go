package daystats

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/rollupfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// The Reader feeds the statistics engine (adapters/statsengine) through its
// port, and answers Stats through it: the narrow rows (ports.SampleStreamer)
// and the day files' minute rollups with the versions of their hours
// (ports.RollupSource).
var (
	_ ports.SampleStreamer = (*Reader)(nil)
	_ ports.RollupSource   = (*Reader)(nil)
)

// StreamSamples yields the sample of each message and tally of scope
// readable at now that passes f: from the statistics index, or, with a q,
// from the messages holding its words, read whole and checked with f's
// Matcher; then from the file's tallies (tallies.go).
func (r *Reader) StreamSamples(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, yield func(stats.Sample) error) error {
	var yieldErr error
	add := func(s stats.Sample) {
		if yieldErr == nil {
			yieldErr = yield(s)
		}
	}
	words, _ := dayfile.Words(f.Text)
	if f.Text != "" && words == "" {
		return nil // no word: the domain refuses such a q
	}
	trace := traceOf(ctx)
	return r.dir.Each(ctx, r.dir.NewestFirst(dayfile.Range(f, nil)), func(file *dayfile.File) error {
		// A where for the messages, which a search narrows, and one for
		// the tallies, made together.
		w, tallies, match := dayfile.ReadableWhere(scope, f, now), dayfile.ReadableWhere(scope, f, now), f.Matcher()
		var err error
		if f.Text == "" {
			err = walkSamples(ctx, file, statsIndexWalk, w, nil, add)
		} else {
			err = r.searchSamples(ctx, file, w, match, words, trace, add)
		}
		if err == nil {
			err = streamTallies(ctx, file, scope, tallies, match, add)
		}
		if err == nil {
			err = yieldErr
		}
		return err
	})
}

// oldestFirst lists the days of [from, to) present, oldest first.
func (r *Reader) oldestFirst(from, to time.Time) []time.Time {
	days := r.dir.NewestFirst(dayfile.Range(domain.Filter{From: from, To: to}, nil))
	slices.Reverse(days)
	return days
}

// RollupsFrom is the zero time: every day file keeps the rollups of its
// messages, written in the transaction that stores them.
func (r *Reader) RollupsFrom(context.Context) (time.Time, error) { return time.Time{}, nil }

// RollupHours yields the hours of [from, to) in which scope (name alone
// when not "") has rollups, at the version of the hour in its day file
// (hourVersions.version), with how many minute rollups the hour holds;
// how many messages is not told (-1). A day file's hours of a view are
// read once (fileHours) and kept until a transaction writes into the file.
// The hours of the days whose files retention dropped come from the
// rollups file (keptHours).
func (r *Reader) RollupHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
	yield func(hour time.Time, version uint64, messages, rollups int64) error) error {
	first, end, days := hourOf(from.Unix()), ceilSecond(to), r.oldestFirst(from, to)
	read := map[int64]bool{} // the days read from their files, Unix seconds
	err := r.dir.Each(ctx, days, func(f *dayfile.File) error {
		read[f.Day.Unix()] = true
		hours, err := r.fileHours(ctx, f, scope, name)
		if err != nil {
			return err
		}
		for _, h := range hours {
			if h.hour < first || h.hour >= end {
				continue
			}
			if err := yield(time.Unix(h.hour, 0).UTC(), r.versions.version(f, h.hour), -1, h.rollups); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || r.kept == nil {
		return err
	}
	version := r.kept.Version() // before the read, as hourVersions'
	return r.kept.Hours(ctx, scope, name, first, end, func(hour, rollups int64) error {
		if read[dayfile.DayOf(time.Unix(hour, 0)).Unix()] {
			return nil
		}
		return yield(time.Unix(hour, 0).UTC(), version, -1, rollups)
	})
}

// Rollups yields the rollup of each application's minute meeting [from, to)
// of scope (of name alone when not ""), oldest day first. A day file's
// rollups are written in the transaction of their messages, so each stands
// for every message stored in its minute: none is nil. The days whose files
// retention dropped (those not read from a file: a file dropped during the
// read has been kept before) are read from the rollups file.
func (r *Reader) Rollups(ctx context.Context, scope domain.Scope, name string, from, to, _ time.Time,
	yield func(minute time.Time, name string, r *stats.Rollup) error) error {
	read := map[int64]bool{} // the days read from their files, Unix seconds
	err := r.dir.Each(ctx, r.oldestFirst(from, to), func(f *dayfile.File) error {
		read[f.Day.Unix()] = true
		return eachRollup(ctx, f, scope, name, from.Unix()-59, ceilSecond(to), func(minute int64, app string, r *stats.Rollup) error {
			return yield(time.Unix(minute, 0).UTC(), app, r)
		})
	})
	if err != nil || r.kept == nil {
		return err
	}
	var (
		decoded stats.Rollup
		decoder rollupcodec.Decoder
	)
	return r.kept.Each(ctx, scope, name, from.Unix()-59, ceilSecond(to), func(minute int64, app string, data []byte) error {
		at := time.Unix(minute, 0).UTC()
		if read[dayfile.DayOf(at).Unix()] {
			return nil
		}
		if err := decoder.Rollup(data, &decoded); err != nil {
			return fmt.Errorf("sqlite: %s: rollup of %s at %d: %w", rollupfile.FileName, app, minute, err)
		}
		return yield(at, app, &decoded)
	})
}

// ceilSecond is t in Unix seconds, rounded up: a minute starting before it
// meets a range ending at t.
func ceilSecond(t time.Time) int64 {
	s := t.Unix()
	if time.Unix(s, 0).Before(t) {
		s++
	}
	return s
}
