package alerting_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
)

// alertStart is the fake clock's first evaluation.
var alertStart = time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)

// window is one evaluation's traffic: requests, of which errors are 5xx;
// requests < 0 means the statistics could not be read.
type window struct{ requests, errors int64 }

// stats are the statistics of a window as the store would answer them.
func (w window) stats(r alerting.Rule, at time.Time) stats.Stats {
	q := r.StatsQuery(at)
	s := stats.New(q)
	s.Total.Count = w.requests
	s.Total.Status[1] = w.requests - w.errors
	s.Total.Status[4] = w.errors
	if w.requests > 0 {
		s.Total.Duration = stats.DurationSummary{Count: w.requests, P50: 10, P95: float64(20 * w.errors), P99: 400}
	}
	return s
}

// run evaluates r once a minute on windows, from the zero state, and returns
// the status after each evaluation, the transitions and the events.
func run(r alerting.Rule, windows []window) (statuses []alerting.Status, transitions []alerting.Transition, events []alerting.Event, last alerting.State) {
	var st alerting.State
	at := alertStart
	for _, w := range windows {
		var step alerting.Step
		if w.requests < 0 {
			step = r.Step(st, at, alerting.Observation{}, "store unavailable")
		} else {
			step = r.Step(st, at, r.Observe(w.stats(r, at)), "")
		}
		st = step.State
		statuses = append(statuses, st.Status)
		if step.Transition != nil {
			transitions = append(transitions, *step.Transition)
		}
		if step.Event != nil {
			events = append(events, *step.Event)
		}
		at = at.Add(time.Minute)
	}
	return statuses, transitions, events, st
}

func serverErrorRule(edit func(*alerting.Rule)) alerting.Rule {
	r := alerting.DefaultRule()
	r.ID, r.Scope = "alr_0123456789abcdef", domain.Scope{Account: "acme", Domain: domain.DomainLive}
	r.Metric, r.Comparison, r.Threshold, r.ResolveThreshold = alerting.MetricServerErrorRate, alerting.Above, 0.10, 0.10
	r.RepeatInterval = 0
	if edit != nil {
		edit(&r)
	}
	return r
}

func statusLine(statuses []alerting.Status) string {
	parts := make([]string, len(statuses))
	for i, s := range statuses {
		parts[i] = string(s)
	}
	return strings.Join(parts, " ")
}

func eventLine(events []alerting.Event) string {
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = fmt.Sprintf("%s@%d", e.Type, int(e.At.Sub(alertStart)/time.Minute))
	}
	return strings.Join(parts, " ")
}

func TestAlertGoesPendingFiringResolvedOK(t *testing.T) {
	r := serverErrorRule(func(r *alerting.Rule) { r.For = 2 * time.Minute; r.ResolveThreshold = 0.05 })
	statuses, transitions, events, last := run(r, []window{
		{100, 0},  // 0 ok
		{100, 20}, // 1 pending: 20 % > 10 %
		{100, 20}, // 2 pending: held 1m of 2m
		{100, 20}, // 3 firing: held 2m
		{100, 8},  // 4 firing: 8 % is under the threshold, not under the resolve threshold
		{100, 5},  // 5 resolved: 5 % is not above 5 %
		{100, 0},  // 6 ok
	})
	if got, want := statusLine(statuses), "ok pending pending firing firing resolved ok"; got != want {
		t.Errorf("statuses %q, want %q", got, want)
	}
	if got, want := eventLine(events), "alert.firing@3 alert.resolved@5"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	wantMoves := []string{"ok>pending@1", "pending>firing@3", "firing>resolved@5", "resolved>ok@6"}
	if len(transitions) != len(wantMoves) {
		t.Fatalf("transitions %+v, want %v", transitions, wantMoves)
	}
	for i, tr := range transitions {
		got := fmt.Sprintf("%s>%s@%d", tr.From, tr.To, int(tr.At.Sub(alertStart)/time.Minute))
		if got != wantMoves[i] || tr.Seq != int64(i+1) || tr.Reason != alerting.ReasonThreshold || tr.RuleID != r.ID {
			t.Errorf("transition %d = %s seq %d reason %s, want %s seq %d reason threshold", i, got, tr.Seq, tr.Reason, wantMoves[i], i+1)
		}
	}
	firing, resolved := events[0], events[1]
	if firing.Observation.Value != 0.2 || firing.Threshold() != 0.10 || firing.Previous != alerting.Pending ||
		firing.Observation.Count != 100 || firing.Observation.ServerErrors != 20 {
		t.Errorf("firing event %+v: want value 0.2 of 100 requests, 20 server errors, threshold 0.1, from pending", firing)
	}
	if resolved.Observation.Value != 0.05 || resolved.Threshold() != 0.05 || resolved.Status != alerting.Resolved {
		t.Errorf("resolved event %+v: want value 0.05, resolve threshold 0.05", resolved)
	}
	if firing.ID == resolved.ID || !alerting.IsID(firing.ID, alerting.EventIDPrefix) {
		t.Errorf("event ids %q and %q: want two distinct evt_ ids", firing.ID, resolved.ID)
	}
	if last.Transitions != 4 || last.Events != 2 {
		t.Errorf("state counts %d transitions and %d events, want 4 and 2", last.Transitions, last.Events)
	}
}

// The same evaluations of the same rule raise events with the same ids: two
// replicas deciding alike write one event.
func TestAlertEventIDsAreDerived(t *testing.T) {
	r := serverErrorRule(nil)
	windows := []window{{10, 5}, {10, 0}, {10, 5}}
	_, _, a, _ := run(r, windows)
	_, _, b, _ := run(r, windows)
	if len(a) != 3 || a[0].ID != b[0].ID || a[2].ID != b[2].ID || a[0].ID == a[2].ID {
		t.Errorf("events %v and %v: want the same three ids, all distinct", a, b)
	}
}

func TestAlertForZeroFiresAtOnce(t *testing.T) {
	statuses, _, events, _ := run(serverErrorRule(nil), []window{{10, 0}, {10, 5}, {10, 0}})
	if got, want := statusLine(statuses), "ok firing resolved"; got != want {
		t.Errorf("statuses %q, want %q", got, want)
	}
	if got, want := eventLine(events), "alert.firing@1 alert.resolved@2"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A condition that stops holding while pending goes back to ok, without any
// event, and For counts again from the next time it holds.
func TestAlertPendingThatClearsSendsNothing(t *testing.T) {
	r := serverErrorRule(func(r *alerting.Rule) { r.For = 2 * time.Minute })
	statuses, _, events, _ := run(r, []window{{10, 5}, {10, 5}, {10, 0}, {10, 5}, {10, 5}, {10, 5}})
	if got, want := statusLine(statuses), "pending pending ok pending pending firing"; got != want {
		t.Errorf("statuses %q, want %q", got, want)
	}
	if got, want := eventLine(events), "alert.firing@5"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// Input that swings around the threshold every minute does not make the alert
// swing: the resolve threshold holds it firing, and For keeps a lone spike out.
func TestAlertFlappingInputDoesNotFlap(t *testing.T) {
	r := serverErrorRule(func(r *alerting.Rule) { r.ResolveThreshold = 0.02 })
	var windows []window
	for range 10 {
		windows = append(windows, window{100, 12}, window{100, 8}) // 12 %, 8 %: either side of 10 %
	}
	windows = append(windows, window{100, 1}, window{100, 1})
	statuses, _, events, _ := run(r, windows)
	if got, want := eventLine(events), "alert.firing@0 alert.resolved@20"; got != want {
		t.Errorf("events %q, want one firing and one resolution: %q (statuses %s)", got, want, statusLine(statuses))
	}
	// Without hysteresis and For the same input flaps every minute: the control.
	_, _, flapping, _ := run(serverErrorRule(nil), windows)
	if len(flapping) < 19 {
		t.Errorf("without hysteresis: %d events, want one per swing (the input really flaps)", len(flapping))
	}
	// A spike of one minute under For: never fires.
	_, _, spike, _ := run(serverErrorRule(func(r *alerting.Rule) { r.For = 2 * time.Minute }),
		[]window{{100, 50}, {100, 0}, {100, 50}, {100, 0}})
	if len(spike) != 0 {
		t.Errorf("one-minute spikes under a For of 2m raised %s", eventLine(spike))
	}
}

func TestAlertMinRequestsGivesNoVerdict(t *testing.T) {
	r := serverErrorRule(func(r *alerting.Rule) { r.MinRequests = 20 })
	statuses, _, events, last := run(r, []window{
		{5, 5},   // 100 % of 5 requests: too little traffic, stays ok
		{50, 10}, // 20 % of 50: firing
		{3, 0},   // 0 % of 3: too little traffic, stays firing
		{50, 0},  // resolved
	})
	if got, want := statusLine(statuses), "ok firing firing resolved"; got != want {
		t.Errorf("statuses %q, want %q", got, want)
	}
	if got, want := eventLine(events), "alert.firing@1 alert.resolved@3"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	_, _, _, st := run(r, []window{{5, 5}})
	if st.Reason != alerting.ReasonTooLittleTraffic || st.Status != alerting.OK {
		t.Errorf("5 requests under min_requests 20: %s (%s), want ok (too_little_traffic)", st.Status, st.Reason)
	}
	if last.Reason != alerting.ReasonThreshold {
		t.Errorf("last reason %s, want threshold", last.Reason)
	}
	// A request count ignores min_requests: zero requests is its value.
	count := serverErrorRule(func(r *alerting.Rule) {
		r.Metric, r.Comparison, r.Threshold, r.ResolveThreshold, r.MinRequests = alerting.MetricRequestCount, alerting.Below, 1, 1, 20
	})
	if statuses, _, _, _ := run(count, []window{{5, 0}, {0, 0}}); statusLine(statuses) != "ok firing" {
		t.Errorf("request_count < 1 over 5 then 0 requests: %s, want ok firing", statusLine(statuses))
	}
}

func TestAlertNoDataPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy alerting.NoDataPolicy
		want   string
		events string
	}{
		{alerting.NoDataKeep, "firing firing firing", "alert.firing@0"},
		{alerting.NoDataOK, "firing resolved ok", "alert.firing@0 alert.resolved@1"},
		{alerting.NoDataFiring, "firing firing firing", "alert.firing@0"},
	} {
		r := serverErrorRule(func(r *alerting.Rule) { r.NoData = tc.policy })
		statuses, _, events, last := run(r, []window{{10, 5}, {0, 0}, {0, 0}})
		if statusLine(statuses) != tc.want || eventLine(events) != tc.events || last.Reason != alerting.ReasonNoData {
			t.Errorf("no_data %s: %s, events %s, reason %s; want %s, events %s, reason no_data",
				tc.policy, statusLine(statuses), eventLine(events), last.Reason, tc.want, tc.events)
		}
	}
	// "firing" makes silence an incident from ok.
	r := serverErrorRule(func(r *alerting.Rule) { r.NoData = alerting.NoDataFiring })
	if statuses, _, _, _ := run(r, []window{{10, 0}, {0, 0}}); statusLine(statuses) != "ok firing" {
		t.Errorf("no_data firing on silence: %s, want ok firing", statusLine(statuses))
	}
	// A percentile has no data without durations.
	p95 := serverErrorRule(func(r *alerting.Rule) {
		r.Metric, r.Threshold, r.ResolveThreshold, r.NoData = alerting.MetricDurationP95, 100, 100, alerting.NoDataOK
	})
	if statuses, _, _, _ := run(p95, []window{{10, 10}, {0, 0}}); statusLine(statuses) != "firing resolved" {
		t.Errorf("p95 of 200 ms > 100, then no durations with no_data ok: %s, want firing resolved", statusLine(statuses))
	}
}

func TestAlertEvaluationErrorKeepsTheStatus(t *testing.T) {
	statuses, _, events, last := run(serverErrorRule(nil), []window{{10, 5}, {-1, 0}, {-1, 0}})
	if statusLine(statuses) != "firing firing firing" || len(events) != 1 {
		t.Errorf("errors while firing: %s with %d events, want firing throughout and one event", statusLine(statuses), len(events))
	}
	if last.Reason != alerting.ReasonEvaluationError || last.Error == "" || last.Observation.Count != 10 {
		t.Errorf("state after errors %+v: want reason evaluation_error, the error, the last observation kept", last)
	}
}

func TestAlertRepeatsWhileFiring(t *testing.T) {
	r := serverErrorRule(func(r *alerting.Rule) { r.RepeatInterval = 2 * time.Minute })
	_, _, events, _ := run(r, []window{{10, 5}, {10, 5}, {10, 5}, {10, 5}, {10, 5}, {10, 0}})
	if got, want := eventLine(events), "alert.firing@0 alert.firing@2 alert.firing@4 alert.resolved@5"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if events[0].Repeat || !events[1].Repeat {
		t.Errorf("repeat flags %v %v, want false then true", events[0].Repeat, events[1].Repeat)
	}
}

func TestAlertWindowEndsOneBucketBeforeNow(t *testing.T) {
	r := serverErrorRule(nil)
	now := time.Date(2026, 3, 2, 10, 7, 31, 0, time.UTC)
	from, to := r.WindowAt(now)
	if want := time.Date(2026, 3, 2, 10, 6, 0, 0, time.UTC); !to.Equal(want) || !from.Equal(want.Add(-5*time.Minute)) {
		t.Errorf("window at %s = [%s, %s), want [10:01, 10:06)", now, from, to)
	}
	q := r.StatsQuery(now)
	if q.Interval.Width != time.Minute || q.BucketCount() != 5 || !q.Filter.From.Equal(from) || !q.Filter.To.Equal(to) {
		t.Errorf("stats query %+v: want five 1m buckets over the window", q)
	}
}

// Counts and rates read the rule's status classes off the buckets; a
// percentile narrows the query to them.
func TestAlertStatusClasses(t *testing.T) {
	r := serverErrorRule(func(r *alerting.Rule) {
		r.Metric, r.Threshold, r.Filter.StatusClasses = alerting.MetricRequestCount, 3, []int{4, 5}
	})
	s := stats.New(r.StatsQuery(alertStart))
	s.Total.Count, s.Total.Status = 10, stats.StatusCounts{0, 6, 0, 3, 1}
	if o := r.Observe(s); o.Value != 4 || o.Count != 4 || o.Errors != 4 || o.Status[1] != 0 {
		t.Errorf("4xx and 5xx of 6 2xx, 3 4xx, 1 5xx: %+v, want 4", o)
	}
	if q := r.StatsQuery(alertStart); q.Filter.StatusMin != 0 {
		t.Errorf("a count's query filters statuses (%d): want the classes read off the buckets", q.Filter.StatusMin)
	}
	r.Metric = alerting.MetricDurationP99
	if q := r.StatsQuery(alertStart); q.Filter.StatusMin != 400 || q.Filter.StatusMax != 599 {
		t.Errorf("a percentile's query filters %d-%d, want 400-599", q.Filter.StatusMin, q.Filter.StatusMax)
	}
}
