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

// ReadPattern matches every daily index; reads and the template use it.
func (n indexNames) ReadPattern() string { return n.base() + "-*" }
