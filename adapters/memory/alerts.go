package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.AlertStore = (*AlertStore)(nil)

// AlertStore is the in-memory ports.AlertStore: maps under one mutex, every
// record copied in and out. It shares nothing with the message store, and like
// it keeps nothing across a restart.
type AlertStore struct {
	mu          sync.Mutex
	rules       table[alerting.Rule]
	endpoints   table[alerting.Endpoint]
	states      map[string]alerting.State // by rule id
	transitions map[string]alerting.Transition
	deliveries  map[string]alerting.Delivery
	attempts    []alerting.Attempt
	leases
}

// NewAlertStore returns an empty store.
func NewAlertStore() *AlertStore {
	return &AlertStore{
		rules: table[alerting.Rule]{what: "rule", byID: map[string]alerting.Rule{},
			key: func(r alerting.Rule) tableKey { return tableKey{r.ID, r.Scope, r.CreatedAt} }, clone: alerting.Rule.Clone},
		endpoints: table[alerting.Endpoint]{what: "endpoint", byID: map[string]alerting.Endpoint{},
			key: func(e alerting.Endpoint) tableKey { return tableKey{e.ID, e.Scope, e.CreatedAt} }, clone: alerting.Endpoint.Clone},
		states: map[string]alerting.State{}, transitions: map[string]alerting.Transition{},
		deliveries: map[string]alerting.Delivery{}}
}

func alertNotFound(what, id string) error {
	return fmt.Errorf("memory: %s %q: %w", what, id, ports.ErrNotFound)
}

// CreateRule stores a new rule.
func (s *AlertStore) CreateRule(_ context.Context, r alerting.Rule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules.create(r)
}

// UpdateRule replaces a stored rule.
func (s *AlertStore) UpdateRule(_ context.Context, r alerting.Rule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules.update(r)
}

// Rule returns one rule of scope.
func (s *AlertStore) Rule(_ context.Context, scope domain.Scope, id string) (alerting.Rule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules.get(scope, id)
}

// Rules returns scope's rules, oldest first.
func (s *AlertStore) Rules(_ context.Context, scope domain.Scope) ([]alerting.Rule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules.list(&scope), nil
}

// AllRules returns every rule.
func (s *AlertStore) AllRules(context.Context) ([]alerting.Rule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rules.list(nil), nil
}

// DeleteRule deletes a rule, its state and its history.
func (s *AlertStore) DeleteRule(_ context.Context, scope domain.Scope, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rules.delete(scope, id); err != nil {
		return err
	}
	delete(s.states, id)
	for key, tr := range s.transitions {
		if tr.RuleID == id {
			delete(s.transitions, key)
		}
	}
	return nil
}

// CreateEndpoint stores a new endpoint.
func (s *AlertStore) CreateEndpoint(_ context.Context, e alerting.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints.create(e)
}

// UpdateEndpoint replaces a stored endpoint.
func (s *AlertStore) UpdateEndpoint(_ context.Context, e alerting.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints.update(e)
}

// Endpoint returns one endpoint of scope.
func (s *AlertStore) Endpoint(_ context.Context, scope domain.Scope, id string) (alerting.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints.get(scope, id)
}

// Endpoints returns scope's endpoints, oldest first.
func (s *AlertStore) Endpoints(_ context.Context, scope domain.Scope) ([]alerting.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints.list(&scope), nil
}

// DeleteEndpoint deletes an endpoint.
func (s *AlertStore) DeleteEndpoint(_ context.Context, scope domain.Scope, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints.delete(scope, id)
}

// States returns the states of scope's rules.
func (s *AlertStore) States(_ context.Context, scope domain.Scope) ([]alerting.State, error) {
	return s.statesWhere(func(st alerting.State) bool { return st.Scope == scope }), nil
}

// AllStates returns every state.
func (s *AlertStore) AllStates(context.Context) ([]alerting.State, error) {
	return s.statesWhere(func(alerting.State) bool { return true }), nil
}

func (s *AlertStore) statesWhere(keep func(alerting.State) bool) []alerting.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []alerting.State{}
	for _, st := range s.states {
		if keep(st) {
			out = append(out, st.Clone())
		}
	}
	slices.SortFunc(out, func(a, b alerting.State) int { return cmp.Compare(a.RuleID, b.RuleID) })
	return out
}

// SwapState stores next if the stored version is prev.
func (s *AlertStore) SwapState(_ context.Context, next alerting.State, prev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.rules.get(next.Scope, next.RuleID); err != nil {
		return err
	}
	if s.states[next.RuleID].Version != prev {
		return fmt.Errorf("memory: state of rule %q is not at version %d: %w", next.RuleID, prev, ports.ErrStale)
	}
	next = next.Clone()
	next.Version = prev + 1
	s.states[next.RuleID] = next
	return nil
}

func transitionKey(ruleID string, seq int64) string { return ruleID + "/" + strconv.FormatInt(seq, 10) }

// AppendTransitions adds transitions not stored yet.
func (s *AlertStore) AppendTransitions(_ context.Context, trs []alerting.Transition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tr := range trs {
		if _, stored := s.transitions[transitionKey(tr.RuleID, tr.Seq)]; !stored {
			s.transitions[transitionKey(tr.RuleID, tr.Seq)] = tr
		}
	}
	return nil
}

// Transitions returns a rule's history, newest first.
func (s *AlertStore) Transitions(_ context.Context, scope domain.Scope, ruleID string, q ports.TransitionQuery) ([]alerting.Transition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []alerting.Transition{}
	for _, tr := range s.transitions {
		if tr.RuleID == ruleID && tr.Scope == scope && (q.Before == 0 || tr.Seq < q.Before) &&
			(q.From.IsZero() || !tr.At.Before(q.From)) && (q.To.IsZero() || tr.At.Before(q.To)) {
			out = append(out, tr)
		}
	}
	slices.SortFunc(out, func(a, b alerting.Transition) int { return cmp.Compare(b.Seq, a.Seq) })
	return out[:min(len(out), max(q.Limit, 0))], nil
}

// Enqueue adds deliveries not queued yet.
func (s *AlertStore) Enqueue(_ context.Context, ds []alerting.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		if _, queued := s.deliveries[d.ID]; !queued {
			s.deliveries[d.ID] = d.Clone()
		}
	}
	return nil
}

// due reports whether Claim may take d at now.
func due(d alerting.Delivery, now time.Time) bool {
	return d.Status == alerting.DeliveryPending && !d.NextAttemptAt.After(now) && !d.LeaseUntil.After(now)
}

// DueAccounts returns the accounts with deliveries due at now.
func (s *AlertStore) DueAccounts(_ context.Context, now time.Time, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	accounts := []string{}
	for _, d := range s.deliveries {
		if len(accounts) < limit && due(d, now) && !seen[d.Scope.Account] {
			seen[d.Scope.Account] = true
			accounts = append(accounts, d.Scope.Account)
		}
	}
	return accounts, nil
}

// Claim leases due deliveries of one account to owner.
func (s *AlertStore) Claim(_ context.Context, owner string, now, until time.Time, q ports.ClaimQuery) ([]alerting.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var claimable []alerting.Delivery
	for _, d := range s.deliveries {
		if d.Scope.Account == q.Account && due(d, now) && !slices.Contains(q.ExceptEndpoints, d.EndpointID) {
			claimable = append(claimable, d)
		}
	}
	slices.SortFunc(claimable, func(a, b alerting.Delivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	claimable = claimable[:min(len(claimable), max(q.Limit, 0))]
	for i := range claimable {
		claimable[i].LeaseOwner, claimable[i].LeaseUntil = owner, until
		s.deliveries[claimable[i].ID] = claimable[i]
		claimable[i] = claimable[i].Clone()
	}
	return claimable, nil
}

// DropExcess deletes an account's pending deliveries beyond limit, down to
// keep.
func (s *AlertStore) DropExcess(_ context.Context, account string, limit, keep int, now time.Time) ([]alerting.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	isPending := func(d alerting.Delivery) bool {
		return d.Scope.Account == account && d.Status == alerting.DeliveryPending
	}
	n := 0
	for _, d := range s.deliveries {
		if isPending(d) {
			n++
		}
	}
	dropped := []alerting.Delivery{}
	if n <= limit {
		return dropped, nil
	}
	pending := make([]alerting.Delivery, 0, n)
	for _, d := range s.deliveries {
		if isPending(d) {
			pending = append(pending, d)
		}
	}
	for _, d := range alerting.Excess(pending, keep, now) {
		delete(s.deliveries, d.ID)
		dropped = append(dropped, d.Clone())
	}
	return dropped, nil
}

// Finish stores the outcome of owner's attempt.
func (s *AlertStore) Finish(_ context.Context, d alerting.Delivery, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.deliveries[d.ID]
	if !ok {
		return alertNotFound("delivery", d.ID)
	}
	if stored.LeaseOwner != owner {
		return fmt.Errorf("memory: delivery %q is leased to another worker: %w", d.ID, ports.ErrStale)
	}
	s.deliveries[d.ID] = d.Clone()
	return nil
}

// Delivery returns one delivery of scope.
func (s *AlertStore) Delivery(_ context.Context, scope domain.Scope, id string) (alerting.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[id]
	if !ok || d.Scope != scope {
		return alerting.Delivery{}, alertNotFound("delivery", id)
	}
	return d.Clone(), nil
}

// LogAttempt adds an attempt to the log.
func (s *AlertStore) LogAttempt(_ context.Context, a alerting.Attempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, a)
	return nil
}

// Attempts returns an endpoint's log, newest first.
func (s *AlertStore) Attempts(_ context.Context, scope domain.Scope, endpointID string, limit int) ([]alerting.Attempt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []alerting.Attempt{}
	for _, a := range s.attempts {
		if a.Scope == scope && a.EndpointID == endpointID {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b alerting.Attempt) int { return cmp.Or(b.At.Compare(a.At), cmp.Compare(b.ID, a.ID)) })
	return out[:min(len(out), max(limit, 0))], nil
}

// PruneAlerts deletes old transitions, finished deliveries and attempts.
func (s *AlertStore) PruneAlerts(_ context.Context, before time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for key, tr := range s.transitions {
		if tr.At.Before(before) {
			delete(s.transitions, key)
			n++
		}
	}
	for id, d := range s.deliveries {
		if d.Status != alerting.DeliveryPending && d.UpdatedAt.Before(before) {
			delete(s.deliveries, id)
			n++
		}
	}
	kept := s.attempts[:0]
	for _, a := range s.attempts {
		if a.At.Before(before) {
			n++
		} else {
			kept = append(kept, a)
		}
	}
	s.attempts = kept
	return n, nil
}
