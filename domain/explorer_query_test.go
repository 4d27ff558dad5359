package domain

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseQuerySearchAndDurations(t *testing.T) {
	micros := func(n int64) *time.Duration { d := time.Duration(n) * time.Microsecond; return &d }
	cases := []struct {
		query    string
		text     string
		min, max *time.Duration
	}{
		{query: "q=ord_8f7d", text: "ord_8f7d"},
		{query: "q=" + url.QueryEscape("Payment declined: card"), text: "Payment declined: card"},
		{query: "q=" + url.QueryEscape(strings.Repeat("é", MaxSearchLength)), text: strings.Repeat("é", MaxSearchLength)}, // characters, not bytes
		{query: "q=7", text: "7"},
		{query: "q=%20a%20", text: " a "}, // surrounding spaces are kept (docs/contract.md)
		{query: "min_duration_ms=12.345", min: micros(12345)},
		// Stored durations are whole microseconds: a lower bound between two
		// rounds up, an upper one down, so neither admits what it excludes.
		{query: "min_duration_ms=12.3456789", min: micros(12346)},
		{query: "max_duration_ms=12.3456789", max: micros(12345)},
		{query: "min_duration_ms=12.4995", min: micros(12500)},
		{query: "min_duration_ms=1.0001&max_duration_ms=1.0004", min: micros(1001), max: micros(1000)},
		{query: "min_duration_ms=-0", min: micros(0)},
		{query: "max_duration_ms=86400000", max: micros(86_400_000_000)},
		{query: "min_duration_ms=0&max_duration_ms=0", min: micros(0), max: micros(0)},
		{query: "min_duration_ms=5&max_duration_ms=5", min: micros(5000), max: micros(5000)},
		{query: "min_duration_ms=1e3", min: micros(1_000_000)},
	}
	for _, c := range cases {
		values, _ := url.ParseQuery(c.query)
		q, err := ParseQuery(values)
		if err != nil {
			t.Errorf("ParseQuery(%s): %v", c.query, err)
			continue
		}
		f := q.Filter
		if f.Text != c.text || !sameBound(f.MinDuration, c.min) || !sameBound(f.MaxDuration, c.max) {
			t.Errorf("ParseQuery(%s): q %q, min %v, max %v; want %q, %v, %v", c.query, f.Text, show(f.MinDuration), show(f.MaxDuration), c.text, show(c.min), show(c.max))
		}
	}
}

func sameBound(a, b *time.Duration) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(d *time.Duration) string {
	if d == nil {
		return "unset"
	}
	return d.String()
}

// Each bad value is a 400 naming its parameter, in fetch and export alike
// (they share the parsing of filters, QueryParams.Filter, with the statistics'
// stats.ParseQuery).
func TestSearchAndDurationParameterErrors(t *testing.T) {
	cases := map[string]string{
		"q=": "q", "q=" + strings.Repeat("a", MaxSearchLength+1): "q", "q=" + url.QueryEscape(strings.Repeat("é", MaxSearchLength+1)): "q",
		"q=%21%21%21": "q", "q=%20%20": "q", "q=-": "q", "q=%40.": "q", "q=a&q=b": "q",
		"min_duration_ms=": "min_duration_ms", "min_duration_ms=abc": "min_duration_ms", "min_duration_ms=-1": "min_duration_ms",
		"min_duration_ms=-0.001": "min_duration_ms", "min_duration_ms=86400000.001": "min_duration_ms", "min_duration_ms=1e9": "min_duration_ms",
		"min_duration_ms=%2212%22": "min_duration_ms", "min_duration_ms=12ms": "min_duration_ms", "min_duration_ms=.5": "min_duration_ms",
		"max_duration_ms=true": "max_duration_ms", "max_duration_ms=-5": "max_duration_ms", "max_duration_ms=86400001": "max_duration_ms",
		"min_duration_ms=5&max_duration_ms=4.999":       "max_duration_ms",
		"min_duration_ms=1.0004&max_duration_ms=1.0001": "max_duration_ms", "min_duration_ms=-0.5": "min_duration_ms",
	}
	parsers := map[string]func(url.Values) error{
		"fetch":  func(v url.Values) error { _, err := ParseQuery(v); return err },
		"export": func(v url.Values) error { _, err := ParseExportQuery(v); return err },
	}
	for raw, field := range cases {
		values, _ := url.ParseQuery(raw)
		for name, parse := range parsers {
			t.Run(name+" "+raw[:min(len(raw), 40)], func(t *testing.T) {
				assertFields(t, parse(values), field)
			})
		}
	}
}

func TestParseExportQuery(t *testing.T) {
	cases := []struct {
		query  string
		format string
		max    int
	}{
		{"", ExportNDJSON, MaxExport},
		{"format=ndjson", ExportNDJSON, MaxExport},
		{"format=csv", ExportCSV, MaxExport},
		{"limit=1", ExportNDJSON, 1},
		{"limit=100000&format=csv", ExportCSV, 100_000},
		{"limit=2500&q=ord_8f7d&name=shop", ExportNDJSON, 2500},
	}
	for _, c := range cases {
		values, _ := url.ParseQuery(c.query)
		q, err := ParseExportQuery(values)
		if err != nil {
			t.Errorf("ParseExportQuery(%s): %v", c.query, err)
			continue
		}
		if q.Format != c.format || q.Max != c.max {
			t.Errorf("ParseExportQuery(%s) = format %q, max %d; want %q, %d", c.query, q.Format, q.Max, c.format, c.max)
		}
	}
	values, _ := url.ParseQuery("q=ord_8f7d&name=shop&status_code=5xx&from=1795262400")
	if q, err := ParseExportQuery(values); err != nil || q.Filter.Text != "ord_8f7d" || q.Filter.Name != "shop" || q.Filter.StatusMin != 500 || q.Filter.From.IsZero() {
		t.Errorf("ParseExportQuery keeps the fetch filters: %+v, %v", q.Filter, err)
	}
	for raw, field := range map[string]string{
		"format=xml": "format", "format=": "format", "format=json": "format",
		"limit=0": "limit", "limit=100001": "limit", "limit=-1": "limit", "limit=abc": "limit", "limit=1.5": "limit",
		"limit=0&format=xml": "format limit",
	} {
		values, _ := url.ParseQuery(raw)
		_, err := ParseExportQuery(values)
		assertFields(t, err, strings.Fields(field)...)
	}
}
