package alerting

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Metric is what a rule watches, computed from the statistics of its window.
type Metric string

// The metrics of a rule.
const (
	// MetricErrorRate is the share of requests with a status of 400 or more, 0 to 1.
	MetricErrorRate Metric = "error_rate"
	// MetricServerErrorRate is the share of requests with a status of 500 or more.
	MetricServerErrorRate Metric = "server_error_rate"
	// MetricRequestCount is how many requests the window holds.
	MetricRequestCount Metric = "request_count"
	// MetricDurationP50, P95 and P99 are percentiles of duration_ms, as /v1/stats
	// computes them.
	MetricDurationP50 Metric = "duration_p50"
	MetricDurationP95 Metric = "duration_p95"
	MetricDurationP99 Metric = "duration_p99"
)

// Metrics lists every metric, in the order the API documents them.
var Metrics = []Metric{MetricErrorRate, MetricServerErrorRate, MetricRequestCount,
	MetricDurationP50, MetricDurationP95, MetricDurationP99}

// IsRate reports a metric that is a share of the window's requests (0 to 1).
func (m Metric) IsRate() bool { return m == MetricErrorRate || m == MetricServerErrorRate }

// IsDuration reports a percentile of durations.
func (m Metric) IsDuration() bool {
	return m == MetricDurationP50 || m == MetricDurationP95 || m == MetricDurationP99
}

// Comparison is how a rule compares the metric with its threshold.
type Comparison string

// The comparisons of a rule.
const (
	Above        Comparison = ">"
	AboveOrEqual Comparison = ">="
	Below        Comparison = "<"
	BelowOrEqual Comparison = "<="
)

// Holds reports whether value compares with threshold as c says.
func (c Comparison) Holds(value, threshold float64) bool {
	switch c {
	case Above:
		return value > threshold
	case AboveOrEqual:
		return value >= threshold
	case Below:
		return value < threshold
	case BelowOrEqual:
		return value <= threshold
	}
	return false
}

// upward reports a comparison that alerts on high values.
func (c Comparison) upward() bool { return c == Above || c == AboveOrEqual }

// NoDataPolicy says what a window without data means: no request at all for a
// rate, no request with a duration for a percentile. A request count always has
// data (zero is a count).
type NoDataPolicy string

// The no-data policies of a rule.
const (
	// NoDataKeep gives no verdict: the state stays as it is.
	NoDataKeep NoDataPolicy = "keep"
	// NoDataOK counts as the condition not holding: a firing alert resolves.
	NoDataOK NoDataPolicy = "ok"
	// NoDataFiring counts as the condition holding: silence is an incident.
	NoDataFiring NoDataPolicy = "firing"
)

// Bounds and defaults of a rule.
const (
	// Bucket is the statistics interval every rule is evaluated on: its
	// window is a whole number of these buckets and ends one bucket before the
	// evaluation, so that late logs of the last minute are in.
	Bucket = time.Minute
	// MaxWindow is the longest window: 1,440 one-minute buckets, within
	// MaxBuckets.
	MaxWindow          = 24 * time.Hour
	DefaultWindow      = 5 * time.Minute
	MaxFor             = 24 * time.Hour
	MinRepeatInterval  = time.Minute
	MaxRepeatInterval  = 30 * 24 * time.Hour
	DefaultRepeatEvery = 4 * time.Hour
	MaxTitleLength     = 200
	MaxMinRequests     = 1_000_000_000
	// MaxRuleEndpoints bounds the endpoints one rule names.
	MaxRuleEndpoints = 20
)

// Filter selects the requests a rule counts: every field is optional.
type Filter struct {
	Name       string // the application
	PathPrefix string
	Method     string
	// StatusClasses are the status classes counted, 1 (1xx) to 5 (5xx),
	// ascending and distinct; empty counts every class.
	StatusClasses []int
}

// Rule watches one metric of a scope's traffic.
type Rule struct {
	ID     string
	Scope  domain.Scope
	Title  string
	Filter Filter
	Metric Metric
	// Comparison and Threshold: the condition that makes the alert pending, then
	// firing once it held For.
	Comparison Comparison
	Threshold  float64
	// ResolveThreshold is where a firing alert resolves: it stays firing while
	// the metric compares with it as with Threshold. Equal to Threshold, or on
	// its healthy side (hysteresis).
	ResolveThreshold float64
	Window           time.Duration
	For              time.Duration
	// MinRequests: below this many requests in the window a rate or percentile
	// gives no verdict (too little traffic).
	MinRequests int64
	NoData      NoDataPolicy
	// RepeatInterval: how often a firing alert is sent again (0: never).
	RepeatInterval time.Duration
	// EndpointIDs receive the rule's events; empty: every endpoint of the scope.
	EndpointIDs []string
	Enabled     bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DefaultRule is what a new rule holds before its fields are read.
func DefaultRule() Rule {
	return Rule{Comparison: Above, Window: DefaultWindow, NoData: NoDataKeep,
		RepeatInterval: DefaultRepeatEvery, Enabled: true}
}

// Clone returns a copy that shares no slice with r.
func (r Rule) Clone() Rule {
	r.Filter.StatusClasses = slices.Clone(r.Filter.StatusClasses)
	r.EndpointIDs = slices.Clone(r.EndpointIDs)
	return r
}

// WindowAt is the window evaluated at now: whole buckets, ending at the start
// of the bucket before the one now falls in.
func (r Rule) WindowAt(now time.Time) (from, to time.Time) {
	to = stats.AlignDown(now, Bucket).Add(-Bucket)
	return to.Add(-r.Window), to
}

// StatsQuery asks the statistics of the window evaluated at now: the same query
// as GET /v1/stats with the rule's filters, from and to, and interval=1m. A
// rate or count reads the status classes from the buckets, so only a
// percentile narrows the query to them (they are then contiguous).
func (r Rule) StatsQuery(now time.Time) stats.Query {
	from, to := r.WindowAt(now)
	f := domain.Filter{Name: r.Filter.Name, PathPrefix: r.Filter.PathPrefix, Method: r.Filter.Method, From: from, To: to}
	if r.Metric.IsDuration() && len(r.Filter.StatusClasses) > 0 {
		f.StatusMin = r.Filter.StatusClasses[0] * 100
		f.StatusMax = r.Filter.StatusClasses[len(r.Filter.StatusClasses)-1]*100 + 99
	}
	return stats.Query{Scope: r.Scope, From: from, To: to, Filter: f, Interval: stats.Interval{Name: "1m", Width: Bucket}}
}

// StatusClassNames are the classes as the API writes them ("5xx").
func (f Filter) StatusClassNames() []string {
	names := make([]string, len(f.StatusClasses))
	for i, c := range f.StatusClasses {
		names[i] = strconv.Itoa(c) + "xx"
	}
	return names
}

// counts reports whether a request of status class c (1-5) counts.
func (f Filter) counts(class int) bool {
	return len(f.StatusClasses) == 0 || slices.Contains(f.StatusClasses, class)
}

// ParseRule applies a rule's fields, as the edge decoded them from JSON
// (nil, bool, float64, string, []any), onto base: a new rule's defaults
// (DefaultRule) or, for an update, the stored rule, whose fields the body
// does not name stay as they are. null (nil) resets an optional field. Every
// problem is a *ValidationError naming the field; unknown fields are
// refused, so that a misspelt one is not silently left at its default.
func ParseRule(fields map[string]any, base Rule) (Rule, error) {
	r := base.Clone()
	var fe domain.FieldErrors
	for name, v := range fields {
		read, known := ruleFields[name]
		if !known {
			fe.Add(unknownField(name), "is not a field of an alert rule")
			continue
		}
		if msg := read(&r, v); msg != "" {
			fe.Add(name, "%s", msg)
		}
	}
	if len(fe.List) == 0 {
		_, thresholdGiven := fields["threshold"]
		_, resolveGiven := fields["resolve_threshold"]
		r.check(&fe, thresholdGiven, resolveGiven)
	}
	if len(fe.List) > 0 {
		slices.SortFunc(fe.List, func(a, b domain.FieldError) int { return strings.Compare(a.Field, b.Field) })
		return Rule{}, &domain.ValidationError{Message: "the alert rule is invalid", Fields: fe.List}
	}
	return r, nil
}

// ruleFields reads each field of a rule; the message says what is wrong ("" if
// nothing is).
var ruleFields = map[string]func(r *Rule, v any) string{
	"title": func(r *Rule, v any) string {
		return readDisplayText(v, &r.Title, MaxTitleLength)
	},
	"name": func(r *Rule, v any) string {
		return readText(v, &r.Filter.Name, domain.MaxNameLength)
	},
	"path_prefix": func(r *Rule, v any) string {
		if msg := readString(v, &r.Filter.PathPrefix); msg != "" || r.Filter.PathPrefix == "" {
			return msg
		}
		switch p := r.Filter.PathPrefix; {
		case !strings.HasPrefix(p, "/"):
			return "must start with /"
		case len(p) > domain.MaxPathPrefixBytes:
			return fmt.Sprintf("must be at most %d bytes", domain.MaxPathPrefixBytes)
		}
		return ""
	},
	"method": func(r *Rule, v any) string {
		if msg := readString(v, &r.Filter.Method); msg != "" || r.Filter.Method == "" {
			return msg
		}
		if !domain.IsToken(r.Filter.Method) || len(r.Filter.Method) > maxMethodLength {
			return "must be an HTTP method token such as GET"
		}
		r.Filter.Method = strings.ToUpper(r.Filter.Method)
		return ""
	},
	"status_classes": func(r *Rule, v any) string {
		const problem = `must be a list of distinct status classes such as ["4xx", "5xx"]`
		if v == nil {
			r.Filter.StatusClasses = nil
			return ""
		}
		names, ok := stringList(v)
		if !ok || len(names) > 5 {
			return problem
		}
		classes := make([]int, 0, len(names))
		for _, n := range names {
			if len(n) != 3 || n[0] < '1' || n[0] > '5' || n[1:] != "xx" || slices.Contains(classes, int(n[0]-'0')) {
				return problem
			}
			classes = append(classes, int(n[0]-'0'))
		}
		slices.Sort(classes)
		r.Filter.StatusClasses = classes
		return ""
	},
	"metric": func(r *Rule, v any) string {
		s, _ := v.(string)
		if !slices.Contains(Metrics, Metric(s)) {
			return "must be one of " + joinQuoted(Metrics)
		}
		r.Metric = Metric(s)
		return ""
	},
	"comparison": func(r *Rule, v any) string {
		s, _ := v.(string)
		all := []Comparison{Above, AboveOrEqual, Below, BelowOrEqual}
		if !slices.Contains(all, Comparison(s)) {
			return "must be one of " + joinQuoted(all)
		}
		r.Comparison = Comparison(s)
		return ""
	},
	"threshold": func(r *Rule, v any) string {
		return readNumber(v, &r.Threshold)
	},
	"resolve_threshold": func(r *Rule, v any) string {
		if v == nil {
			r.ResolveThreshold = math.NaN() // follows threshold: set in check
			return ""
		}
		return readNumber(v, &r.ResolveThreshold)
	},
	"window": func(r *Rule, v any) string {
		if v == nil {
			r.Window = DefaultWindow
			return ""
		}
		d, msg := readDuration(v)
		if msg == "" && (d < Bucket || d > MaxWindow || d%Bucket != 0) {
			msg = "must be a whole number of minutes from 1m to 24h"
		}
		r.Window = d
		return msg
	},
	"for": func(r *Rule, v any) string {
		if v == nil {
			r.For = 0
			return ""
		}
		d, msg := readDuration(v)
		if msg == "" && (d < 0 || d > MaxFor || d%time.Second != 0) {
			msg = "must be a whole number of seconds from 0s to 24h"
		}
		r.For = d
		return msg
	},
	"min_requests": func(r *Rule, v any) string {
		if v == nil {
			r.MinRequests = 0
			return ""
		}
		n, ok := wholeNumber(v)
		if !ok || n < 0 || n > MaxMinRequests {
			return fmt.Sprintf("must be a whole number from 0 to %d", MaxMinRequests)
		}
		r.MinRequests = n
		return ""
	},
	"no_data": func(r *Rule, v any) string {
		all := []NoDataPolicy{NoDataKeep, NoDataOK, NoDataFiring}
		if v == nil {
			r.NoData = NoDataKeep
			return ""
		}
		if s, _ := v.(string); !slices.Contains(all, NoDataPolicy(s)) {
			return "must be one of " + joinQuoted(all)
		}
		r.NoData = NoDataPolicy(v.(string))
		return ""
	},
	"repeat_interval": func(r *Rule, v any) string {
		if v == nil {
			r.RepeatInterval = DefaultRepeatEvery
			return ""
		}
		d, msg := readDuration(v)
		if msg == "" && d != 0 && (d < MinRepeatInterval || d > MaxRepeatInterval || d%time.Second != 0) {
			msg = "must be 0s (never) or a whole number of seconds from 1m to 720h"
		}
		r.RepeatInterval = d
		return msg
	},
	"endpoint_ids": func(r *Rule, v any) string {
		if v == nil {
			r.EndpointIDs = nil
			return ""
		}
		ids, ok := stringList(v)
		if !ok || len(ids) > MaxRuleEndpoints {
			return fmt.Sprintf("must be a list of at most %d endpoint ids", MaxRuleEndpoints)
		}
		for i, id := range ids {
			if !IsID(id, EndpointIDPrefix) || slices.Contains(ids[:i], id) {
				return "must list distinct endpoint ids such as " + EndpointIDPrefix + "Ab3dEf6hIj9kLm2n"
			}
		}
		r.EndpointIDs = ids
		return ""
	},
	"enabled": func(r *Rule, v any) string {
		enabled, ok := v.(bool)
		if !ok {
			return "must be true or false"
		}
		r.Enabled = enabled
		return ""
	},
}

// unknownField names a field that is not one, quoted when it is empty (a JSON
// key may be): an error always names something.
func unknownField(name string) string {
	if name == "" {
		return `""`
	}
	return name
}

// maxMethodLength is the longest method a submission may have.
const maxMethodLength = 32

// check validates what depends on several fields, and what a new rule must have.
func (r *Rule) check(fe *domain.FieldErrors, thresholdGiven, resolveGiven bool) {
	if r.Metric == "" {
		fe.Add("metric", "is required: one of %s", joinQuoted(Metrics))
		return
	}
	if r.CreatedAt.IsZero() && !thresholdGiven {
		fe.Add("threshold", "is required")
		return
	}
	switch {
	case r.Metric.IsRate() && (r.Threshold < 0 || r.Threshold > 1):
		fe.Add("threshold", "must be a share from 0 to 1 for %s (0.05 is 5 %%)", r.Metric)
		return
	case r.Threshold < 0:
		fe.Add("threshold", "must not be negative")
		return
	}
	// An update that moves the threshold and not the resolve threshold keeps
	// the resolve threshold only where it still makes sense; a new rule, or one
	// without hysteresis, follows the threshold.
	if math.IsNaN(r.ResolveThreshold) || (!resolveGiven && (r.CreatedAt.IsZero() || !r.healthySide(r.ResolveThreshold))) {
		r.ResolveThreshold = r.Threshold
	}
	switch {
	case r.Metric.IsRate() && (r.ResolveThreshold < 0 || r.ResolveThreshold > 1):
		fe.Add("resolve_threshold", "must be a share from 0 to 1 for %s", r.Metric)
	case r.ResolveThreshold < 0:
		fe.Add("resolve_threshold", "must not be negative")
	case !r.healthySide(r.ResolveThreshold):
		if r.Comparison.upward() {
			fe.Add("resolve_threshold", "must not be above threshold for comparison %s", r.Comparison)
		} else {
			fe.Add("resolve_threshold", "must not be below threshold for comparison %s", r.Comparison)
		}
	}
	if r.Metric.IsDuration() && !contiguous(r.Filter.StatusClasses) {
		fe.Add("status_classes", "must be neighbouring classes (such as 4xx and 5xx) for a duration metric, which is counted over one status range")
	}
}

// healthySide reports whether v lies at the threshold or on its healthy side.
func (r Rule) healthySide(v float64) bool {
	if r.Comparison.upward() {
		return v <= r.Threshold
	}
	return v >= r.Threshold
}

func contiguous(classes []int) bool {
	return len(classes) == 0 || classes[len(classes)-1]-classes[0] == len(classes)-1
}

// readText reads an optional string of at most limit characters, kept
// without its surrounding spaces; null or "" clears it.
func readText(v any, dst *string, limit int) string {
	var s string
	if msg := readString(v, &s); msg != "" {
		return msg
	}
	if utf8.RuneCountInString(s) > limit {
		return fmt.Sprintf("must be at most %d characters", limit)
	}
	*dst = strings.TrimSpace(s)
	return ""
}

// readDisplayText is readText for text written for people, shown on one line
// in the portal and in Slack (a rule's title, an endpoint's description): a
// character that would break or reorder that line is refused. A rule's name
// and path prefix are not: they match what messages hold, which may be any
// text.
func readDisplayText(v any, dst *string, limit int) string {
	var s string
	if msg := readText(v, &s, limit); msg != "" {
		return msg
	}
	if strings.IndexFunc(s, breaksDisplay) >= 0 {
		return "must not contain control characters (tabs and line breaks among them), line separators or bidirectional overrides"
	}
	*dst = s
	return ""
}

// breaksDisplay reports a control character (C0, DEL, C1), a line or
// paragraph separator, or a bidirectional embedding, override or isolate,
// which could make a title show text other than its own.
func breaksDisplay(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		('\u202A' <= r && r <= '\u202E') || ('\u2066' <= r && r <= '\u2069')
}

// readString reads a string, or null as "".
func readString(v any, dst *string) string {
	if v == nil {
		*dst = ""
		return ""
	}
	s, ok := v.(string)
	if !ok {
		return "must be a string"
	}
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	*dst = s
	return ""
}

func readNumber(v any, dst *float64) string {
	f, ok := v.(float64)
	if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return "must be a number"
	}
	*dst = f
	return ""
}

// durationText is the form of a rule's durations: whole hours, minutes and
// seconds, in that order, such as "90s", "5m" or "1h30m" (what FormatDuration
// writes, and openapi.json's pattern).
var durationText = regexp.MustCompile(`^(?:([0-9]{1,9})h)?(?:([0-9]{1,9})m)?(?:([0-9]{1,9})s)?$`)

// readDuration reads a duration such as "90s", "5m" or "1h30m".
func readDuration(v any) (time.Duration, string) {
	const problem = "must be a duration of whole hours, minutes and seconds such as 30s, 5m or 1h30m"
	s, _ := v.(string)
	parts := durationText.FindStringSubmatch(s)
	if s == "" || parts == nil {
		return 0, problem
	}
	var d time.Duration
	for i, unit := range []time.Duration{time.Hour, time.Minute, time.Second} {
		if parts[i+1] != "" {
			n, _ := strconv.ParseInt(parts[i+1], 10, 64)
			d += time.Duration(n) * unit
		}
	}
	return d, ""
}

// wholeNumber reads a number without a fractional part.
func wholeNumber(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1e15 {
		return 0, false
	}
	return int64(f), true
}

// stringList reads a list of strings.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, item := range list {
		if out[i], ok = item.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

func joinQuoted[T ~string](values []T) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = strconv.Quote(string(v))
	}
	return strings.Join(parts, ", ")
}

// FormatDuration writes a rule's duration as the API does: "5m",
// "1h30m", "45s", "0s".
func FormatDuration(d time.Duration) string {
	if d <= 0 || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	for _, unit := range []struct {
		suffix string
		width  time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / unit.width; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + unit.suffix)
			d -= n * unit.width
		}
	}
	return b.String()
}
