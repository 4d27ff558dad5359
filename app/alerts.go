package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// Bounds of a scope's alerting configuration, so that one account cannot make
// every delivery slow (the rules' bound is AlertConfig.MaxRules).
const (
	MaxEndpointsPerScope = 50
	// RecentTransitions is how many of its last transitions a rule's state
	// shows.
	RecentTransitions = 5
	// maxFiringTransitions bounds the history read to find the firing periods
	// of a range.
	maxFiringTransitions = 500
	// MaxAttemptsListed bounds one page of the delivery log.
	MaxAttemptsListed = 100
)

// Alerts is the alerting use case of the API: rules, endpoints, states and
// history, test events. An API key may do everything in its scope; a portal
// session (read-only) may read states only, of its application's rules when
// it is bound to one.
type Alerts struct {
	store    ports.AlertStore
	sender   ports.WebhookSender
	clock    ports.Clock
	links    *alertLinks
	maxRules int
	bound    *queueBound
	wake     func() // wakes this replica's delivery worker
}

// NewAlerts returns the use case over store, checking endpoint URLs with sender
// and linking events to the portal with links (nil: no links).
func NewAlerts(store ports.AlertStore, sender ports.WebhookSender, clock ports.Clock, links ports.PortalLinker, cfg AlertConfig,
	log *zap.Logger) *Alerts {
	return &Alerts{store: store, sender: sender, clock: clock, links: &alertLinks{linker: links, ttl: cfg.PortalLinkTTL},
		maxRules: cfg.MaxRules, bound: newQueueBound(store, clock, cfg, named(log, "alerts")), wake: func() {}}
}

// WakeOnEvents makes queued test events wake worker at once.
func (a *Alerts) WakeOnEvents(worker *AlertDeliverer) { a.wake = worker.Wake }

// errReadOnly refuses what a portal session may not do.
var errReadOnly = fmt.Errorf("a portal session may only read alert states: use an API key: %w", ports.ErrForbidden)

func writer(p domain.Principal) error {
	if p.ReadOnly || p.Name != "" {
		return errReadOnly
	}
	return nil
}

func (a *Alerts) now() time.Time { return domain.Micro(a.clock.Now()) }

// CreateRule validates fields (a JSON body's, decoded) as a new rule of the principal's scope and stores
// it.
func (a *Alerts) CreateRule(ctx context.Context, p domain.Principal, fields map[string]any) (alerting.Rule, error) {
	if err := writer(p); err != nil {
		return alerting.Rule{}, err
	}
	r, err := alerting.ParseRule(fields, alerting.DefaultRule())
	if err != nil {
		return alerting.Rule{}, err
	}
	existing, err := a.store.Rules(ctx, p.Scope)
	if err != nil {
		return alerting.Rule{}, fmt.Errorf("alert rules: %w", err)
	}
	if len(existing) >= a.maxRules {
		return alerting.Rule{}, &domain.ValidationError{Message: fmt.Sprintf("an account may have at most %d alert rules per domain: delete one first", a.maxRules)}
	}
	if err := a.checkEndpoints(ctx, p.Scope, r.EndpointIDs); err != nil {
		return alerting.Rule{}, err
	}
	if r.ID, err = alerting.NewID(alerting.RuleIDPrefix); err != nil {
		return alerting.Rule{}, err
	}
	r.Scope, r.CreatedAt, r.UpdatedAt = p.Scope, a.now(), a.now()
	if err := a.store.CreateRule(ctx, r); err != nil {
		return alerting.Rule{}, fmt.Errorf("create alert rule: %w", err)
	}
	return r, nil
}

// UpdateRule applies fields (a JSON body's, decoded) to a stored rule.
func (a *Alerts) UpdateRule(ctx context.Context, p domain.Principal, id string, fields map[string]any) (alerting.Rule, error) {
	if err := writer(p); err != nil {
		return alerting.Rule{}, err
	}
	stored, err := a.Rule(ctx, p, id)
	if err != nil {
		return alerting.Rule{}, err
	}
	r, err := alerting.ParseRule(fields, stored)
	if err != nil {
		return alerting.Rule{}, err
	}
	if err := a.checkEndpoints(ctx, p.Scope, r.EndpointIDs); err != nil {
		return alerting.Rule{}, err
	}
	r.UpdatedAt = a.now()
	if err := a.store.UpdateRule(ctx, r); err != nil {
		return alerting.Rule{}, fmt.Errorf("update alert rule: %w", err)
	}
	return r, nil
}

// checkEndpoints refuses endpoint ids that name no endpoint of scope.
func (a *Alerts) checkEndpoints(ctx context.Context, scope domain.Scope, ids []string) error {
	for i, id := range ids {
		if _, err := a.store.Endpoint(ctx, scope, id); errors.Is(err, ports.ErrNotFound) {
			return &domain.ValidationError{Message: "the alert rule is invalid", Fields: []domain.FieldError{
				{Field: fmt.Sprintf("endpoint_ids[%d]", i), Message: "names no webhook endpoint of this account and domain"}}}
		} else if err != nil {
			return fmt.Errorf("alert rule endpoints: %w", err)
		}
	}
	return nil
}

// Rule returns one rule of the principal's scope (an API key's).
func (a *Alerts) Rule(ctx context.Context, p domain.Principal, id string) (alerting.Rule, error) {
	if err := writer(p); err != nil {
		return alerting.Rule{}, err
	}
	if !alerting.IsID(id, alerting.RuleIDPrefix) {
		return alerting.Rule{}, fmt.Errorf("alert rule %q: %w", id, ports.ErrNotFound)
	}
	r, err := a.store.Rule(ctx, p.Scope, id)
	if err != nil {
		return alerting.Rule{}, fmt.Errorf("alert rule: %w", err)
	}
	return r, nil
}

// Rules returns the rules of the principal's scope, oldest first.
func (a *Alerts) Rules(ctx context.Context, p domain.Principal) ([]alerting.Rule, error) {
	if err := writer(p); err != nil {
		return nil, err
	}
	rules, err := a.store.Rules(ctx, p.Scope)
	if err != nil {
		return nil, fmt.Errorf("alert rules: %w", err)
	}
	return rules, nil
}

// DeleteRule deletes a rule with its state and history.
func (a *Alerts) DeleteRule(ctx context.Context, p domain.Principal, id string) error {
	if _, err := a.Rule(ctx, p, id); err != nil {
		return err
	}
	if err := a.store.DeleteRule(ctx, p.Scope, id); err != nil {
		return fmt.Errorf("delete alert rule: %w", err)
	}
	return nil
}

// RuleState is a rule with its state and recent history, as the API shows it.
type RuleState struct {
	Rule alerting.Rule
	// State is the zero AlertState (status "") for a rule never evaluated.
	State alerting.State
	// Recent are its last transitions, newest first.
	Recent []alerting.Transition
	// Firing are the periods of the asked range when it was firing, oldest
	// first; an open period has a zero To.
	Firing []Period
}

// Period is a span of time [From, To); To is zero while it lasts.
type Period struct{ From, To time.Time }

// States returns the state of every rule the principal may see, with the
// periods of [from, to) when each was firing (a zero to is now, a zero from a
// day before to). A portal session bound to one application sees the rules of
// that application.
func (a *Alerts) States(ctx context.Context, p domain.Principal, from, to time.Time) ([]RuleState, error) {
	if to.IsZero() {
		to = a.now()
	}
	if from.IsZero() {
		from = to.Add(-stats.DefaultRange)
	}
	rules, err := a.store.Rules(ctx, p.Scope)
	if err != nil {
		return nil, fmt.Errorf("alert states: %w", err)
	}
	states, err := a.store.States(ctx, p.Scope)
	if err != nil {
		return nil, fmt.Errorf("alert states: %w", err)
	}
	byRule := make(map[string]alerting.State, len(states))
	for _, st := range states {
		byRule[st.RuleID] = st
	}
	out := []RuleState{}
	for _, r := range rules {
		if p.Name != "" && r.Filter.Name != p.Name {
			continue
		}
		history, err := a.store.Transitions(ctx, p.Scope, r.ID, ports.TransitionQuery{To: to, Limit: maxFiringTransitions})
		if err != nil {
			return nil, fmt.Errorf("alert history: %w", err)
		}
		st := byRule[r.ID]
		st.Outbox = alerting.Outbox{}
		recent := history[:min(len(history), RecentTransitions)]
		out = append(out, RuleState{Rule: r, State: st, Recent: recent, Firing: firingPeriods(history, from, to)})
	}
	return out, nil
}

// firingPeriods reads the periods of [from, to) when the rule was firing off
// its history up to to, newest first.
func firingPeriods(history []alerting.Transition, from, to time.Time) []Period {
	var periods []Period
	for _, tr := range slices.Backward(history) {
		switch {
		case tr.To == alerting.Firing:
			periods = append(periods, Period{From: tr.At})
		case tr.From == alerting.Firing && len(periods) > 0 && periods[len(periods)-1].To.IsZero():
			periods[len(periods)-1].To = tr.At
		}
	}
	kept := periods[:0]
	for _, p := range periods {
		if !p.To.IsZero() && !p.To.After(from) {
			continue // over before the range
		}
		if p.From.Before(from) {
			p.From = from
		}
		kept = append(kept, p)
	}
	return kept
}

// History returns a rule's transitions, newest first, before seq before (0:
// the newest), at most limit.
func (a *Alerts) History(ctx context.Context, p domain.Principal, id string, before int64, limit int) ([]alerting.Transition, error) {
	if _, err := a.Rule(ctx, p, id); err != nil {
		return nil, err
	}
	trs, err := a.store.Transitions(ctx, p.Scope, id, ports.TransitionQuery{Before: before, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("alert history: %w", err)
	}
	return trs, nil
}

// TestRule queues an alert.test event of the rule to its endpoints (all of the
// scope's when it names none) and wakes the delivery worker. The event looks
// like a firing one, on the rule's last observation.
func (a *Alerts) TestRule(ctx context.Context, p domain.Principal, id string) (alerting.Event, []alerting.Delivery, error) {
	r, err := a.Rule(ctx, p, id)
	if err != nil {
		return alerting.Event{}, nil, err
	}
	states, err := a.store.States(ctx, p.Scope)
	if err != nil {
		return alerting.Event{}, nil, fmt.Errorf("alert test: %w", err)
	}
	var st alerting.State
	if i := slices.IndexFunc(states, func(s alerting.State) bool { return s.RuleID == id }); i >= 0 {
		st = states[i]
	}
	now := a.now()
	event, err := alerting.TestEvent(r, st, now)
	if err != nil {
		return alerting.Event{}, nil, err
	}
	if event.Observation.From.IsZero() {
		event.Observation.From, event.Observation.To = r.WindowAt(now)
	}
	event.PortalURL = a.links.link(event, now)
	endpoints, err := ruleEndpoints(ctx, a.store, r, nil)
	if err != nil {
		return alerting.Event{}, nil, err
	}
	deliveries := make([]alerting.Delivery, len(endpoints))
	for i, e := range endpoints {
		deliveries[i] = alerting.NewDelivery(event, r.Scope, e.ID, now)
	}
	if err := a.store.Enqueue(ctx, deliveries); err != nil {
		return alerting.Event{}, nil, fmt.Errorf("alert test: %w", err)
	}
	a.bound.enforce(ctx, p.Account)
	a.wake()
	return event, deliveries, nil
}

// ruleEndpoints returns the enabled endpoints a rule's events go to: those it
// names that still exist, or every endpoint of its scope. scopeEndpoints, when
// set, caches the scope's endpoints across rules of one evaluation.
func ruleEndpoints(ctx context.Context, store ports.AlertConfigStore, r alerting.Rule, scopeEndpoints map[domain.Scope][]alerting.Endpoint) ([]alerting.Endpoint, error) {
	all, cached := scopeEndpoints[r.Scope]
	if !cached {
		var err error
		if all, err = store.Endpoints(ctx, r.Scope); err != nil {
			return nil, fmt.Errorf("alert endpoints: %w", err)
		}
		if scopeEndpoints != nil {
			scopeEndpoints[r.Scope] = all
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(e alerting.Endpoint) bool {
		return !e.Enabled || (len(r.EndpointIDs) > 0 && !slices.Contains(r.EndpointIDs, e.ID))
	}), nil
}

// CreateEndpoint validates fields (a JSON body's, decoded) as a new endpoint, checks that its URL may be
// reached, gives it a fresh secret and stores it. The secret is returned here
// and by RotateSecret only.
func (a *Alerts) CreateEndpoint(ctx context.Context, p domain.Principal, fields map[string]any) (alerting.Endpoint, error) {
	if err := writer(p); err != nil {
		return alerting.Endpoint{}, err
	}
	e, err := alerting.ParseEndpoint(fields, alerting.DefaultEndpoint())
	if err != nil {
		return alerting.Endpoint{}, err
	}
	if err := a.sender.CheckURL(ctx, e.URL); err != nil {
		return alerting.Endpoint{}, err
	}
	existing, err := a.store.Endpoints(ctx, p.Scope)
	if err != nil {
		return alerting.Endpoint{}, fmt.Errorf("alert endpoints: %w", err)
	}
	if len(existing) >= MaxEndpointsPerScope {
		return alerting.Endpoint{}, &domain.ValidationError{Message: fmt.Sprintf("an account may have at most %d webhook endpoints per domain: delete one first", MaxEndpointsPerScope)}
	}
	if e.ID, err = alerting.NewID(alerting.EndpointIDPrefix); err != nil {
		return alerting.Endpoint{}, err
	}
	secret, err := alerting.NewWebhookSecret()
	if err != nil {
		return alerting.Endpoint{}, err
	}
	now := a.now()
	e.Scope, e.CreatedAt, e.UpdatedAt = p.Scope, now, now
	e.Secrets = []alerting.WebhookSecret{{Secret: secret, CreatedAt: now}}
	if err := a.store.CreateEndpoint(ctx, e); err != nil {
		return alerting.Endpoint{}, fmt.Errorf("create webhook endpoint: %w", err)
	}
	return e, nil
}

// Endpoint returns one endpoint of the principal's scope.
func (a *Alerts) Endpoint(ctx context.Context, p domain.Principal, id string) (alerting.Endpoint, error) {
	if err := writer(p); err != nil {
		return alerting.Endpoint{}, err
	}
	if !alerting.IsID(id, alerting.EndpointIDPrefix) {
		return alerting.Endpoint{}, fmt.Errorf("webhook endpoint %q: %w", id, ports.ErrNotFound)
	}
	e, err := a.store.Endpoint(ctx, p.Scope, id)
	if err != nil {
		return alerting.Endpoint{}, fmt.Errorf("webhook endpoint: %w", err)
	}
	return e, nil
}

// Endpoints returns the endpoints of the principal's scope, oldest first.
func (a *Alerts) Endpoints(ctx context.Context, p domain.Principal) ([]alerting.Endpoint, error) {
	if err := writer(p); err != nil {
		return nil, err
	}
	es, err := a.store.Endpoints(ctx, p.Scope)
	if err != nil {
		return nil, fmt.Errorf("webhook endpoints: %w", err)
	}
	return es, nil
}

// UpdateEndpoint applies fields (a JSON body's, decoded) to a stored endpoint; a new URL is
// checked as a new endpoint's is.
func (a *Alerts) UpdateEndpoint(ctx context.Context, p domain.Principal, id string, fields map[string]any) (alerting.Endpoint, error) {
	stored, err := a.Endpoint(ctx, p, id)
	if err != nil {
		return alerting.Endpoint{}, err
	}
	e, err := alerting.ParseEndpoint(fields, stored)
	if err != nil {
		return alerting.Endpoint{}, err
	}
	if e.URL != stored.URL {
		if err := a.sender.CheckURL(ctx, e.URL); err != nil {
			return alerting.Endpoint{}, err
		}
	}
	e.UpdatedAt = a.now()
	if err := a.store.UpdateEndpoint(ctx, e); err != nil {
		return alerting.Endpoint{}, fmt.Errorf("update webhook endpoint: %w", err)
	}
	return e, nil
}

// RotateSecret gives an endpoint a new secret; the one before keeps signing
// beside it for domain.SecretRotationGrace.
func (a *Alerts) RotateSecret(ctx context.Context, p domain.Principal, id string) (alerting.Endpoint, error) {
	e, err := a.Endpoint(ctx, p, id)
	if err != nil {
		return alerting.Endpoint{}, err
	}
	secret, err := alerting.NewWebhookSecret()
	if err != nil {
		return alerting.Endpoint{}, err
	}
	e.Rotate(secret, a.now())
	if err := a.store.UpdateEndpoint(ctx, e); err != nil {
		return alerting.Endpoint{}, fmt.Errorf("rotate webhook secret: %w", err)
	}
	return e, nil
}

// DeleteEndpoint deletes an endpoint; its queued deliveries are abandoned.
func (a *Alerts) DeleteEndpoint(ctx context.Context, p domain.Principal, id string) error {
	if _, err := a.Endpoint(ctx, p, id); err != nil {
		return err
	}
	if err := a.store.DeleteEndpoint(ctx, p.Scope, id); err != nil {
		return fmt.Errorf("delete webhook endpoint: %w", err)
	}
	return nil
}

// Attempts returns the newest limit entries of an endpoint's delivery log.
func (a *Alerts) Attempts(ctx context.Context, p domain.Principal, id string, limit int) ([]alerting.Attempt, error) {
	if _, err := a.Endpoint(ctx, p, id); err != nil {
		return nil, err
	}
	attempts, err := a.store.Attempts(ctx, p.Scope, id, min(max(limit, 1), MaxAttemptsListed))
	if err != nil {
		return nil, fmt.Errorf("delivery log: %w", err)
	}
	return attempts, nil
}

// alertLinks makes the portal links of events.
type alertLinks struct {
	linker ports.PortalLinker
	ttl    time.Duration
}

// link is the portal link of event e at time at, "" without a linker. The
// session in it covers the rule's application, or the whole account.
func (l *alertLinks) link(e alerting.Event, at time.Time) string {
	if l == nil || l.linker == nil {
		return ""
	}
	principal := domain.Principal{Scope: e.Rule.Scope, Name: e.Rule.Filter.Name, ReadOnly: true}
	var expires time.Time
	if l.ttl > 0 {
		expires = at.Add(l.ttl)
	}
	return l.linker.PortalLink(principal, e.PortalView(), expires)
}
