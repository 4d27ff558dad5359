package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
//
// Accounts share a pass as walks do: their statistics calls run in parallel
// (as many as the walks allow at once, one per account), in turns between the
// accounts, and each account may spend EvaluationBudget of the pass. What an
// account has left when its budget or the slot runs out waits for the next
// slot, least recently evaluated first, counted and logged with the account.
type AlertEvaluator struct {
	store    ports.AlertStore
	stats    *Statistics
	clock    ports.Clock
	links    *alertLinks
	owner    string
	interval time.Duration
	budget   time.Duration
	parallel int
	retain   time.Duration
	bound    *queueBound
	metrics  AlertMetrics
	log      *zap.Logger
	wake     func()

	poll time.Duration
	loop loop

	mu        sync.Mutex
	lastSlot  time.Time // the last slot this replica evaluated or saw taken
	runs      int
	evaluated map[string]time.Time // rule id -> the last slot this replica evaluated it at
	heaviest  accountTime          // of this replica's last pass
}

// accountTime is the time an account's statistics took in a pass.
type accountTime struct {
	account string
	took    time.Duration
}

// NewAlertEvaluator returns a stopped evaluator; owner names this replica in
// the lease.
func NewAlertEvaluator(store ports.AlertStore, got *Statistics, clock ports.Clock, links ports.PortalLinker,
	owner string, cfg AlertConfig, log *zap.Logger) *AlertEvaluator {
	log = named(log, "alerts")
	return &AlertEvaluator{store: store, stats: got, clock: clock, links: &alertLinks{linker: links, ttl: cfg.PortalLinkTTL},
		owner: owner, interval: cfg.EvaluationInterval, budget: cfg.EvaluationBudget, parallel: got.parallelWalks(),
		retain: cfg.HistoryRetention, bound: newQueueBound(store, clock, cfg, log), metrics: alertMetricsOf(cfg),
		poll: cfg.Poll, log: log, wake: func() {}, evaluated: map[string]time.Time{}}
}

// WakeOnEvents makes new events wake worker at once.
func (e *AlertEvaluator) WakeOnEvents(worker *AlertDeliverer) { e.wake = worker.Wake }

// Tick evaluates the current slot if no replica has yet: it takes the slot's
// lease (until the slot ends) and evaluates every rule. It reports whether
// this replica evaluated. Slots that passed since the one before, with no
// evaluation started in them, are counted and logged with the account whose
// rules took the most of the pass before.
func (e *AlertEvaluator) Tick(ctx context.Context) (bool, error) {
	now := e.clock.Now()
	slot := now.Truncate(e.interval)
	e.mu.Lock()
	seen := !slot.After(e.lastSlot)
	skipped := 0
	if !seen && !e.lastSlot.IsZero() {
		skipped = int(slot.Sub(e.lastSlot)/e.interval) - 1
	}
	heaviest := e.heaviest
	e.mu.Unlock()
	if seen {
		return false, nil
	}
	if skipped > 0 {
		e.metrics.ObserveSlotsSkipped(skipped)
		e.log.Warn("alert evaluation slots skipped: the pass before ran past them", zap.Int("slots", skipped),
			zap.String("account", heaviest.account), zap.Duration("account_took", heaviest.took))
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

// ruleGroup is rules of one scope whose statistics queries are equal: one
// call serves them all.
type ruleGroup struct {
	q     stats.Query
	rules []alerting.Rule
	last  time.Time // the least recent evaluation of its rules
}

// accountPass is one account's share of a pass: its groups, least recently
// evaluated first, and what they took.
type accountPass struct {
	account   string
	groups    []*ruleGroup
	next      int // groups[next] is the next to evaluate
	took      time.Duration
	endpoints map[domain.Scope][]alerting.Endpoint // read once per pass
}

// Evaluate evaluates, at slot, every enabled rule not evaluated at slot yet
// (a state not written because nothing changed counts as not evaluated: a
// second evaluation decides the same), within each account's budget and the
// slot, and flushes every state's outbox it finds full. The first error is
// returned once every account had its turns; a rule whose statistics fail
// records the error in its state (reason evaluation_error) and keeps its
// status.
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
	var errs []error
	var due []alerting.Rule
	for _, r := range rules {
		st := byRule[r.ID]
		if !st.Outbox.Empty() {
			if st, err = e.flush(ctx, st); err != nil {
				errs = append(errs, err)
				continue
			}
			byRule[r.ID] = st
		}
		if r.Enabled && st.EvaluatedAt.Before(slot) {
			due = append(due, r)
		}
	}
	passes := e.plan(due, byRule, slot)
	errs = append(errs, e.run(ctx, passes, byRule, slot)...)
	return errors.Join(errs...)
}

// plan groups the rules due by account, then by statistics query, each
// account's groups least recently evaluated first (by this replica, or as the
// stored state says), and orders the accounts with the fewest groups first.
func (e *AlertEvaluator) plan(due []alerting.Rule, byRule map[string]alerting.State, slot time.Time) []*accountPass {
	e.mu.Lock()
	for id, at := range e.evaluated {
		if slot.Sub(at) > 24*time.Hour {
			delete(e.evaluated, id) // deleted, disabled, or evaluated by other replicas since
		}
	}
	last := func(r alerting.Rule) time.Time {
		at := byRule[r.ID].EvaluatedAt
		if mine := e.evaluated[r.ID]; mine.After(at) {
			return mine
		}
		return at
	}
	byAccount := map[string]*accountPass{}
	byQuery := map[string]*ruleGroup{}
	var passes []*accountPass
	for _, r := range due {
		p := byAccount[r.Scope.Account]
		if p == nil {
			p = &accountPass{account: r.Scope.Account, endpoints: map[domain.Scope][]alerting.Endpoint{}}
			byAccount[r.Scope.Account] = p
			passes = append(passes, p)
		}
		q := r.StatsQuery(slot)
		key := statsKey(q)
		g := byQuery[key]
		if g == nil {
			g = &ruleGroup{q: q, last: last(r)}
			byQuery[key] = g
			p.groups = append(p.groups, g)
		}
		g.rules = append(g.rules, r)
		if at := last(r); at.Before(g.last) {
			g.last = at
		}
	}
	e.mu.Unlock()
	for _, p := range passes {
		slices.SortStableFunc(p.groups, func(a, b *ruleGroup) int { return a.last.Compare(b.last) })
	}
	slices.SortFunc(passes, func(a, b *accountPass) int {
		return cmp.Or(cmp.Compare(len(a.groups), len(b.groups)), cmp.Compare(a.account, b.account))
	})
	return passes
}

// run evaluates the passes' groups on as many workers as the walks allow,
// each taking the next account in turn and one group of it, so that no
// account waits for another's groups but one at a time; an account leaves
// the turns when its groups are done, its budget spent, or the slot over.
func (e *AlertEvaluator) run(ctx context.Context, passes []*accountPass, byRule map[string]alerting.State, slot time.Time) []error {
	if len(passes) == 0 {
		return nil
	}
	turns := make(chan *accountPass, len(passes))
	for _, p := range passes {
		turns <- p
	}
	var mu sync.Mutex
	var errs []error
	left := len(passes)
	var workers sync.WaitGroup
	for range min(e.parallel, len(passes)) {
		workers.Go(func() {
			for p := range turns {
				g := p.groups[p.next]
				evaluated, groupErrs := e.evaluateGroup(ctx, p, g, byRule, slot)
				if evaluated {
					p.next++
				}
				mu.Lock()
				errs = append(errs, groupErrs...)
				done := p.next == len(p.groups) || !evaluated || p.took >= e.budget || ctx.Err() != nil
				if done {
					if ctx.Err() == nil {
						e.endPass(p, slot)
					}
					if left--; left == 0 {
						close(turns)
					}
				}
				mu.Unlock()
				if !done {
					turns <- p
				}
			}
		})
	}
	workers.Wait()
	e.mu.Lock()
	e.heaviest = accountTime{}
	for _, p := range passes {
		if p.took > e.heaviest.took {
			e.heaviest = accountTime{account: p.account, took: p.took}
		}
	}
	e.mu.Unlock()
	return errs
}

// endPass counts and logs what an account's pass left for the next slot.
func (e *AlertEvaluator) endPass(p *accountPass, slot time.Time) {
	deferred := 0
	for _, g := range p.groups[p.next:] {
		deferred += len(g.rules)
	}
	if deferred == 0 {
		return
	}
	e.metrics.ObserveEvaluationsDeferred(deferred)
	e.log.Warn("alert rules left for the next slot: the account used its evaluation budget, or the slot ended",
		zap.String("account", p.account), zap.Int("rules", deferred), zap.Duration("took", p.took),
		zap.Duration("budget", e.budget), zap.Time("slot", slot))
}

// evaluateGroup computes one group's statistics and decides each of its
// rules, unless the slot is over first. It reports whether it evaluated.
func (e *AlertEvaluator) evaluateGroup(ctx context.Context, p *accountPass, g *ruleGroup, byRule map[string]alerting.State,
	slot time.Time) (bool, []error) {
	started := e.clock.Now()
	remaining := slot.Add(e.interval).Sub(started)
	if remaining <= 0 {
		return false, nil
	}
	// A call still running when the slot ends is given up: the next slot's
	// pass must start on time.
	callCtx, cancel := context.WithTimeout(ctx, remaining)
	got, statsErr := e.stats.Compute(callCtx, domain.Principal{Scope: g.q.Scope}, g.q)
	cancel()
	defer func() { p.took += e.clock.Now().Sub(started) }()
	if ctx.Err() != nil {
		return false, []error{ctx.Err()}
	}
	if statsErr != nil && callCtx.Err() != nil {
		return false, nil
	}
	var errs []error
	for _, r := range g.rules {
		var obs alerting.Observation
		var failure string
		if statsErr != nil {
			failure = statsErr.Error()
		} else {
			obs = r.Observe(got)
		}
		if err := e.decide(ctx, r, byRule[r.ID], slot, obs, failure, p.endpoints); err != nil {
			errs = append(errs, err)
		}
	}
	if statsErr != nil {
		errs = append(errs, fmt.Errorf("alerts: statistics of %d rules: %w", len(g.rules), statsErr))
	}
	e.mu.Lock()
	for _, r := range g.rules {
		e.evaluated[r.ID] = slot
	}
	e.mu.Unlock()
	return true, errs
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
		e.bound.enforce(ctx, st.Scope.Account)
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
