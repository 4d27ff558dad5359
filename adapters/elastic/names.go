package elastic

import "time"

// indexNames is the one place that knows how indices and the template are named:
// "<prefix>-messages-<yyyy.mm.dd>", one index per UTC day of CreatedAt.
type indexNames struct {
	prefix string
}

// dayLayout is the date part of a daily index name.
const dayLayout = "2006.01.02"

// base is the name shared by the template and every daily index.
func (n indexNames) base() string { return n.prefix + "-messages" }

// Template names the composable index template.
func (n indexNames) Template() string { return n.base() }

// For names the index that holds messages created at t (its UTC day).
func (n indexNames) For(t time.Time) string { return n.base() + "-" + t.UTC().Format(dayLayout) }

// dayIndices names the daily index of each message of a batch in turn, with a
// new name only when the day changes: a batch is mostly of one day, and For
// builds a string each time.
type dayIndices struct {
	names indexNames
	year  int
	month time.Month
	day   int
	name  string
}

// of returns For(t), and whether it differs from the one before.
func (d *dayIndices) of(t time.Time) (name string, changed bool) {
	year, month, day := t.UTC().Date()
	if d.name != "" && year == d.year && month == d.month && day == d.day {
		return d.name, false
	}
	d.year, d.month, d.day, d.name = year, month, day, d.names.For(t)
	return d.name, true
}

// ReadPattern matches every daily index; reads and the template use it.
func (n indexNames) ReadPattern() string { return n.base() + "-*" }
