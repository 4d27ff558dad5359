package daystats

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
)

// A day's messages may be in several files, one a retention class
// (dayfile.Part): the engine gets one hour and one rollup a minute and
// application of the day, whatever the files.

// hourOfParts gathers the hours of a day's files: each hour's rollups
// added up, its version the one file's or, of several, a hash of theirs in
// the files' order, which changes when any of them does.
type hourOfParts struct {
	hours    map[int64]*rollupHour
	versions map[int64][]uint64
}

func (h *hourOfParts) add(hour rollupHour, version uint64) {
	if h.hours == nil {
		h.hours, h.versions = map[int64]*rollupHour{}, map[int64][]uint64{}
	}
	if kept := h.hours[hour.hour]; kept != nil {
		kept.rollups += hour.rollups
	} else {
		h.hours[hour.hour] = &hour
	}
	h.versions[hour.hour] = append(h.versions[hour.hour], version)
}

// each calls fn with each hour, oldest first, and its version.
func (h *hourOfParts) each(fn func(rollupHour, uint64) error) error {
	hours := make([]int64, 0, len(h.hours))
	for hour := range h.hours {
		hours = append(hours, hour)
	}
	slices.Sort(hours)
	for _, hour := range hours {
		versions := h.versions[hour]
		version := versions[0]
		if len(versions) > 1 {
			sum := fnv.New64a()
			for _, v := range versions {
				_, _ = sum.Write(strconv.AppendUint(nil, v, 16))
				_, _ = sum.Write([]byte{','})
			}
			version = sum.Sum64()
		}
		if err := fn(*h.hours[hour], version); err != nil {
			return err
		}
	}
	return nil
}

// mergedRollups adds up the rollups of a day's files by minute and
// application.
type mergedRollups struct {
	rollups map[minuteOfApp]*stats.Rollup
}

type minuteOfApp struct {
	minute int64
	app    string
}

// add merges r (valid for the call alone) into its minute's.
func (m *mergedRollups) add(minute int64, app string, r *stats.Rollup) error {
	if m.rollups == nil {
		m.rollups = map[minuteOfApp]*stats.Rollup{}
	}
	k := minuteOfApp{minute, app}
	if m.rollups[k] == nil {
		m.rollups[k] = &stats.Rollup{}
	}
	m.rollups[k].Merge(r)
	return nil
}

// each yields the merged rollups by minute, then application.
func (m *mergedRollups) each(yield func(time.Time, string, *stats.Rollup) error) error {
	keys := make([]minuteOfApp, 0, len(m.rollups))
	for k := range m.rollups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b minuteOfApp) int {
		return cmp.Or(cmp.Compare(a.minute, b.minute), cmp.Compare(a.app, b.app))
	})
	for _, k := range keys {
		if err := yield(time.Unix(k.minute, 0).UTC(), k.app, m.rollups[k]); err != nil {
			return err
		}
	}
	return nil
}
