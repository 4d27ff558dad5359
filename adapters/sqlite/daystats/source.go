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
		w, tallies, match := dayfile.ReadableWhere(scope, f, now), dayfile.TallyWhere(scope, f, now), f.Matcher()
		var err error
		if f.Text == "" {
			err = walkSamples(ctx, file, statsIndexWalk, w, nil, add)
		} else {
			err = r.searchSamples(ctx, file, w, match, words, now, trace, add)
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

// oldestFirst lists the day files of [from, to) present, oldest day first.
func (r *Reader) oldestFirst(from, to time.Time) []dayfile.Part {
	parts := r.dir.NewestFirst(dayfile.Range(domain.Filter{From: from, To: to}, nil))
	slices.Reverse(parts)
	return parts
}

// RollupsFrom is the zero time: every day file keeps the rollups of its
// messages, written in the transaction that stores them.
func (r *Reader) RollupsFrom(context.Context) (time.Time, error) { return time.Time{}, nil }

// RollupHours yields the hours of [from, to) in which scope (name alone
// when not "") has rollups, at the version of the hour in its day file
// (hourVersions.version), with how many minute rollups the hour holds;
// how many messages is not told (-1). A day file's hours of a view are
// read once (fileHours) and kept until a transaction writes into the file.
// An hour of several parts (a day's retention classes, in their files or
// kept in the rollups file once retention dropped them) is yielded once,
// its rollups added up and its version made of theirs (hourOfParts). The
// rollups file's hours of a part read from its file are left out.
func (r *Reader) RollupHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
	yield func(hour time.Time, version uint64, messages, rollups int64) error) error {
	first, end := hourOf(from.Unix()), ceilSecond(to)
	var hours hourOfParts
	read := map[partKey]bool{}
	err := r.dir.Each(ctx, r.oldestFirst(from, to), func(f *dayfile.File) error {
		read[keyOf(f.Part())] = true
		fileHours, err := r.fileHours(ctx, f, scope, name)
		for _, h := range fileHours {
			if h.hour >= first && h.hour < end {
				hours.add(h, r.versions.version(f, h.hour))
			}
		}
		return err
	})
	if err == nil && r.kept != nil {
		version := r.kept.Version() // before the read, as hourVersions'
		err = r.kept.Hours(ctx, scope, name, first, end, func(hour int64, part string, rollups int64) error {
			if !read[keptPart(hour, part)] {
				hours.add(rollupHour{hour: hour, rollups: rollups}, version)
			}
			return nil
		})
	}
	if err != nil {
		return err
	}
	return hours.each(func(h rollupHour, version uint64) error {
		return yield(time.Unix(h.hour, 0).UTC(), version, -1, h.rollups)
	})
}

// Rollups yields the rollup of each application's minute meeting [from, to)
// of scope (of name alone when not ""), oldest day first. A day file's
// rollups are written in the transaction of their messages, so each stands
// for every message stored in its minute: none is nil. The rollups of a
// minute in several parts (a day's retention classes, in their files or
// kept in the rollups file once retention dropped them) are yielded
// merged, once: the engine refuses or counts the minute whole. The rollups
// file is read after the files (a file dropped during the read has been
// kept before), less the parts read from their files.
func (r *Reader) Rollups(ctx context.Context, scope domain.Scope, name string, from, to, _ time.Time,
	yield func(minute time.Time, name string, r *stats.Rollup) error) error {
	first, end := from.Unix()-59, ceilSecond(to)
	each := func(minute int64, app string, r *stats.Rollup) error {
		return yield(time.Unix(minute, 0).UTC(), app, r)
	}
	var (
		read     = map[partKey]bool{}
		keptRead = map[int64]bool{} // the days whose kept rollups are merged with their files'
	)
	for _, day := range dayfile.OfDay(r.oldestFirst(from, to)) {
		start := day[0].Day.Unix()
		dayFirst, dayEnd := max(first, start), min(end, start+24*3600)
		partly := false // the rollups file holds some of the day's rollups
		if r.kept != nil {
			var err error
			if partly, err = r.kept.Holds(ctx, scope, name, dayFirst, dayEnd); err != nil {
				return err
			}
		}
		// A day of several parts is merged, with its kept rollups read after
		// its files: of a part dropped meanwhile, kept before it went.
		merging := len(day) > 1 || partly
		var merged mergedRollups
		add := each
		if merging {
			add = merged.add
		}
		err := r.dir.Each(ctx, day, func(f *dayfile.File) error {
			read[keyOf(f.Part())] = true
			return eachRollup(ctx, f, scope, name, first, end, add)
		})
		if err == nil && merging && r.kept != nil {
			keptRead[start] = true
			err = r.keptRollups(ctx, scope, name, dayFirst, dayEnd, func(p partKey) bool { return read[p] }, merged.add)
		}
		if err == nil {
			err = merged.each(yield)
		}
		if err != nil {
			return err
		}
	}
	if r.kept == nil {
		return nil
	}
	return r.keptRollups(ctx, scope, name, first, end, func(p partKey) bool { return read[p] || keptRead[p.day] }, each)
}

// partKey is a day file's part (dayfile.Part), its day in Unix seconds.
type partKey struct {
	day   int64
	class string
}

func keyOf(p dayfile.Part) partKey { return partKey{day: p.Day.Unix(), class: p.Class} }

// keptPart is the part a kept rollup of minute (Unix seconds) came from.
func keptPart(minute int64, class string) partKey {
	return keyOf(dayfile.Part{Day: dayfile.DayOf(time.Unix(minute, 0)), Class: class})
}

// keptRollups yields the rollups file's rollups of [from, to) (Unix
// seconds) of scope (name alone when not ""), less those of the parts skip
// tells, those of one minute and application in several parts merged into
// one.
func (r *Reader) keptRollups(ctx context.Context, scope domain.Scope, name string, from, to int64, skip func(partKey) bool,
	yield func(minute int64, name string, r *stats.Rollup) error) error {
	var (
		held, next stats.Rollup // held: at's rollup, merged so far
		at         minuteOfApp
		holds      bool
		decoder    rollupcodec.Decoder
	)
	err := r.kept.Each(ctx, scope, name, from, to, func(minute int64, app, part string, data []byte) error {
		if skip(keptPart(minute, part)) {
			return nil
		}
		into, of := &held, minuteOfApp{minute: minute, app: app}
		switch {
		case holds && of == at:
			into = &next
		case holds:
			if err := yield(at.minute, at.app, &held); err != nil {
				return err
			}
		}
		if err := decoder.Rollup(data, into); err != nil {
			return fmt.Errorf("sqlite: %s: rollup of %s at %d: %w", rollupfile.FileName, app, minute, err)
		}
		if into == &next {
			held.Merge(&next)
		}
		at, holds = of, true
		return nil
	})
	if err == nil && holds {
		err = yield(at.minute, at.app, &held)
	}
	return err
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
