package alerting

import (
	"slices"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Status is where a rule stands: ok, then pending while its condition has
// held for less than For, firing, and resolved for the one evaluation after
// firing ends, before ok again.
type Status string

// The statuses of a rule.
const (
	OK       Status = "ok"
	Pending  Status = "pending"
	Firing   Status = "firing"
	Resolved Status = "resolved"
)

// Reason is why the last evaluation decided as it did.
type Reason string

// The reasons of an evaluation.
const (
	// ReasonThreshold: the metric was compared with the threshold.
	ReasonThreshold Reason = "threshold"
	// ReasonNoData: the window had no data, and the no-data policy decided.
	ReasonNoData Reason = "no_data"
	// ReasonTooLittleTraffic: fewer requests than min_requests; no verdict.
	ReasonTooLittleTraffic Reason = "too_little_traffic"
	// ReasonEvaluationError: the statistics could not be read; no verdict.
	ReasonEvaluationError Reason = "evaluation_error"
)

// Observation is what one evaluation saw of a rule's window: the counts
// and durations of GET /v1/stats over the window with the rule's filters
// (counts of the rule's status classes only), and the metric's value.
type Observation struct {
	From, To time.Time
	// Count is the requests of the counted status classes.
	Count int64
	// Status counts them by class; classes the rule does not count are zero.
	Status stats.StatusCounts
	// Errors (status 400 or more) and ServerErrors (500 or more) among them.
	Errors, ServerErrors int64
	Duration             stats.DurationSummary
	// Value is the metric; HasValue is false when the window had no data.
	Value    float64
	HasValue bool
	TopPaths []stats.KeyCount
}

// Observe reads the rule's metric off the statistics of its window.
func (r Rule) Observe(s stats.Stats) Observation {
	o := Observation{From: s.From, To: s.To, Duration: s.Total.Duration, TopPaths: slices.Clone(s.TopPaths)}
	for i, n := range s.Total.Status {
		if r.Filter.counts(i + 1) {
			o.Status[i] = n
			o.Count += n
		}
	}
	o.Errors, o.ServerErrors = o.Status[3]+o.Status[4], o.Status[4]
	switch r.Metric {
	case MetricErrorRate, MetricServerErrorRate:
		errors := o.Errors
		if r.Metric == MetricServerErrorRate {
			errors = o.ServerErrors
		}
		if o.Count > 0 {
			o.Value, o.HasValue = float64(errors)/float64(o.Count), true
		}
	case MetricRequestCount:
		o.Value, o.HasValue = float64(o.Count), true
	case MetricDurationP50, MetricDurationP95, MetricDurationP99:
		if d := o.Duration; d.Count > 0 {
			o.HasValue = true
			o.Value = map[Metric]float64{MetricDurationP50: d.P50, MetricDurationP95: d.P95, MetricDurationP99: d.P99}[r.Metric]
		}
	}
	return o
}

// State is a rule's state as the evaluator keeps it. Version orders its
// writes: a store replaces version n only with n+1 (compare-and-set).
type State struct {
	RuleID  string
	Scope   domain.Scope
	Version int64
	Status  Status
	Reason  Reason
	// Since is when Status began.
	Since time.Time
	// EvaluatedAt is the time of the last evaluation; Observation what it saw
	// (the last one that saw anything) and Error why it failed, if it did.
	EvaluatedAt time.Time
	Observation Observation
	Error       string
	// NotifiedAt is when a firing event was last sent.
	NotifiedAt time.Time
	// Transitions and Events count what the rule has had so far: the next
	// transition's Seq and the next event's id follow from them.
	Transitions int64
	Events      int64
	// Outbox holds what the last step decided and is not yet written on its own
	// (Outbox).
	Outbox Outbox
}

// Outbox is what a state change decided beside the state, written with it
// in one compare-and-set and then copied out to the history and the delivery
// queue, whose records have derived ids: whoever finds it non-empty copies it
// again (nothing is written twice) and empties it. So a decision is never
// lost, even when the replica that made it stops just after.
type Outbox struct {
	Transitions []Transition
	Deliveries  []Delivery
}

// Empty reports an outbox with nothing to copy.
func (o Outbox) Empty() bool { return len(o.Transitions) == 0 && len(o.Deliveries) == 0 }

// Clone returns a copy that shares no slice with s.
func (s State) Clone() State {
	s.Observation.TopPaths = slices.Clone(s.Observation.TopPaths)
	s.Outbox.Transitions = slices.Clone(s.Outbox.Transitions)
	s.Outbox.Deliveries = slices.Clone(s.Outbox.Deliveries)
	for i := range s.Outbox.Deliveries {
		s.Outbox.Deliveries[i] = s.Outbox.Deliveries[i].Clone()
	}
	return s
}

// Transition is one change of a rule's status, kept in its history.
type Transition struct {
	RuleID string
	Scope  domain.Scope
	// Seq numbers a rule's transitions from 1: the history's order, and with
	// RuleID its identity.
	Seq      int64
	From, To Status
	Reason   Reason
	At       time.Time
	Value    float64
	HasValue bool
}

// Step is the outcome of one evaluation: the next state (same Version:
// the caller swaps it in), the transition it made and the event it raised, if
// any.
type Step struct {
	State      State
	Transition *Transition
	Event      *Event
}

// verdict is what an evaluation says of the rule's condition.
type verdict int

const (
	noVerdict verdict = iota // the state stays
	holds                    // the condition holds
	fails                    // it does not
)

// Step evaluates the rule at time at on what was observed of its window, or on
// evalErr (non-empty when the statistics could not be read), from state st (the
// zero State for a rule never evaluated). It is the whole state machine:
//
//   - ok or resolved: a holding condition makes it pending, or firing at once
//     when For is 0; otherwise resolved becomes ok.
//   - pending: firing once the condition has held For since it became
//     pending; ok when the condition no longer holds.
//   - firing: resolved when the metric no longer compares with
//     ResolveThreshold (hysteresis: it may have to fall further than the
//     threshold); sent again every RepeatInterval while it holds.
//
// No data decides as the rule's no-data policy says; too little traffic
// (under MinRequests) and an evaluation error give no verdict, and the status
// stays. Becoming firing and resolved raise events; Step names each event,
// deriving its id from the rule and the events before it.
func (r Rule) Step(st State, at time.Time, obs Observation, evalErr string) Step {
	next := st.Clone()
	next.RuleID, next.Scope = r.ID, r.Scope
	if next.Status == "" {
		next.Status, next.Since = OK, at
	}
	next.EvaluatedAt, next.Error = at, evalErr
	if evalErr == "" {
		next.Observation = obs
	}
	v, reason := r.verdict(next.Status, obs, evalErr)
	next.Reason = reason
	step := Step{State: next}
	move := func(to Status, event EventType) {
		from := step.State.Status
		step.State.Transitions++
		step.Transition = &Transition{RuleID: r.ID, Scope: r.Scope, Seq: step.State.Transitions,
			From: from, To: to, Reason: reason, At: at, Value: obs.Value, HasValue: obs.HasValue && evalErr == ""}
		step.State.Status, step.State.Since = to, at
		if event != "" {
			step.Event = r.event(&step.State, event, from, at)
		}
	}
	switch next.Status {
	case OK, Resolved:
		switch {
		case v == holds && r.For == 0:
			move(Firing, EventFiring)
		case v == holds:
			move(Pending, "")
		case next.Status == Resolved:
			move(OK, "")
		}
	case Pending:
		switch {
		case v == holds && at.Sub(next.Since) >= r.For:
			move(Firing, EventFiring)
		case v == fails:
			move(OK, "")
		}
	case Firing:
		switch {
		case v == fails:
			move(Resolved, EventResolved)
		case v == holds && r.RepeatInterval > 0 && at.Sub(next.NotifiedAt) >= r.RepeatInterval:
			step.Event = r.event(&step.State, EventFiring, Firing, at)
			step.Event.Repeat = true
		}
	}
	return step
}

// verdict judges the condition for a rule in status, with the threshold that
// applies there: ResolveThreshold while firing, Threshold otherwise.
func (r Rule) verdict(status Status, obs Observation, evalErr string) (verdict, Reason) {
	switch {
	case evalErr != "":
		return noVerdict, ReasonEvaluationError
	case !obs.HasValue:
		switch r.NoData {
		case NoDataOK:
			return fails, ReasonNoData
		case NoDataFiring:
			return holds, ReasonNoData
		}
		return noVerdict, ReasonNoData
	case r.Metric != MetricRequestCount && obs.Count < r.MinRequests:
		return noVerdict, ReasonTooLittleTraffic
	}
	threshold := r.Threshold
	if status == Firing {
		threshold = r.ResolveThreshold
	}
	if r.Comparison.Holds(obs.Value, threshold) {
		return holds, ReasonThreshold
	}
	return fails, ReasonThreshold
}

// event raises the rule's next event of type t in state st (counted there).
func (r Rule) event(st *State, t EventType, previous Status, at time.Time) *Event {
	st.Events++
	if t == EventFiring {
		st.NotifiedAt = at
	}
	return &Event{
		ID:   DerivedID(EventIDPrefix, r.ID, strconv.FormatInt(st.Events, 10)),
		Type: t, At: at, Rule: r.Clone(), Status: st.Status, Previous: previous, Reason: st.Reason,
		Since: st.Since, Observation: st.Observation,
	}
}
