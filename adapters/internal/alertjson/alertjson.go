// Package alertjson is alerting's JSON: the rule, state, history, endpoint and
// delivery log objects of the HTTP API, and the Standard Webhooks payload of an
// event, which holds the same rule and window objects. One mapping serves the
// API replies, the webhook bodies, and the stores that keep a rule or an event
// as this JSON, so they cannot disagree. Times are written as every reqlog
// timestamp is (UTC, six fractional digits), durations as "5m" or "1h30m".
//
// Every decoder reads what its encoder writes, back to the same domain value
// (the stores rely on it); they are not for input from clients, which
// alerting.ParseRule and alerting.ParseEndpoint validate.
package alertjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
)

// Rule is a rule as the API shows it. Empty optional text is null.
type Rule struct {
	ID               string    `json:"id"`
	Title            *string   `json:"title"`
	Name             *string   `json:"name"`
	PathPrefix       *string   `json:"path_prefix"`
	Method           *string   `json:"method"`
	StatusClasses    []string  `json:"status_classes"`
	Metric           string    `json:"metric"`
	Comparison       string    `json:"comparison"`
	Threshold        float64   `json:"threshold"`
	ResolveThreshold float64   `json:"resolve_threshold"`
	Window           string    `json:"window"`
	For              string    `json:"for"`
	MinRequests      int64     `json:"min_requests"`
	NoData           string    `json:"no_data"`
	RepeatInterval   string    `json:"repeat_interval"`
	EndpointIDs      []string  `json:"endpoint_ids"`
	Enabled          bool      `json:"enabled"`
	CreatedAt        Timestamp `json:"created_at"`
	UpdatedAt        Timestamp `json:"updated_at"`
}

// Timestamp is a time written as domain.FormatTime writes it; the zero time
// is null.
type Timestamp time.Time

// MarshalJSON writes the time, or null for the zero time.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + domain.FormatTime(time.Time(t)) + `"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *Timestamp) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		*t = Timestamp{}
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = Timestamp(parsed.UTC())
	return nil
}

func (t Timestamp) time() time.Time { return time.Time(t) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// RuleOf is r as the API shows it.
func RuleOf(r alerting.Rule) Rule {
	ids := r.EndpointIDs
	if ids == nil {
		ids = []string{}
	}
	return Rule{ID: r.ID, Title: optional(r.Title), Name: optional(r.Filter.Name), PathPrefix: optional(r.Filter.PathPrefix),
		Method: optional(r.Filter.Method), StatusClasses: r.Filter.StatusClassNames(), Metric: string(r.Metric),
		Comparison: string(r.Comparison), Threshold: r.Threshold, ResolveThreshold: r.ResolveThreshold,
		Window: alerting.FormatDuration(r.Window), For: alerting.FormatDuration(r.For), MinRequests: r.MinRequests,
		NoData: string(r.NoData), RepeatInterval: alerting.FormatDuration(r.RepeatInterval), EndpointIDs: ids,
		Enabled: r.Enabled, CreatedAt: Timestamp(r.CreatedAt), UpdatedAt: Timestamp(r.UpdatedAt)}
}

// Domain is the rule j shows, in scope.
func (j Rule) Domain(scope domain.Scope) (alerting.Rule, error) {
	r := alerting.Rule{ID: j.ID, Scope: scope, Title: deref(j.Title),
		Filter: alerting.Filter{Name: deref(j.Name), PathPrefix: deref(j.PathPrefix), Method: deref(j.Method)},
		Metric: alerting.Metric(j.Metric), Comparison: alerting.Comparison(j.Comparison), Threshold: j.Threshold,
		ResolveThreshold: j.ResolveThreshold, MinRequests: j.MinRequests, NoData: alerting.NoDataPolicy(j.NoData),
		EndpointIDs: j.EndpointIDs, Enabled: j.Enabled, CreatedAt: j.CreatedAt.time(), UpdatedAt: j.UpdatedAt.time()}
	for _, name := range j.StatusClasses {
		class, err := strconv.Atoi(strings.TrimSuffix(name, "xx"))
		if err != nil {
			return alerting.Rule{}, fmt.Errorf("alertjson: status class %q", name)
		}
		r.Filter.StatusClasses = append(r.Filter.StatusClasses, class)
	}
	var err error
	if r.Window, r.For, r.RepeatInterval, err = j.Durations(); err != nil {
		return alerting.Rule{}, fmt.Errorf("alertjson: %w", err)
	}
	return r, nil
}

// Durations reads j's window, for and repeat_interval.
func (j Rule) Durations() (window, forDur, repeat time.Duration, err error) {
	for _, d := range []struct {
		text string
		dst  *time.Duration
	}{{j.Window, &window}, {j.For, &forDur}, {j.RepeatInterval, &repeat}} {
		if *d.dst, err = time.ParseDuration(d.text); err != nil {
			return 0, 0, 0, fmt.Errorf("duration %q: %w", d.text, err)
		}
	}
	return window, forDur, repeat, nil
}

// Statuses counts requests by status class.
type Statuses struct {
	C1xx int64 `json:"1xx"`
	C2xx int64 `json:"2xx"`
	C3xx int64 `json:"3xx"`
	C4xx int64 `json:"4xx"`
	C5xx int64 `json:"5xx"`
}

// Durations summarises durations in milliseconds.
type Durations struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// Path is one of a window's most frequent paths.
type Path struct {
	Path   string `json:"path"`
	Count  int64  `json:"count"`
	Errors int64  `json:"errors"`
}

// Window is what an evaluation saw of a rule's window: GET /v1/stats' total
// over it, and the metric's value (null without data).
type Window struct {
	From         Timestamp  `json:"from"`
	To           Timestamp  `json:"to"`
	Interval     string     `json:"interval"`
	Count        int64      `json:"count"`
	Status       Statuses   `json:"status"`
	Errors       int64      `json:"errors"`
	ServerErrors int64      `json:"server_errors"`
	Duration     *Durations `json:"duration_ms"`
	Value        *float64   `json:"value"`
	TopPaths     []Path     `json:"top_paths"`
}

// MaxPayloadPath is how much of each top path an event carries: paths may be
// 4,096 characters, and the payload stays small.
const MaxPayloadPath = 512

// WindowOf is o as the API and the payload show it.
func WindowOf(o alerting.Observation) Window {
	s := o.Status
	w := Window{From: Timestamp(o.From), To: Timestamp(o.To), Interval: "1m", Count: o.Count,
		Status: Statuses{s[0], s[1], s[2], s[3], s[4]}, Errors: o.Errors, ServerErrors: o.ServerErrors, TopPaths: []Path{}}
	if d := o.Duration; d.Count > 0 {
		w.Duration = &Durations{Count: d.Count, P50: d.P50, P95: d.P95, P99: d.P99}
	}
	if o.HasValue {
		v := o.Value
		w.Value = &v
	}
	for _, p := range o.TopPaths {
		w.TopPaths = append(w.TopPaths, Path{Path: truncate(p.Key, MaxPayloadPath), Count: p.Count, Errors: p.Errors})
	}
	return w
}

// truncate cuts s to at most n bytes on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Domain is the observation w shows.
func (w Window) Domain() alerting.Observation {
	s := w.Status
	o := alerting.Observation{From: w.From.time(), To: w.To.time(), Count: w.Count,
		Status: stats.StatusCounts{s.C1xx, s.C2xx, s.C3xx, s.C4xx, s.C5xx}, Errors: w.Errors, ServerErrors: w.ServerErrors}
	if d := w.Duration; d != nil {
		o.Duration = stats.DurationSummary{Count: d.Count, P50: d.P50, P95: d.P95, P99: d.P99}
	}
	if w.Value != nil {
		o.Value, o.HasValue = *w.Value, true
	}
	for _, p := range w.TopPaths {
		o.TopPaths = append(o.TopPaths, stats.KeyCount{Key: p.Path, Count: p.Count, Errors: p.Errors})
	}
	return o
}

// Payload is an event as Standard Webhooks carries it: type, timestamp, data.
type Payload struct {
	Type      string    `json:"type"`
	Timestamp Timestamp `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData is what an event says: the rule, its status before and after, the
// value and the threshold it was compared with, the window, a portal link.
type EventData struct {
	EventID        string    `json:"event_id"`
	Rule           Rule      `json:"rule"`
	Status         string    `json:"status"`
	PreviousStatus string    `json:"previous_status"`
	Reason         *string   `json:"reason"`
	Since          Timestamp `json:"since"`
	Repeat         bool      `json:"repeat"`
	Value          *float64  `json:"value"`
	Threshold      float64   `json:"threshold"`
	Window         Window    `json:"window"`
	PortalURL      *string   `json:"portal_url"`
}

// PayloadOf is e as Standard Webhooks carries it.
func PayloadOf(e alerting.Event) Payload {
	w := WindowOf(e.Observation)
	return Payload{Type: string(e.Type), Timestamp: Timestamp(e.At), Data: EventData{
		EventID: e.ID, Rule: RuleOf(e.Rule), Status: string(e.Status), PreviousStatus: string(e.Previous),
		Reason: optional(string(e.Reason)), Since: Timestamp(e.Since), Repeat: e.Repeat, Value: w.Value,
		Threshold: e.Threshold(), Window: w, PortalURL: optional(e.PortalURL)}}
}

// EncodeEvent is the JSON body of e.
func EncodeEvent(e alerting.Event) ([]byte, error) {
	raw, err := json.Marshal(PayloadOf(e))
	if err != nil {
		return nil, fmt.Errorf("alertjson: encode event %s: %w", e.ID, err)
	}
	return raw, nil
}

// DecodeEvent reads what EncodeEvent wrote, for rule scope.
func DecodeEvent(raw []byte, scope domain.Scope) (alerting.Event, error) {
	var p Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return alerting.Event{}, fmt.Errorf("alertjson: decode event: %w", err)
	}
	r, err := p.Data.Rule.Domain(scope)
	if err != nil {
		return alerting.Event{}, err
	}
	return alerting.Event{ID: p.Data.EventID, Type: alerting.EventType(p.Type), At: p.Timestamp.time(), Rule: r,
		Status: alerting.Status(p.Data.Status), Previous: alerting.Status(p.Data.PreviousStatus),
		Reason: alerting.Reason(deref(p.Data.Reason)), Since: p.Data.Since.time(), Observation: p.Data.Window.Domain(),
		Repeat: p.Data.Repeat, PortalURL: deref(p.Data.PortalURL)}, nil
}

// EncodeRule and DecodeRule store a rule as its API object.
func EncodeRule(r alerting.Rule) ([]byte, error) { return json.Marshal(RuleOf(r)) }

// DecodeRule reads what EncodeRule wrote, in scope.
func DecodeRule(raw []byte, scope domain.Scope) (alerting.Rule, error) {
	var j Rule
	if err := json.Unmarshal(raw, &j); err != nil {
		return alerting.Rule{}, fmt.Errorf("alertjson: decode rule: %w", err)
	}
	return j.Domain(scope)
}

// EncodeWindow and DecodeWindow store an observation as its API object.
func EncodeWindow(o alerting.Observation) ([]byte, error) { return json.Marshal(WindowOf(o)) }

// DecodeWindow reads what EncodeWindow wrote.
func DecodeWindow(raw []byte) (alerting.Observation, error) {
	var w Window
	if err := json.Unmarshal(raw, &w); err != nil {
		return alerting.Observation{}, fmt.Errorf("alertjson: decode window: %w", err)
	}
	return w.Domain(), nil
}

// Transition is one change of a rule's status.
type Transition struct {
	Seq    int64     `json:"seq"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     Timestamp `json:"at"`
	Value  *float64  `json:"value"`
}

// TransitionOf is tr as the API shows it.
func TransitionOf(tr alerting.Transition) Transition {
	j := Transition{Seq: tr.Seq, From: string(tr.From), To: string(tr.To), Reason: string(tr.Reason), At: Timestamp(tr.At)}
	if tr.HasValue {
		v := tr.Value
		j.Value = &v
	}
	return j
}

// Period is a span when a rule was firing; To is null while it lasts.
type Period struct {
	From Timestamp `json:"from"`
	To   Timestamp `json:"to"`
}

// State is a rule with its state, as GET /v1/alerts/states shows it. A rule
// never evaluated is "ok" with a null evaluated_at.
type State struct {
	Rule        Rule         `json:"rule"`
	Status      string       `json:"status"`
	Reason      *string      `json:"reason"`
	Since       Timestamp    `json:"since"`
	EvaluatedAt Timestamp    `json:"evaluated_at"`
	Error       *string      `json:"error"`
	Value       *float64     `json:"value"`
	Window      *Window      `json:"window"`
	Recent      []Transition `json:"recent_transitions"`
	Firing      []Period     `json:"firing_periods"`
}

// StateOf shows rule r in state st with its recent transitions and firing
// periods.
func StateOf(r alerting.Rule, st alerting.State, recent []alerting.Transition, firing [][2]time.Time) State {
	j := State{Rule: RuleOf(r), Status: string(st.Status), Reason: optional(string(st.Reason)), Since: Timestamp(st.Since),
		EvaluatedAt: Timestamp(st.EvaluatedAt), Error: optional(st.Error), Recent: []Transition{}, Firing: []Period{}}
	if j.Status == "" {
		j.Status = string(alerting.OK)
	}
	if !st.Observation.From.IsZero() {
		w := WindowOf(st.Observation)
		j.Window, j.Value = &w, w.Value
	}
	for _, tr := range recent {
		j.Recent = append(j.Recent, TransitionOf(tr))
	}
	for _, p := range firing {
		j.Firing = append(j.Firing, Period{From: Timestamp(p[0]), To: Timestamp(p[1])})
	}
	return j
}

// Endpoint is a webhook endpoint as the API shows it: never its secrets, save
// the one just made (Secret, on creation and rotation only).
type Endpoint struct {
	ID             string    `json:"id"`
	URL            string    `json:"url"`
	Description    *string   `json:"description"`
	Format         string    `json:"format"`
	Enabled        bool      `json:"enabled"`
	DisabledReason *string   `json:"disabled_reason"`
	SecretSetAt    Timestamp `json:"secret_created_at"`
	CreatedAt      Timestamp `json:"created_at"`
	UpdatedAt      Timestamp `json:"updated_at"`
	Secret         string    `json:"secret,omitempty"`
}

// EndpointOf is e as the API shows it, without secrets.
func EndpointOf(e alerting.Endpoint) Endpoint {
	j := Endpoint{ID: e.ID, URL: e.URL, Description: optional(e.Description), Format: string(e.Format), Enabled: e.Enabled,
		DisabledReason: optional(e.DisabledReason), CreatedAt: Timestamp(e.CreatedAt), UpdatedAt: Timestamp(e.UpdatedAt)}
	if n := len(e.Secrets); n > 0 {
		j.SecretSetAt = Timestamp(e.Secrets[n-1].CreatedAt)
	}
	return j
}

// EndpointWithSecret is e with its current secret, shown once.
func EndpointWithSecret(e alerting.Endpoint) Endpoint {
	j := EndpointOf(e)
	if n := len(e.Secrets); n > 0 {
		j.Secret = e.Secrets[n-1].Secret
	}
	return j
}

// Attempt is one entry of the delivery log.
type Attempt struct {
	ID         string    `json:"id"`
	DeliveryID string    `json:"delivery_id"`
	WebhookID  string    `json:"webhook_id"`
	EventType  string    `json:"event_type"`
	RuleID     string    `json:"rule_id"`
	Attempt    int       `json:"attempt"`
	At         Timestamp `json:"at"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	DurationMS float64   `json:"duration_ms"`
	Response   *string   `json:"response"`
}

// AttemptOf is a as the API shows it.
func AttemptOf(a alerting.Attempt) Attempt {
	j := Attempt{ID: a.ID, DeliveryID: a.DeliveryID, WebhookID: a.EventID, EventType: string(a.EventType), RuleID: a.RuleID,
		Attempt: a.Number, At: Timestamp(a.At), Error: optional(a.Error),
		DurationMS: float64(a.Duration.Microseconds()) / 1000, Response: optional(a.Response)}
	if a.StatusCode != 0 {
		code := a.StatusCode
		j.StatusCode = &code
	}
	return j
}

// Examples of the bodies Fields reads, for its error.
const (
	RuleExample     = `{"metric": "error_rate", "threshold": 0.05}`
	EndpointExample = `{"url": "https://example.com/webhooks/reqlog"}`
)

// Fields decodes a request body that must be one JSON object into its
// fields' values (nil, bool, float64, string, []any, map[string]any), for
// alerting.ParseRule and alerting.ParseEndpoint. Anything else is a
// *domain.ValidationError showing example; a number beyond float64 (1e400),
// which JSON allows, is one naming its field.
func Fields(body []byte, example string) (map[string]any, error) {
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // encoding/json refuses 1e400 as float64 without saying where
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		return nil, &domain.ValidationError{Message: "the request body must be a JSON object such as " + example}
	}
	for name, v := range fields {
		var ok bool
		if fields[name], ok = floats(v); !ok {
			return nil, &domain.ValidationError{Message: "the request body is invalid",
				Fields: []domain.FieldError{{Field: name, Message: "holds a number beyond ±1.8e308"}}}
		}
	}
	return fields, nil
}

// floats is v with its json.Numbers, however deep, as float64; false if one
// does not fit.
func floats(v any) (any, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	case []any:
		for i := range v {
			var ok bool
			if v[i], ok = floats(v[i]); !ok {
				return nil, false
			}
		}
	case map[string]any:
		for k := range v {
			var ok bool
			if v[k], ok = floats(v[k]); !ok {
				return nil, false
			}
		}
	}
	return v, true
}
