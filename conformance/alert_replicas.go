package conformance

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// scriptedTraffic is a message reader whose statistics say what the test sets:
// the replica tests are about the alert store, not the message store.
type scriptedTraffic struct {
	mu               sync.Mutex
	requests, errors int64
	calls            int
}

var _ ports.MessageReader = (*scriptedTraffic)(nil)

func (s *scriptedTraffic) set(requests, errors int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.errors = requests, errors
}

func (s *scriptedTraffic) List(context.Context, domain.Query, time.Time) (domain.Page, error) {
	return domain.Page{}, nil
}

func (s *scriptedTraffic) Get(_ context.Context, _ domain.Scope, id string, _ time.Time) (domain.Message, error) {
	return domain.Message{}, fmt.Errorf("message %q: %w", id, ports.ErrNotFound)
}

func (s *scriptedTraffic) Stats(_ context.Context, q stats.Query, _ time.Time) (stats.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	st := stats.New(q)
	st.Total.Count, st.Total.Status[1], st.Total.Status[4] = s.requests, s.requests-s.errors, s.errors
	return st, nil
}

// receiver records what a sender was asked to deliver: the webhook-ids each
// endpoint got, in order.
type receiver struct {
	mu  sync.Mutex
	got map[string][]string // endpoint id -> event ids
}

var _ ports.WebhookSender = (*receiver)(nil)

func (r *receiver) CheckURL(context.Context, string) error { return nil }

func (r *receiver) Send(_ context.Context, e alerting.Endpoint, d alerting.Delivery, _ time.Time) (alerting.AttemptOutcome, string) {
	r.record(e.ID, d.Event.ID)
	return alerting.AttemptOutcome{StatusCode: 204}, ""
}

func (r *receiver) record(endpointID, eventID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[string][]string{}
	}
	r.got[endpointID] = append(r.got[endpointID], eventID)
}

func (r *receiver) received(endpointID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[endpointID])
}

// replica is one service's alerting: its evaluator and delivery worker.
type replica struct {
	evaluator *app.AlertEvaluator
	worker    *app.AlertDeliverer
}

// replicaSetup is a rule on a store with endpoints, the scripted traffic, a
// fake clock and a receiver shared by the replicas.
type replicaSetup struct {
	store     ports.AlertStore
	traffic   *scriptedTraffic
	clock     *FakeClock
	receiver  *receiver
	rule      alerting.Rule
	endpoints []alerting.Endpoint
	start     time.Time
}

func newReplicaSetup(t *testing.T, s ports.AlertStore, endpoints int) *replicaSetup {
	start := alertTime().Truncate(time.Minute)
	rs := &replicaSetup{store: s, traffic: &scriptedTraffic{}, clock: NewFakeClock(start), receiver: &receiver{}, start: start}
	rs.rule = alerting.DefaultRule()
	rs.rule.ID, rs.rule.Scope, rs.rule.CreatedAt, rs.rule.UpdatedAt = mustID(t, alerting.RuleIDPrefix), scopeLive, start, start
	rs.rule.Metric, rs.rule.Threshold, rs.rule.ResolveThreshold = alerting.MetricServerErrorRate, 0.1, 0.1
	mustCreateRule(t, s, rs.rule)
	for i := range endpoints {
		e := fullEndpoint(t, scopeLive, start.Add(time.Duration(i)*time.Second))
		e.Enabled, e.DisabledReason = true, ""
		mustCreateEndpoint(t, s, e)
		rs.endpoints = append(rs.endpoints, e)
	}
	return rs
}

func (rs *replicaSetup) replica(name string) replica {
	cfg := app.DefaultAlertConfig()
	answer := app.NewStatistics(rs.traffic, domain.DefaultPolicy(), rs.clock)
	return replica{
		evaluator: app.NewAlertEvaluator(rs.store, answer, rs.clock, nil, name, cfg, zap.NewNop()),
		worker:    app.NewAlertDeliverer(rs.store, rs.receiver, rs.clock, name, cfg, zap.NewNop()),
	}
}

// both runs f for each replica at the same time.
func both(replicas []replica, f func(replica) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	for i, r := range replicas {
		wg.Go(func() { errs[i] = f(r) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// drain has the replicas deliver at once until neither claims anything.
func drain(ctx context.Context, replicas []replica) error {
	for range 100 {
		var mu sync.Mutex
		claimed := 0
		err := both(replicas, func(r replica) error {
			n, err := r.worker.DeliverOnce(ctx)
			mu.Lock()
			claimed += n
			mu.Unlock()
			return err
		})
		if err != nil || claimed == 0 {
			return err
		}
	}
	return fmt.Errorf("the queue never emptied")
}

// Two replicas evaluating and delivering at the same time, through the lease
// and without it (both evaluating every slot: the state's compare-and-set alone
// must then keep them apart): every event reaches each endpoint exactly once,
// and the history holds each transition once.
func testAlertReplicasDeliverOnce(t *testing.T, s ports.AlertStore) {
	rs := newReplicaSetup(t, s, 2)
	replicas := []replica{rs.replica("replica-a"), rs.replica("replica-b")}
	ctx := t.Context()
	// Minute by minute: 5xx share of 100 requests, 10 % the threshold.
	script := []int64{0, 0, 20, 30, 20, 0, 0, 50, 0, 0}
	for minute, errors := range script {
		rs.clock.Set(rs.start.Add(time.Duration(minute)*time.Minute + 7*time.Second))
		rs.traffic.set(100, errors)
		slot := rs.start.Add(time.Duration(minute) * time.Minute)
		// Each replica evaluates, then delivers what is due, while the other
		// does the same.
		err := both(replicas, func(r replica) error {
			var err error
			if minute%2 == 0 {
				_, err = r.evaluator.Tick(ctx)
			} else {
				err = r.evaluator.Evaluate(ctx, slot)
			}
			if err != nil {
				return err
			}
			return drain(ctx, []replica{r})
		})
		if err != nil {
			t.Fatalf("minute %d: %v", minute, err)
		}
		if err := drain(ctx, replicas); err != nil {
			t.Fatalf("minute %d: delivery: %v", minute, err)
		}
	}
	var firstEvents []string
	for i, e := range rs.endpoints {
		got := rs.receiver.received(e.ID)
		distinct := slices.Compact(slices.Sorted(slices.Values(got)))
		if len(got) != 4 || len(distinct) != 4 {
			t.Errorf("endpoint %d received %d deliveries of %d events (%v); want each of the 4 events (firing, resolved, firing, resolved) once",
				i, len(got), len(distinct), got)
		}
		if i == 0 {
			firstEvents = got
		} else if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(firstEvents))) {
			t.Errorf("the endpoints received different events: %v and %v", firstEvents, got)
		}
	}
	history, err := s.Transitions(ctx, scopeLive, rs.rule.ID, ports.TransitionQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	for i, tr := range slices.Backward(history) {
		if want := int64(len(history) - i); tr.Seq != want {
			t.Errorf("history seq %d at position %d, want %d", tr.Seq, len(history)-1-i, want)
		}
		moves = append(moves, fmt.Sprintf("%s>%s", tr.From, tr.To))
	}
	want := []string{"ok>firing", "firing>resolved", "resolved>ok", "ok>firing", "firing>resolved", "resolved>ok"}
	if !slices.Equal(moves, want) {
		t.Errorf("history %v, want %v", moves, want)
	}
	states, err := s.States(ctx, scopeLive)
	if err != nil || len(states) != 1 || !states[0].Outbox.Empty() || states[0].Status != alerting.OK {
		t.Errorf("final state %+v (%v): want ok with an empty outbox", states, err)
	}
}

// A replica that claims a delivery, sends it and stops before recording it
// (killed mid-delivery) leaves its lease to run out; then the other replica
// sends the same event again with the same webhook-id, once, and the delivery
// ends delivered.
func testAlertReplicaStoppedMidDelivery(t *testing.T, s ports.AlertStore) {
	rs := newReplicaSetup(t, s, 1)
	survivor := rs.replica("replica-b")
	ctx := t.Context()
	rs.clock.Set(rs.start.Add(5 * time.Second))
	rs.traffic.set(100, 50)
	if _, err := rs.replica("replica-a").evaluator.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	now := rs.clock.Now()
	lease := app.DefaultAlertConfig().DeliveryLease
	claimed, err := s.Claim(ctx, "replica-a", now, now.Add(lease), ofLive(10)) // replica a's worker...
	if err != nil || len(claimed) != 1 {
		t.Fatalf("replica a claimed %d deliveries (%v), want the firing event's one", len(claimed), err)
	}
	endpoint := rs.endpoints[0].ID
	rs.receiver.record(endpoint, claimed[0].Event.ID) // ...sent it, and was killed before recording it.

	rs.clock.Advance(lease - time.Second)
	if n, err := survivor.worker.DeliverOnce(ctx); err != nil || n != 0 {
		t.Fatalf("replica b within a's lease claimed %d (%v), want none", n, err)
	}
	rs.clock.Advance(time.Second)
	if n, err := survivor.worker.DeliverOnce(ctx); err != nil || n != 1 {
		t.Fatalf("replica b after a's lease ran out claimed %d (%v), want the delivery", n, err)
	}
	rs.clock.Advance(time.Hour)
	if n, err := survivor.worker.DeliverOnce(ctx); err != nil || n != 0 {
		t.Errorf("an hour later replica b claimed %d (%v), want none: it was delivered", n, err)
	}
	got := rs.receiver.received(endpoint)
	if len(got) != 2 || got[0] != got[1] || got[0] != claimed[0].Event.ID {
		t.Errorf("the receiver got %v, want the event %s twice (the same webhook-id)", got, claimed[0].Event.ID)
	}
	d, err := s.Delivery(ctx, scopeLive, claimed[0].ID)
	if err != nil || d.Status != alerting.DeliveryDelivered || d.Attempts != 1 {
		t.Errorf("delivery after the takeover: %+v (%v); want delivered after 1 recorded attempt", d, err)
	}
}
