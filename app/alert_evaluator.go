package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// evaluationLease names the lease the replica evaluating a slot holds.
const evaluationLease = "alerts.evaluate"

// pruneEvery is how many evaluations pass between two prunings of the history
// and the delivery log.
const pruneEvery = 60

// AlertEvaluator evaluates every enabled rule once per evaluation slot (the
// multiples of AlertConfig.EvaluationInterval), through the statistics use
// case, so that an alert says what GET /v1/stats says of the same window.
//
// Replicas agree in two ways. The replica that gets the slot's lease evaluates
// it, the others wait for the next slot: the statistics are computed once.
// And each rule's state changes by compare-and-set from the version it was
// read at, so that two evaluations of one rule (a lease that ran out
// mid-slot) cannot both decide: the one that loses finds the rule evaluated
// and leaves it. A decision's transition and deliveries are written in the
// same swap, as the state's outbox, then copied out under derived ids and the
// outbox emptied; whoever finds an outbox full copies it again (flush), so no
// decision is lost and none is queued twice.
type AlertEvaluator struct {
	store    ports.AlertStore
	stats    *Statistics
	clock    ports.Clock
	links    *alertLinks
	owner    string
	interval time.Duration
	retain   time.Duration
	log      *zap.Logger
	wake     func()

	poll time.Duration
	loop loop

	mu       sync.Mutex
	lastSlot time.Time // the last slot this replica evaluated or saw taken
	runs     int
}

// NewAlertEvaluator returns a stopped evaluator; owner names this replica in
// the lease.
func NewAlertEvaluator(store ports.AlertStore, got *Statistics, clock ports.Clock, links ports.PortalLinker,
	owner string, cfg AlertConfig, log *zap.Logger) *AlertEvaluator {
	return &AlertEvaluator{store: store, stats: got, clock: clock, links: &alertLinks{linker: links, ttl: cfg.PortalLinkTTL},
		owner: owner, interval: cfg.EvaluationInterval, retain: cfg.HistoryRetention, poll: cfg.Poll,
		log: named(log, "alerts"), wake: func() {}}
}

// WakeOnEvents makes new events wake worker at once.
func (e *AlertEvaluator) WakeOnEvents(worker *AlertDeliverer) { e.wake = worker.Wake }

// Tick evaluates the current slot if no replica has yet: it takes the slot's
// lease (until the slot ends) and evaluates every rule. It reports whether
// this replica evaluated.
func (e *AlertEvaluator) Tick(ctx context.Context) (bool, error) {
	now := e.clock.Now()
	slot := now.Truncate(e.interval)
	e.mu.Lock()
	seen := !slot.After(e.lastSlot)
	e.mu.Unlock()
	if seen {
		return false, nil
	}
	held, err := e.store.AcquireLease(ctx, evaluationLease, e.owner, now, slot.Add(e.interval))
	if err != nil {
		return false, fmt.Errorf("alerts: evaluation lease: %w", err)
	}
	e.mu.Lock()
	e.lastSlot = slot
	e.runs++
	prune := e.runs%pruneEvery == 1
	e.mu.Unlock()
	if !held {
		return false, nil
	}
	if err := e.Evaluate(ctx, slot); err != nil {
		return true, err
	}
	if prune {
		if _, err := e.store.PruneAlerts(ctx, now.Add(-e.retain)); err != nil {
			e.log.Warn("pruning the alert history failed", zap.Error(err))
		}
	}
	return true, nil
}

// Evaluate evaluates, at slot, every enabled rule not evaluated at slot yet
// (a state not written because nothing changed counts as not evaluated: a
// second evaluation decides the same),
// and flushes every state's outbox it finds full. Rules of one scope and
// window with the same filters share one statistics call. The first error is
// returned once every rule had its turn; a rule whose statistics fail records
// the error in its state (reason evaluation_error) and keeps its status.
func (e *AlertEvaluator) Evaluate(ctx context.Context, slot time.Time) error {
	rules, err := e.store.AllRules(ctx)
	if err != nil {
		return fmt.Errorf("alerts: rules: %w", err)
	}
	states, err := e.store.AllStates(ctx)
	if err != nil {
		return fmt.Errorf("alerts: states: %w", err)
	}
	byRule := make(map[string]alerting.State, len(states))
	for _, st := range states {
		byRule[st.RuleID] = st
	}
	type group struct {
		q     stats.Query
		rules []alerting.Rule
	}
	var groups []*group
	byQuery := map[string]*group{}
	var errs []error
	for _, r := range rules {
		st := byRule[r.ID]
		if !st.Outbox.Empty() {
			if st, err = e.flush(ctx, st); err != nil {
				errs = append(errs, err)
				continue
			}
			byRule[r.ID] = st
		}
		if !r.Enabled || !st.EvaluatedAt.Before(slot) {
			continue
		}
		q := r.StatsQuery(slot)
		key := statsKey(q)
		g := byQuery[key]
		if g == nil {
			g = &group{q: q}
			byQuery[key] = g
			groups = append(groups, g)
		}
		g.rules = append(g.rules, r)
	}
	endpoints := map[domain.Scope][]alerting.Endpoint{}
	for _, g := range groups {
		got, statsErr := e.stats.Compute(ctx, domain.Principal{Scope: g.q.Scope}, g.q)
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
		for _, r := range g.rules {
			var obs alerting.Observation
			var failure string
			if statsErr != nil {
				failure = statsErr.Error()
			} else {
				obs = r.Observe(got)
			}
			if err := e.decide(ctx, r, byRule[r.ID], slot, obs, failure, endpoints); err != nil {
				errs = append(errs, err)
			}
		}
		if statsErr != nil {
			errs = append(errs, fmt.Errorf("alerts: statistics of %d rules: %w", len(g.rules), statsErr))
		}
	}
	return errors.Join(errs...)
}

// statsKey tells statistics queries apart: rules with equal keys share a call.
func statsKey(q stats.Query) string {
	f := q.Filter
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%d\x00%d", q.Scope.Account, q.Scope.Domain,
		f.Name, f.PathPrefix, f.Method, f.StatusMin, f.StatusMax, q.From.UnixNano(), q.To.UnixNano())
}

// refreshEvery is how many evaluations a state that did not change (same
// status, reason and error, no transition, no event) goes without being
// written: its value and window are then up to that many evaluations old.
// Writing 1,000 unchanged states a minute was most of what evaluating cost a
// store that reads whole collections (FerretDB: docs/benchmarks.md).
const refreshEvery = 10

// decide steps rule r from state st on what was observed, swaps the outcome in
// with its outbox, and flushes the outbox.
func (e *AlertEvaluator) decide(ctx context.Context, r alerting.Rule, st alerting.State, slot time.Time,
	obs alerting.Observation, failure string, endpoints map[domain.Scope][]alerting.Endpoint) error {
	step := r.Step(st, slot, obs, failure)
	next := step.State
	if step.Transition == nil && step.Event == nil && st.Status != "" && next.Status == st.Status &&
		next.Reason == st.Reason && next.Error == st.Error && slot.Sub(st.EvaluatedAt) < refreshEvery*e.interval {
		return nil // nothing to tell: a later evaluation decides from the same state
	}
	if step.Transition != nil {
		next.Outbox.Transitions = append(next.Outbox.Transitions, *step.Transition)
	}
	if step.Event != nil {
		event := *step.Event
		event.PortalURL = e.links.link(event, slot)
		targets, err := ruleEndpoints(ctx, e.store, r, endpoints)
		if err != nil {
			return err
		}
		for _, target := range targets {
			next.Outbox.Deliveries = append(next.Outbox.Deliveries, alerting.NewDelivery(event, r.Scope, target.ID, slot))
		}
	}
	switch err := e.store.SwapState(ctx, next, st.Version); {
	case errors.Is(err, ports.ErrStale), errors.Is(err, ports.ErrNotFound):
		return nil // another replica evaluated it, or it was deleted meanwhile
	case err != nil:
		return fmt.Errorf("alerts: state of rule %s: %w", r.ID, err)
	}
	if step.Transition != nil {
		e.log.Info("alert transition", zap.String("rule", r.ID), zap.String("account", r.Scope.Account),
			zap.String("from", string(step.Transition.From)), zap.String("to", string(step.Transition.To)),
			zap.String("reason", string(step.Transition.Reason)), zap.Float64("value", obs.Value))
	}
	if next.Outbox.Empty() {
		return nil
	}
	next.Version = st.Version + 1
	_, err := e.flush(ctx, next)
	return err
}

// flush copies a state's outbox out to the history and the delivery queue,
// then swaps the state with an empty outbox in, and returns it. Both writes
// are idempotent, so a flush repeated by another replica, or after a failure,
// queues nothing twice.
func (e *AlertEvaluator) flush(ctx context.Context, st alerting.State) (alerting.State, error) {
	if err := e.store.AppendTransitions(ctx, st.Outbox.Transitions); err != nil {
		return st, fmt.Errorf("alerts: history of rule %s: %w", st.RuleID, err)
	}
	if err := e.store.Enqueue(ctx, st.Outbox.Deliveries); err != nil {
		return st, fmt.Errorf("alerts: deliveries of rule %s: %w", st.RuleID, err)
	}
	if len(st.Outbox.Deliveries) > 0 {
		e.wake()
	}
	flushed := st.Clone()
	flushed.Outbox = alerting.Outbox{}
	switch err := e.store.SwapState(ctx, flushed, st.Version); {
	case errors.Is(err, ports.ErrStale), errors.Is(err, ports.ErrNotFound):
		return st, nil // flushed and moved on by another replica, or deleted
	case err != nil:
		return st, fmt.Errorf("alerts: state of rule %s: %w", st.RuleID, err)
	}
	flushed.Version = st.Version + 1
	return flushed, nil
}

// Start runs Tick every Poll until Stop; a second Start is a no-op.
func (e *AlertEvaluator) Start() {
	e.loop.start(func(ctx context.Context) {
		ticker := time.NewTicker(e.poll)
		defer ticker.Stop()
		for {
			if _, err := e.Tick(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("alert evaluation failed", zap.Error(err))
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	})
}

// Stop ends the loop and waits for it, or for ctx.
func (e *AlertEvaluator) Stop(ctx context.Context) error { return e.loop.stop(ctx) }
