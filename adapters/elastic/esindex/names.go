package esindex

import (
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Names is the one place that knows how indices and the template are named:
// "<prefix>-messages-<yyyy.mm.dd>", one index per UTC day of CreatedAt, for
// the messages of the policy's retention, and
// "<prefix>-messages-<yyyy.mm.dd>-<class tag>" for those of an account's
// retention rule (domain.RetentionClass.Tag), so that the purge deletes a
// class's days whole at its own retention.
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

// For names the index that holds the policy's messages created at t (its
// UTC day).
func (n Names) For(t time.Time) string { return n.base() + "-" + t.UTC().Format(dayLayout) }

// ForClass names the index that holds class's messages created at t.
func (n Names) ForClass(t time.Time, class domain.RetentionClass) string {
	if tag := class.Tag(); tag != "" {
		return n.For(t) + "-" + tag
	}
	return n.For(t)
}

// Of names the index that holds m.
func (n Names) Of(m domain.Message) string { return n.ForClass(m.CreatedAt, m.RetentionClass()) }

// DayPattern matches the indices of every class of t's UTC day.
func (n Names) DayPattern(t time.Time) string { return n.For(t) + "*" }

// ClassPattern matches the daily indices of class, "" for the policy's.
func (n Names) ClassPattern(class domain.RetentionClass) string {
	if tag := class.Tag(); tag != "" {
		return n.base() + "-*-" + tag
	}
	return ""
}

// PolicyPattern is the index list of the policy's daily indices: every
// daily index but those of a class.
func (n Names) PolicyPattern() []string {
	return []string{n.ReadPattern(), "-" + n.base() + "-*-r*"}
}

// Days names the daily index of each message of a batch in turn, with a new
// name only when its day or class changes: a batch is mostly of one day and
// class, and Of builds a string each time.
type Days struct {
	Names Names
	year  int
	month time.Month
	day   int
	class domain.RetentionClass
	name  string
}

// Of returns Names.Of(m), and whether it differs from the one before.
func (d *Days) Of(m domain.Message) (name string, changed bool) {
	year, month, day := m.CreatedAt.UTC().Date()
	class := m.RetentionClass()
	if d.name != "" && year == d.year && month == d.month && day == d.day && class == d.class {
		return d.name, false
	}
	d.year, d.month, d.day, d.class, d.name = year, month, day, class, d.Names.Of(m)
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

// DayOf is the UTC day of a daily index of messages (of any class) or
// rollups, and false for a name of neither.
func (n Names) DayOf(index string) (time.Time, bool) {
	for _, base := range []string{n.base(), n.rollupsBase()} {
		if rest, ok := strings.CutPrefix(index, base+"-"); ok {
			date, tag, classed := strings.Cut(rest, "-")
			if classed && (base != n.base() || !isTag(tag)) {
				return time.Time{}, false
			}
			day, err := time.Parse(dayLayout, date)
			return day, err == nil
		}
	}
	return time.Time{}, false
}

// isTag tells a class tag: "r" and 16 hex digits.
func isTag(s string) bool {
	hexDigits, ok := strings.CutPrefix(s, "r")
	return ok && len(hexDigits) == 16 && strings.Trim(hexDigits, "0123456789abcdef") == ""
}
