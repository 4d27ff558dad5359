package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// AlertStoreMaker returns a fresh, empty alert store for one subtest and
// registers its own cleanup with t.Cleanup, as StoreMaker does.
type AlertStoreMaker func(ctx context.Context, t *testing.T) (ports.AlertStore, error)

// RunAlertStoreTests checks newStore's stores against the ports.AlertStore
// contract: the configuration's round trips and scoping, the state's
// compare-and-set, the idempotent history and queue, the leases, and two
// replicas of the evaluator and the delivery worker on one store (which must
// deliver each event once per endpoint, and at least once, with the same
// webhook-id, when a replica stops mid-delivery). Each subtest gets a fresh
// store.
func RunAlertStoreTests(t *testing.T, newStore AlertStoreMaker) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s ports.AlertStore)
	}{
		{"RulesRoundTripEveryField", testAlertRulesRoundTrip},
		{"RulesCreateUpdateDelete", testAlertRulesLifecycle},
		{"EndpointsRoundTripAndLifecycle", testAlertEndpoints},
		{"ScopeIsolation", testAlertScopeIsolation},
		{"ReturnedRecordsBelongToCaller", testAlertCopies},
		{"StateCompareAndSet", testAlertStateSwap},
		{"StateRoundTripsItsOutbox", testAlertStateRoundTrip},
		{"ConcurrentSwapsOneWins", testAlertConcurrentSwaps},
		{"DeleteRuleTakesStateAndHistory", testAlertDeleteRuleCascades},
		{"TransitionsIdempotentNewestFirst", testAlertTransitions},
		{"Lease", testAlertLease},
		{"ConcurrentLeaseOneWins", testAlertConcurrentLease},
		{"QueueIsIdempotent", testAlertEnqueueIdempotent},
		{"ClaimDueOnly", testAlertClaimDue},
		{"ClaimLeaseExpiresAndFinishChecksOwner", testAlertClaimLease},
		{"ConcurrentClaimsNeverShare", testAlertConcurrentClaims},
		{"ClaimByAccountAndEndpoint", testAlertClaimByAccount},
		{"DropExcessTestsOldestFirst", testAlertDropExcess},
		{"AttemptLog", testAlertAttempts},
		{"Prune", testAlertPrune},
		{"ReplicasDeliverEachEventOnce", testAlertReplicasDeliverOnce},
		{"ReplicaStoppedMidDeliveryIsRedelivered", testAlertReplicaStoppedMidDelivery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newStore(t.Context(), t)
			if err != nil {
				t.Fatalf("AlertStoreMaker: %v", err)
			}
			tc.run(t, s)
		})
	}
}

// alertTime is the fixtures' clock: the real time, at whole microseconds, as
// every store keeps them.
func alertTime() time.Time { return domain.Micro(time.Now()) }

func mustID(t testing.TB, prefix string) string {
	t.Helper()
	id, err := alerting.NewID(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fullRule is a rule of scope with every field set to something other than
// its default.
func fullRule(t testing.TB, scope domain.Scope, at time.Time) alerting.Rule {
	return alerting.Rule{
		ID: mustID(t, alerting.RuleIDPrefix), Scope: scope, Title: "Orders: 5xx ‰ \"spike\"",
		Filter: alerting.Filter{Name: "shop", PathPrefix: "/v1/orders/ü?", Method: "POST", StatusClasses: []int{4, 5}},
		Metric: alerting.MetricServerErrorRate, Comparison: alerting.AboveOrEqual, Threshold: 0.125, ResolveThreshold: 0.0625,
		Window: 15 * time.Minute, For: 90 * time.Second, MinRequests: 25, NoData: alerting.NoDataOK,
		RepeatInterval: 2 * time.Hour, EndpointIDs: []string{mustID(t, alerting.EndpointIDPrefix), mustID(t, alerting.EndpointIDPrefix)},
		Enabled: true, CreatedAt: at, UpdatedAt: at.Add(time.Second),
	}
}

func fullEndpoint(t testing.TB, scope domain.Scope, at time.Time) alerting.Endpoint {
	return alerting.Endpoint{
		ID: mustID(t, alerting.EndpointIDPrefix), Scope: scope, URL: "https://hooks.example.com/reqlog?team=ops&x=%20",
		Description: "ops channel", Format: alerting.FormatSlack, Enabled: false, DisabledReason: "410 Gone",
		Secrets: []alerting.WebhookSecret{
			{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: at.Add(-time.Hour), ExpiresAt: at.Add(time.Hour)},
			{Secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", CreatedAt: at},
		},
		CreatedAt: at, UpdatedAt: at,
	}
}

func fullObservation(at time.Time) alerting.Observation {
	return alerting.Observation{From: at.Add(-6 * time.Minute), To: at.Add(-time.Minute), Count: 120,
		Status: stats.StatusCounts{0, 100, 2, 8, 10}, Errors: 18, ServerErrors: 10,
		Duration: stats.DurationSummary{Count: 118, P50: 41.2, P95: 380.125, P99: 1210.5}, Value: 0.083333, HasValue: true,
		TopPaths: []stats.KeyCount{{Key: "/v1/orders", Count: 90, Errors: 15}, {Key: "/v1/pay", Count: 30, Errors: 3}}}
}

// fullEvent is an event of rule r with every field set.
func fullEvent(t testing.TB, r alerting.Rule, at time.Time) alerting.Event {
	return alerting.Event{ID: mustID(t, alerting.EventIDPrefix), Type: alerting.EventFiring, At: at, Rule: r,
		Status: alerting.Firing, Previous: alerting.Pending, Reason: alerting.ReasonThreshold, Since: at,
		Observation: fullObservation(at), Repeat: true, PortalURL: "https://logs.example.com/portal?name=shop#token=x"}
}

func fullDelivery(t testing.TB, r alerting.Rule, endpointID string, at time.Time) alerting.Delivery {
	d := alerting.NewDelivery(fullEvent(t, r, at), r.Scope, endpointID, at)
	d.Attempts, d.LastStatusCode, d.LastError = 2, 503, "Service Unavailable"
	return d
}

// sameRecord compares two records of any type as values: times by instant,
// nil slices as empty ones.
func sameRecord(a, b any) bool {
	return slices.Equal(canonical(a), canonical(b))
}

// canonical encodes v with its times in UTC and its empty slices as null.
func canonical(v any) []byte {
	c := reflect.New(reflect.TypeOf(v)).Elem()
	c.Set(reflect.ValueOf(v))
	normalise(c)
	raw, err := json.Marshal(c.Interface())
	if err != nil {
		panic(err)
	}
	return raw
}

var timeType = reflect.TypeOf(time.Time{})

func normalise(v reflect.Value) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC()))
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		copied := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(copied, v)
		v.Set(copied)
		for i := range v.Len() {
			normalise(v.Index(i))
		}
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalise(v.Field(i))
			}
		}
	case v.Kind() == reflect.Pointer && !v.IsNil():
		copied := reflect.New(v.Type().Elem())
		copied.Elem().Set(v.Elem())
		v.Set(copied)
		normalise(v.Elem())
	}
}

func assertSame(t testing.TB, what string, want, got any) {
	t.Helper()
	if !sameRecord(want, got) {
		t.Errorf("%s:\n got %s\nwant %s", what, canonical(got), canonical(want))
	}
}

func mustCreateRule(t testing.TB, s ports.AlertStore, r alerting.Rule) {
	t.Helper()
	if err := s.CreateRule(t.Context(), r); err != nil {
		t.Fatalf("CreateRule: %v", err)
	}
}

func mustCreateEndpoint(t testing.TB, s ports.AlertStore, e alerting.Endpoint) {
	t.Helper()
	if err := s.CreateEndpoint(t.Context(), e); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
}

func assertIs(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want an error wrapping %v", what, err, want)
	}
}

func testAlertRulesRoundTrip(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	got, err := s.Rule(t.Context(), scopeLive, r.ID)
	if err != nil {
		t.Fatalf("Rule: %v", err)
	}
	assertSame(t, "Rule after CreateRule", r, got)
	// Defaults round-trip too: empty filter, zero durations, disabled.
	bare := alerting.Rule{ID: mustID(t, alerting.RuleIDPrefix), Scope: scopeLive, Metric: alerting.MetricRequestCount,
		Comparison: alerting.Below, NoData: alerting.NoDataKeep, Window: time.Minute, CreatedAt: at.Add(time.Second), UpdatedAt: at.Add(time.Second)}
	mustCreateRule(t, s, bare)
	all, err := s.Rules(t.Context(), scopeLive)
	if err != nil || len(all) != 2 {
		t.Fatalf("Rules = %d rules, %v; want 2", len(all), err)
	}
	assertSame(t, "Rules (oldest first)", []alerting.Rule{r, bare}, all)
}

func testAlertRulesLifecycle(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	assertIs(t, "CreateRule of another rule", s.CreateRule(t.Context(), fullRule(t, scopeLive, at)), nil)
	taken := fullRule(t, scopeLive, at)
	taken.ID = r.ID
	assertIs(t, "CreateRule of a taken id", s.CreateRule(t.Context(), taken), ports.ErrExists)

	updated := r.Clone()
	updated.Threshold, updated.Title, updated.Filter.StatusClasses, updated.UpdatedAt = 0.5, "renamed", nil, at.Add(time.Minute)
	if err := s.UpdateRule(t.Context(), updated); err != nil {
		t.Fatalf("UpdateRule: %v", err)
	}
	got, err := s.Rule(t.Context(), scopeLive, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "Rule after UpdateRule", updated, got)
	missing := fullRule(t, scopeLive, at)
	assertIs(t, "UpdateRule of an unknown rule", s.UpdateRule(t.Context(), missing), ports.ErrNotFound)

	if err := s.DeleteRule(t.Context(), scopeLive, r.ID); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	_, err = s.Rule(t.Context(), scopeLive, r.ID)
	assertIs(t, "Rule after DeleteRule", err, ports.ErrNotFound)
	assertIs(t, "DeleteRule again", s.DeleteRule(t.Context(), scopeLive, r.ID), ports.ErrNotFound)
	for _, id := range []string{"", "x", "alr_", r.ID + "x", `{"$ne":null}`, "*"} {
		_, err := s.Rule(t.Context(), scopeLive, id)
		assertIs(t, fmt.Sprintf("Rule(%q)", id), err, ports.ErrNotFound)
	}
	if rules, err := s.AllRules(t.Context()); err != nil || len(rules) != 1 {
		t.Errorf("AllRules after deleting one of two: %d, %v; want 1", len(rules), err)
	}
}

func testAlertEndpoints(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	e := fullEndpoint(t, scopeLive, at)
	mustCreateEndpoint(t, s, e)
	got, err := s.Endpoint(t.Context(), scopeLive, e.ID)
	if err != nil {
		t.Fatalf("Endpoint: %v", err)
	}
	assertSame(t, "Endpoint after CreateEndpoint", e, got)
	dup := fullEndpoint(t, scopeLive, at)
	dup.ID = e.ID
	assertIs(t, "CreateEndpoint of a taken id", s.CreateEndpoint(t.Context(), dup), ports.ErrExists)

	e.Enabled, e.DisabledReason, e.URL = true, "", "http://10.0.0.1:8080/x"
	e.Rotate("whsec_dGhpcmQgc2VjcmV0IGZvciB0ZXN0cw==", at.Add(2*time.Hour))
	if err := s.UpdateEndpoint(t.Context(), e); err != nil {
		t.Fatalf("UpdateEndpoint: %v", err)
	}
	second := fullEndpoint(t, scopeLive, at.Add(time.Second))
	mustCreateEndpoint(t, s, second)
	all, err := s.Endpoints(t.Context(), scopeLive)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "Endpoints after an update", []alerting.Endpoint{e, second}, all)
	if err := s.DeleteEndpoint(t.Context(), scopeLive, e.ID); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	_, err = s.Endpoint(t.Context(), scopeLive, e.ID)
	assertIs(t, "Endpoint after DeleteEndpoint", err, ports.ErrNotFound)
	assertIs(t, "UpdateEndpoint of a deleted endpoint", s.UpdateEndpoint(t.Context(), e), ports.ErrNotFound)
	assertIs(t, "DeleteEndpoint again", s.DeleteEndpoint(t.Context(), scopeLive, e.ID), ports.ErrNotFound)
}

// Nothing of one scope is visible, changeable or deletable from another: not
// "acme" from "acme2", not live from test.
func testAlertScopeIsolation(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r, e := fullRule(t, scopeLive, at), fullEndpoint(t, scopeLive, at)
	mustCreateRule(t, s, r)
	mustCreateEndpoint(t, s, e)
	st := alerting.State{RuleID: r.ID, Scope: r.Scope, Status: alerting.Firing, Since: at}
	if err := s.SwapState(t.Context(), st, 0); err != nil {
		t.Fatal(err)
	}
	tr := alerting.Transition{RuleID: r.ID, Scope: r.Scope, Seq: 1, From: alerting.OK, To: alerting.Firing, At: at}
	if err := s.AppendTransitions(t.Context(), []alerting.Transition{tr}); err != nil {
		t.Fatal(err)
	}
	a := alerting.Attempt{ID: mustID(t, alerting.AttemptIDPrefix), Scope: scopeLive, EndpointID: e.ID, At: at, Number: 1}
	if err := s.LogAttempt(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	d := fullDelivery(t, r, e.ID, at)
	if err := s.Enqueue(t.Context(), []alerting.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	for _, other := range []domain.Scope{scopeTest, scopeOtherLive} {
		_, err := s.Rule(t.Context(), other, r.ID)
		assertIs(t, fmt.Sprintf("Rule from %+v", other), err, ports.ErrNotFound)
		_, err = s.Endpoint(t.Context(), other, e.ID)
		assertIs(t, fmt.Sprintf("Endpoint from %+v", other), err, ports.ErrNotFound)
		_, err = s.Delivery(t.Context(), other, d.ID)
		assertIs(t, fmt.Sprintf("Delivery from %+v", other), err, ports.ErrNotFound)
		assertIs(t, fmt.Sprintf("DeleteRule from %+v", other), s.DeleteRule(t.Context(), other, r.ID), ports.ErrNotFound)
		assertIs(t, fmt.Sprintf("DeleteEndpoint from %+v", other), s.DeleteEndpoint(t.Context(), other, e.ID), ports.ErrNotFound)
		moved := r.Clone()
		moved.Scope = other
		assertIs(t, fmt.Sprintf("UpdateRule into %+v", other), s.UpdateRule(t.Context(), moved), ports.ErrNotFound)
		rules, err1 := s.Rules(t.Context(), other)
		endpoints, err2 := s.Endpoints(t.Context(), other)
		states, err3 := s.States(t.Context(), other)
		trs, err4 := s.Transitions(t.Context(), other, r.ID, ports.TransitionQuery{Limit: 10})
		attempts, err5 := s.Attempts(t.Context(), other, e.ID, 10)
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil || len(rules)+len(endpoints)+len(states)+len(trs)+len(attempts) != 0 {
			t.Errorf("scope %+v sees %d rules, %d endpoints, %d states, %d transitions, %d attempts of another (%v)",
				other, len(rules), len(endpoints), len(states), len(trs), len(attempts), err)
		}
	}
	if states, err := s.States(t.Context(), scopeLive); err != nil || len(states) != 1 {
		t.Errorf("States of the rule's own scope: %d, %v; want 1", len(states), err)
	}
}

// Changing what a store returned, or what it was given, changes nothing stored.
func testAlertCopies(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r, e := fullRule(t, scopeLive, at), fullEndpoint(t, scopeLive, at)
	pristineRule, pristineEndpoint := r.Clone(), e.Clone()
	mustCreateRule(t, s, r)
	mustCreateEndpoint(t, s, e)
	r.Filter.StatusClasses[0], r.EndpointIDs[0], e.Secrets[0].Secret = 1, "changed", "changed"
	got, err := s.Rule(t.Context(), scopeLive, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	got.Filter.StatusClasses[0], got.EndpointIDs[0] = 2, "changed"
	gotE, err := s.Endpoint(t.Context(), scopeLive, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	gotE.Secrets[1].Secret = "changed"
	again, err1 := s.Rule(t.Context(), scopeLive, r.ID)
	againE, err2 := s.Endpoint(t.Context(), scopeLive, e.ID)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	assertSame(t, "Rule after the caller changed its copies", pristineRule, again)
	assertSame(t, "Endpoint after the caller changed its copies", pristineEndpoint, againE)
}

func testAlertStateSwap(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	st := alerting.State{RuleID: r.ID, Scope: r.Scope, Status: alerting.Pending, Reason: alerting.ReasonThreshold,
		Since: at, EvaluatedAt: at, Observation: fullObservation(at)}
	if err := s.SwapState(t.Context(), st, 0); err != nil {
		t.Fatalf("SwapState from no state: %v", err)
	}
	assertIs(t, "SwapState from no state again", s.SwapState(t.Context(), st, 0), ports.ErrStale)
	assertIs(t, "SwapState from a version ahead", s.SwapState(t.Context(), st, 5), ports.ErrStale)
	next := st
	next.Status, next.Since = alerting.Firing, at.Add(time.Minute)
	if err := s.SwapState(t.Context(), next, 1); err != nil {
		t.Fatalf("SwapState from version 1: %v", err)
	}
	states, err := s.States(t.Context(), scopeLive)
	if err != nil || len(states) != 1 {
		t.Fatalf("States: %d, %v", len(states), err)
	}
	next.Version = 2
	assertSame(t, "state after two swaps", next, states[0])
	stale := st
	stale.Status = alerting.OK
	assertIs(t, "SwapState from version 1 after 2", s.SwapState(t.Context(), stale, 1), ports.ErrStale)
	if states, _ := s.AllStates(t.Context()); len(states) != 1 || states[0].Status != alerting.Firing {
		t.Errorf("a stale swap changed the state: %+v", states)
	}
	orphan := alerting.State{RuleID: mustID(t, alerting.RuleIDPrefix), Scope: scopeLive, Status: alerting.OK}
	assertIs(t, "SwapState of a rule never created", s.SwapState(t.Context(), orphan, 0), ports.ErrNotFound)
}

// A state holds its outbox whole: transitions, deliveries and their events.
func testAlertStateRoundTrip(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	st := alerting.State{RuleID: r.ID, Scope: r.Scope, Status: alerting.Firing, Reason: alerting.ReasonNoData,
		Since: at, EvaluatedAt: at.Add(time.Minute), Observation: fullObservation(at), Error: "statistics: store unavailable",
		NotifiedAt: at, Transitions: 7, Events: 3,
		Outbox: alerting.Outbox{
			Transitions: []alerting.Transition{{RuleID: r.ID, Scope: r.Scope, Seq: 7, From: alerting.Pending,
				To: alerting.Firing, Reason: alerting.ReasonThreshold, At: at, Value: 0.25, HasValue: true}},
			Deliveries: []alerting.Delivery{fullDelivery(t, r, r.EndpointIDs[0], at), fullDelivery(t, r, r.EndpointIDs[1], at)},
		}}
	if err := s.SwapState(t.Context(), st, 0); err != nil {
		t.Fatal(err)
	}
	states, err := s.AllStates(t.Context())
	if err != nil || len(states) != 1 {
		t.Fatalf("AllStates: %d, %v", len(states), err)
	}
	st.Version = 1
	assertSame(t, "state with an outbox", st, states[0])
	emptied := st
	emptied.Outbox = alerting.Outbox{}
	if err := s.SwapState(t.Context(), emptied, 1); err != nil {
		t.Fatal(err)
	}
	if states, _ := s.States(t.Context(), scopeLive); len(states) != 1 || !states[0].Outbox.Empty() {
		t.Errorf("the outbox stayed after a swap that emptied it: %+v", states)
	}
}

func testAlertConcurrentSwaps(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	const racers = 8
	for round := int64(0); round < 3; round++ {
		var wg sync.WaitGroup
		results := make([]error, racers)
		for i := range racers {
			wg.Go(func() {
				st := alerting.State{RuleID: r.ID, Scope: r.Scope, Status: alerting.Pending, Since: at,
					Error: fmt.Sprintf("racer %d", i)}
				results[i] = s.SwapState(t.Context(), st, round)
			})
		}
		wg.Wait()
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ports.ErrStale):
				t.Errorf("round %d, racer %d: %v, want nil or ErrStale", round, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d concurrent swaps from version %d succeeded, want exactly 1", round, won, racers, round)
		}
	}
	if states, _ := s.AllStates(t.Context()); len(states) != 1 || states[0].Version != 3 {
		t.Errorf("after three rounds: %+v, want version 3", states)
	}
}

func testAlertDeleteRuleCascades(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r, kept := fullRule(t, scopeLive, at), fullRule(t, scopeLive, at)
	for _, rule := range []alerting.Rule{r, kept} {
		mustCreateRule(t, s, rule)
		if err := s.SwapState(t.Context(), alerting.State{RuleID: rule.ID, Scope: rule.Scope, Status: alerting.OK}, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendTransitions(t.Context(), []alerting.Transition{{RuleID: rule.ID, Scope: rule.Scope, Seq: 1, At: at}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRule(t.Context(), scopeLive, r.ID); err != nil {
		t.Fatal(err)
	}
	states, err1 := s.States(t.Context(), scopeLive)
	gone, err2 := s.Transitions(t.Context(), scopeLive, r.ID, ports.TransitionQuery{Limit: 10})
	left, err3 := s.Transitions(t.Context(), scopeLive, kept.ID, ports.TransitionQuery{Limit: 10})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || states[0].RuleID != kept.ID || len(gone) != 0 || len(left) != 1 {
		t.Errorf("after deleting one of two rules: states %+v, its history %d, the other's %d; want the other's state and history only",
			states, len(gone), len(left))
	}
	assertIs(t, "SwapState of a deleted rule", s.SwapState(t.Context(), alerting.State{RuleID: r.ID, Scope: r.Scope}, 1), ports.ErrNotFound)
}

func testAlertTransitions(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	var all []alerting.Transition
	statuses := []alerting.Status{alerting.OK, alerting.Pending, alerting.Firing, alerting.Resolved}
	for i := range 10 {
		all = append(all, alerting.Transition{RuleID: r.ID, Scope: r.Scope, Seq: int64(i + 1),
			From: statuses[i%4], To: statuses[(i+1)%4], Reason: alerting.ReasonThreshold, At: at.Add(time.Duration(i) * time.Minute),
			Value: float64(i) / 8, HasValue: i%3 != 0})
	}
	if err := s.AppendTransitions(t.Context(), all[:6]); err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(all[4:])
	changed[0].Reason = alerting.ReasonNoData // a stored one: must stay as it was
	if err := s.AppendTransitions(t.Context(), changed); err != nil {
		t.Fatal(err)
	}
	newest := slices.Clone(all)
	slices.Reverse(newest)
	got, err := s.Transitions(t.Context(), scopeLive, r.ID, ports.TransitionQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "history after overlapping appends", newest, got)
	got, err = s.Transitions(t.Context(), scopeLive, r.ID, ports.TransitionQuery{Before: 8, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "history before seq 8, limit 3", newest[3:6], got)
	got, err = s.Transitions(t.Context(), scopeLive, r.ID, ports.TransitionQuery{From: at.Add(2 * time.Minute), To: at.Add(5 * time.Minute), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "history in [at+2m, at+5m)", newest[5:8], got)
	if err := s.AppendTransitions(t.Context(), nil); err != nil {
		t.Errorf("AppendTransitions of none: %v", err)
	}
}

func testAlertLease(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	ctx := t.Context()
	for _, step := range []struct {
		owner string
		now   time.Time
		until time.Time
		want  bool
	}{
		{"a", at, at.Add(time.Minute), true},                                       // free
		{"b", at.Add(30 * time.Second), at.Add(2 * time.Minute), false},            // held by a
		{"a", at.Add(30 * time.Second), at.Add(2 * time.Minute), true},             // a renews
		{"b", at.Add(time.Minute), at.Add(3 * time.Minute), false},                 // a's renewal holds
		{"b", at.Add(2 * time.Minute), at.Add(3 * time.Minute), true},              // expired: b takes it
		{"a", at.Add(2*time.Minute + time.Second), at.Add(4 * time.Minute), false}, // b holds it
	} {
		got, err := s.AcquireLease(ctx, "alerts.evaluate", step.owner, step.now, step.until)
		if err != nil || got != step.want {
			t.Fatalf("AcquireLease(%s at +%s) = %v, %v; want %v", step.owner, step.now.Sub(at), got, err, step.want)
		}
	}
	if got, err := s.AcquireLease(ctx, "another", "a", at, at.Add(time.Minute)); err != nil || !got {
		t.Errorf("another lease name: %v, %v; want it free", got, err)
	}
}

func testAlertConcurrentLease(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	for round := range 3 {
		now := at.Add(time.Duration(round) * time.Minute)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var holders []string
		for i := range 8 {
			wg.Go(func() {
				owner := fmt.Sprintf("replica-%d", i)
				ok, err := s.AcquireLease(t.Context(), "alerts.evaluate", owner, now, now.Add(time.Minute))
				if err != nil {
					t.Errorf("AcquireLease: %v", err)
				}
				if ok {
					mu.Lock()
					holders = append(holders, owner)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(holders) != 1 {
			t.Fatalf("round %d: %v got the lease at once, want exactly one", round, holders)
		}
	}
}

func testAlertEnqueueIdempotent(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	d := fullDelivery(t, r, r.EndpointIDs[0], at)
	if err := s.Enqueue(t.Context(), []alerting.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	retry := d.Clone()
	retry.Attempts, retry.Event.Observation.Value = 0, 99
	other := fullDelivery(t, r, r.EndpointIDs[1], at)
	if err := s.Enqueue(t.Context(), []alerting.Delivery{retry, other}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Delivery(t.Context(), scopeLive, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "delivery queued twice", d, got)
	claimed, err := s.Claim(t.Context(), "w", at, at.Add(time.Minute), ofLive(10))
	if err != nil || len(claimed) != 2 {
		t.Fatalf("Claim after queuing 2 deliveries, one twice: %d, %v; want 2", len(claimed), err)
	}
	if err := s.Enqueue(t.Context(), nil); err != nil {
		t.Errorf("Enqueue of none: %v", err)
	}
}

func testAlertClaimDue(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	var ds []alerting.Delivery
	for i := range 5 {
		d := fullDelivery(t, r, r.EndpointIDs[0], at)
		d.NextAttemptAt = at.Add(time.Duration(i-2) * time.Minute) // 2 past, 1 now, 2 future
		ds = append(ds, d)
	}
	delivered := fullDelivery(t, r, r.EndpointIDs[1], at)
	delivered.Status, delivered.NextAttemptAt = alerting.DeliveryDelivered, at.Add(-time.Hour)
	failed := fullDelivery(t, r, r.EndpointIDs[1], at)
	failed.Status, failed.NextAttemptAt = alerting.DeliveryFailed, at.Add(-time.Hour)
	if err := s.Enqueue(t.Context(), append(slices.Clone(ds), delivered, failed)); err != nil {
		t.Fatal(err)
	}
	until := at.Add(10 * time.Minute)
	first, err := s.Claim(t.Context(), "w", at, until, ofLive(2))
	if err != nil {
		t.Fatal(err)
	}
	want := []alerting.Delivery{ds[0], ds[1]}
	for i := range want {
		want[i].LeaseOwner, want[i].LeaseUntil = "w", until
	}
	assertSame(t, "first claim of 2 (oldest due first, leased)", want, first)
	rest, err := s.Claim(t.Context(), "w", at, until, ofLive(10))
	if err != nil || len(rest) != 1 || rest[0].ID != ds[2].ID {
		t.Errorf("second claim: %d deliveries (%v), want only the one due now", len(rest), err)
	}
	later, err := s.Claim(t.Context(), "w", at.Add(2*time.Minute), at.Add(3*time.Minute), ofLive(10))
	if err != nil || len(later) != 2 {
		t.Errorf("claim two minutes on: %d deliveries (%v), want the 2 due since (the others are leased)", len(later), err)
	}
}

func testAlertClaimLease(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	d := fullDelivery(t, r, r.EndpointIDs[0], at)
	if err := s.Enqueue(t.Context(), []alerting.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Claim(t.Context(), "a", at, at.Add(time.Minute), ofLive(1))
	if err != nil || len(a) != 1 {
		t.Fatalf("claim by a: %d, %v", len(a), err)
	}
	if b, err := s.Claim(t.Context(), "b", at.Add(59*time.Second), at.Add(2*time.Minute), ofLive(1)); err != nil || len(b) != 0 {
		t.Fatalf("claim by b within a's lease: %d, %v; want none", len(b), err)
	}
	b, err := s.Claim(t.Context(), "b", at.Add(time.Minute), at.Add(2*time.Minute), ofLive(1))
	if err != nil || len(b) != 1 || b[0].LeaseOwner != "b" {
		t.Fatalf("claim by b after a's lease ran out: %+v, %v; want the delivery", b, err)
	}
	late := a[0].Record(alerting.AttemptOutcome{StatusCode: 200}, at.Add(61*time.Second))
	assertIs(t, "Finish by a after b took over", s.Finish(t.Context(), late, "a"), ports.ErrStale)
	failed := b[0].Record(alerting.AttemptOutcome{StatusCode: 500, Error: "boom"}, at.Add(61*time.Second))
	if err := s.Finish(t.Context(), failed, "b"); err != nil {
		t.Fatalf("Finish by b: %v", err)
	}
	got, err := s.Delivery(t.Context(), scopeLive, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "delivery after b's attempt", failed, got)
	if none, _ := s.Claim(t.Context(), "c", at.Add(62*time.Second), at.Add(3*time.Minute), ofLive(1)); len(none) != 0 {
		t.Errorf("claimed before the retry was due: %+v", none)
	}
	again, err := s.Claim(t.Context(), "c", failed.NextAttemptAt, failed.NextAttemptAt.Add(time.Minute), ofLive(1))
	if err != nil || len(again) != 1 {
		t.Fatalf("claim when the retry is due: %d, %v", len(again), err)
	}
	done := again[0].Record(alerting.AttemptOutcome{StatusCode: 204}, failed.NextAttemptAt)
	if err := s.Finish(t.Context(), done, "c"); err != nil {
		t.Fatal(err)
	}
	if none, _ := s.Claim(t.Context(), "d", at.Add(24*time.Hour), at.Add(25*time.Hour), ofLive(1)); len(none) != 0 {
		t.Errorf("a delivered delivery was claimed again: %+v", none)
	}
	if err := s.Finish(t.Context(), fullDelivery(t, r, "whe_x", at), "c"); err == nil {
		t.Error("Finish of a delivery never queued succeeded")
	}
}

func testAlertConcurrentClaims(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	const n = 30
	var ds []alerting.Delivery
	for range n {
		ds = append(ds, fullDelivery(t, r, r.EndpointIDs[0], at))
	}
	if err := s.Enqueue(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			owner := fmt.Sprintf("worker-%d", w)
			for range 10 {
				claimed, err := s.Claim(t.Context(), owner, at, at.Add(time.Minute), ofLive(4))
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				mu.Lock()
				for _, d := range claimed {
					if other, dup := seen[d.ID]; dup {
						t.Errorf("delivery %s claimed by %s and %s", d.ID, other, owner)
					}
					seen[d.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d of %d deliveries claimed", len(seen), n)
	}
}

// ofLive is a claim of scopeLive's account of at most limit deliveries.
func ofLive(limit int) ports.ClaimQuery {
	return ports.ClaimQuery{Account: scopeLive.Account, Limit: limit}
}

func deliveryIDs(ds []alerting.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	slices.Sort(ids)
	return ids
}

// The accounts with due deliveries are listed once each, both domains of an
// account as one; a claim takes one account's deliveries only, of both its
// domains, and none of the endpoints it is told to leave.
func testAlertClaimByAccount(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	live, test, other := fullRule(t, scopeLive, at), fullRule(t, scopeTest, at), fullRule(t, scopeOtherLive, at)
	busy, free := live.EndpointIDs[0], live.EndpointIDs[1]
	var ds []alerting.Delivery
	queue := func(r alerting.Rule, endpointID string, dueIn time.Duration) alerting.Delivery {
		d := fullDelivery(t, r, endpointID, at)
		d.NextAttemptAt = at.Add(dueIn)
		ds = append(ds, d)
		return d
	}
	busyLive := queue(live, busy, -time.Minute)
	freeLive := queue(live, free, -2*time.Minute)
	freeTest := queue(test, test.EndpointIDs[0], -3*time.Minute)
	queue(live, free, time.Hour) // not due
	otherDue := queue(other, other.EndpointIDs[0], time.Minute)
	if err := s.Enqueue(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	accounts, err := s.DueAccounts(t.Context(), at, 10)
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(accounts)), []string{scopeLive.Account}) {
		t.Errorf("DueAccounts now = %v, %v; want [%s] (the other account's delivery is due in a minute)", accounts, err, scopeLive.Account)
	}
	later := at.Add(2 * time.Minute)
	accounts, err = s.DueAccounts(t.Context(), later, 10)
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(accounts)), []string{scopeLive.Account, scopeOtherLive.Account}) {
		t.Errorf("DueAccounts two minutes on = %v, %v; want both accounts once", accounts, err)
	}
	if one, err := s.DueAccounts(t.Context(), later, 1); err != nil || len(one) != 1 {
		t.Errorf("DueAccounts limit 1 = %v, %v; want one account", one, err)
	}
	claimed, err := s.Claim(t.Context(), "w", later, later.Add(time.Minute),
		ports.ClaimQuery{Account: scopeLive.Account, ExceptEndpoints: []string{busy, "whe_unknown"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 2 || claimed[0].ID != freeTest.ID || claimed[1].ID != freeLive.ID {
		t.Errorf("claim of %s without endpoint %s: %v, want its due deliveries of the other endpoints, oldest first: %v",
			scopeLive.Account, busy, deliveryIDs(claimed), []string{freeTest.ID, freeLive.ID})
	}
	rest, err := s.Claim(t.Context(), "w", later, later.Add(time.Minute), ofLive(10))
	if err != nil || len(rest) != 1 || rest[0].ID != busyLive.ID {
		t.Errorf("claim of %s with every endpoint: %v (%v), want only %s", scopeLive.Account, deliveryIDs(rest), err, busyLive.ID)
	}
	others, err := s.Claim(t.Context(), "w", later, later.Add(time.Minute), ports.ClaimQuery{Account: scopeOtherLive.Account, Limit: 10})
	if err != nil || len(others) != 1 || others[0].ID != otherDue.ID {
		t.Errorf("claim of %s: %v (%v), want its one delivery", scopeOtherLive.Account, deliveryIDs(others), err)
	}
	if accounts, err := s.DueAccounts(t.Context(), later, 10); err != nil || len(accounts) != 0 {
		t.Errorf("DueAccounts with everything due leased: %v, %v; want none", accounts, err)
	}
}

// An account over its bound loses its pending tests first, oldest first,
// then its oldest other deliveries, down to what it may keep; a delivery
// being attempted, a finished one and another account's stay.
func testAlertDropExcess(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r, other := fullRule(t, scopeLive, at), fullRule(t, scopeOtherLive, at)
	var tests, firings []alerting.Delivery
	for i := range 3 {
		created := at.Add(time.Duration(i) * time.Second)
		test := fullDelivery(t, r, r.EndpointIDs[0], created)
		test.Event.Type = alerting.EventTest
		tests = append(tests, test)
		firings = append(firings, fullDelivery(t, r, r.EndpointIDs[1], created))
	}
	leased := fullDelivery(t, r, r.EndpointIDs[0], at.Add(-time.Hour))
	leased.Event.Type, leased.LeaseOwner, leased.LeaseUntil = alerting.EventTest, "w", at.Add(time.Minute)
	finished := fullDelivery(t, r, r.EndpointIDs[0], at.Add(-time.Hour))
	finished.Event.Type, finished.Status = alerting.EventTest, alerting.DeliveryDelivered
	var elsewhere []alerting.Delivery
	for range 5 {
		d := fullDelivery(t, other, other.EndpointIDs[0], at.Add(-time.Hour))
		d.Event.Type = alerting.EventTest
		elsewhere = append(elsewhere, d)
	}
	all := slices.Concat(tests, firings, []alerting.Delivery{leased, finished}, elsewhere)
	if err := s.Enqueue(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	// 7 pending: at the limit, nothing goes.
	if dropped, err := s.DropExcess(t.Context(), scopeLive.Account, 7, 3, at); err != nil || len(dropped) != 0 {
		t.Fatalf("DropExcess at the limit dropped %v (%v), want none", deliveryIDs(dropped), err)
	}
	dropped, err := s.DropExcess(t.Context(), scopeLive.Account, 6, 3, at)
	if err != nil {
		t.Fatal(err)
	}
	want := deliveryIDs(append(slices.Clone(tests), firings[0]))
	if got := deliveryIDs(dropped); !slices.Equal(got, want) {
		t.Errorf("DropExcess over the limit dropped %v, want the 3 tests not leased and the oldest firing: %v", got, want)
	}
	for _, d := range all {
		_, err := s.Delivery(t.Context(), d.Scope, d.ID)
		if gone := slices.Contains(want, d.ID); gone != errors.Is(err, ports.ErrNotFound) || (!gone && err != nil) {
			t.Errorf("delivery %s (%s, %s) after DropExcess: %v; dropped: %v", d.ID, d.Event.Type, d.Status, err, gone)
		}
	}
}

func testAlertAttempts(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	e, other := mustID(t, alerting.EndpointIDPrefix), mustID(t, alerting.EndpointIDPrefix)
	var logged []alerting.Attempt
	for i := range 5 {
		a := alerting.Attempt{ID: mustID(t, alerting.AttemptIDPrefix), Scope: scopeLive, DeliveryID: mustID(t, alerting.DeliveryIDPrefix),
			EndpointID: e, EventID: mustID(t, alerting.EventIDPrefix), EventType: alerting.EventResolved, RuleID: mustID(t, alerting.RuleIDPrefix),
			Number: i + 1, At: at.Add(time.Duration(i) * time.Second), StatusCode: 500 + i, Error: "HTTP 50x",
			Duration: time.Duration(i+1) * 1500 * time.Microsecond, Response: `{"error":"ünavailable"}`}
		logged = append(logged, a)
		if err := s.LogAttempt(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.LogAttempt(t.Context(), alerting.Attempt{ID: mustID(t, alerting.AttemptIDPrefix), Scope: scopeLive, EndpointID: other, At: at}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Attempts(t.Context(), scopeLive, e, 3)
	if err != nil {
		t.Fatal(err)
	}
	newest := slices.Clone(logged)
	slices.Reverse(newest)
	assertSame(t, "the newest 3 attempts of one endpoint", newest[:3], got)
}

func testAlertPrune(t *testing.T, s ports.AlertStore) {
	at := alertTime()
	r := fullRule(t, scopeLive, at)
	mustCreateRule(t, s, r)
	old, recent := at.Add(-48*time.Hour), at
	if err := s.AppendTransitions(t.Context(), []alerting.Transition{
		{RuleID: r.ID, Scope: r.Scope, Seq: 1, At: old}, {RuleID: r.ID, Scope: r.Scope, Seq: 2, At: recent},
	}); err != nil {
		t.Fatal(err)
	}
	oldDone := fullDelivery(t, r, r.EndpointIDs[0], old)
	oldDone.Status, oldDone.UpdatedAt = alerting.DeliveryDelivered, old
	oldPending := fullDelivery(t, r, r.EndpointIDs[0], old)
	oldPending.UpdatedAt, oldPending.NextAttemptAt = old, at.Add(time.Hour)
	newDone := fullDelivery(t, r, r.EndpointIDs[0], recent)
	newDone.Status = alerting.DeliveryFailed
	if err := s.Enqueue(t.Context(), []alerting.Delivery{oldDone, oldPending, newDone}); err != nil {
		t.Fatal(err)
	}
	for _, when := range []time.Time{old, recent} {
		if err := s.LogAttempt(t.Context(), alerting.Attempt{ID: mustID(t, alerting.AttemptIDPrefix), Scope: scopeLive, EndpointID: r.EndpointIDs[0], At: when}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneAlerts(t.Context(), at.Add(-24*time.Hour))
	if err != nil || (n != 3 && n != -1) {
		t.Errorf("PruneAlerts = %d, %v; want 3 (or -1)", n, err)
	}
	trs, _ := s.Transitions(t.Context(), scopeLive, r.ID, ports.TransitionQuery{Limit: 10})
	attempts, _ := s.Attempts(t.Context(), scopeLive, r.EndpointIDs[0], 10)
	_, errOld := s.Delivery(t.Context(), scopeLive, oldDone.ID)
	_, errPending := s.Delivery(t.Context(), scopeLive, oldPending.ID)
	_, errNew := s.Delivery(t.Context(), scopeLive, newDone.ID)
	if len(trs) != 1 || trs[0].Seq != 2 || len(attempts) != 1 || !errors.Is(errOld, ports.ErrNotFound) || errPending != nil || errNew != nil {
		t.Errorf("after pruning: %d transitions, %d attempts, old finished delivery %v, old pending %v, recent %v; "+
			"want the recent transition and attempt, the pending and the recent delivery", len(trs), len(attempts), errOld, errPending, errNew)
	}
}
