package esindex

import (
	"strings"
	"time"
)

// Names is the one place that knows how indices and the template are named:
// "<prefix>-messages-<yyyy.mm.dd>", one index per UTC day of CreatedAt.
type Names struct {
	prefix string
}

// NewNames names the indices of prefix.
func NewNames(prefix string) Names { return Names{prefix: prefix} }

// dayLayout is the date part of a daily index name.
const dayLayout = "2006.01.02"

// base is the name shared by the template and every daily index.
func (n Names) base() string { return n.prefix + "-messages" }

// Template names the composable index template.
func (n Names) Template() string { return n.base() }

// For names the index that holds messages created at t (its UTC day).
func (n Names) For(t time.Time) string { return n.base() + "-" + t.UTC().Format(dayLayout) }

// Days names the daily index of each message of a batch in turn, with a new
// name only when the day changes: a batch is mostly of one day, and For
// builds a string each time.
type Days struct {
	Names Names
	year  int
	month time.Month
	day   int
	name  string
}

// Of returns For(t), and whether it differs from the one before.
func (d *Days) Of(t time.Time) (name string, changed bool) {
	year, month, day := t.UTC().Date()
	if d.name != "" && year == d.year && month == d.month && day == d.day {
		return d.name, false
	}
	d.year, d.month, d.day, d.name = year, month, day, d.Names.For(t)
	return d.name, true
}

// ReadPattern matches every daily index; reads and the template use it.
func (n Names) ReadPattern() string { return n.base() + "-*" }

// RollupsFor names the index of the statistics' marks and kept rollups of
// the minutes of t's UTC day: "<prefix>-rollups-<yyyy.mm.dd>" (esrollup).
func (n Names) RollupsFor(t time.Time) string {
	return n.rollupsBase() + "-" + t.UTC().Format(dayLayout)
}

func (n Names) rollupsBase() string { return n.prefix + "-rollups" }

// RollupsTemplate names the composable index template of the rollups' indices.
func (n Names) RollupsTemplate() string { return n.rollupsBase() }

// RollupsPattern matches every daily index of rollups.
func (n Names) RollupsPattern() string { return n.rollupsBase() + "-*" }

// RollupState names the one-document index that says from when every stored
// message is marked (esrollup).
func (n Names) RollupState() string { return n.prefix + "-rollup-state" }

// DayOf is the UTC day of a daily index of messages or rollups, and false
// for a name of neither.
func (n Names) DayOf(index string) (time.Time, bool) {
	for _, base := range []string{n.base(), n.rollupsBase()} {
		if rest, ok := strings.CutPrefix(index, base+"-"); ok {
			day, err := time.Parse(dayLayout, rest)
			return day, err == nil
		}
	}
	return time.Time{}, false
}
