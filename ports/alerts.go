package ports

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
)

// Sentinel errors of the alert store (besides ErrNotFound and ErrUnavailable).
var (
	// ErrStale: a compare-and-set found another version, or another holder of
	// a lease, than the caller expected; it changed nothing.
	ErrStale = errors.New("stale")
	// ErrExists: a record with this id is stored already.
	ErrExists = errors.New("already exists")
)

// AlertStore keeps everything alerting needs: rules and endpoints (the
// configuration), rule states and their history (the evaluator's), and the
// delivery queue and log (the delivery worker's). Several replicas of the
// service share one store, and these rules are what makes them agree. Every
// method takes ctx first and reports backend outages wrapping ErrUnavailable;
// returned values belong to the caller, and a store keeps no reference to
// what it is given.
type AlertStore interface {
	AlertConfigStore
	AlertStateStore
	AlertDeliveryStore
}

// AlertConfigStore keeps a scope's rules and endpoints.
type AlertConfigStore interface {
	// CreateRule stores a new rule. It MUST fail with ErrExists when the id
	// is taken, and MUST be durable when it returns nil.
	CreateRule(ctx context.Context, r alerting.Rule) error
	// UpdateRule replaces the stored rule of r's scope and id; ErrNotFound when
	// there is none.
	UpdateRule(ctx context.Context, r alerting.Rule) error
	// Rule returns the rule of scope with id, or an error wrapping ErrNotFound.
	Rule(ctx context.Context, scope domain.Scope, id string) (alerting.Rule, error)
	// Rules returns scope's rules, oldest first (by CreatedAt, then ID).
	Rules(ctx context.Context, scope domain.Scope) ([]alerting.Rule, error)
	// AllRules returns the rules of every scope, for the evaluator.
	AllRules(ctx context.Context) ([]alerting.Rule, error)
	// DeleteRule deletes a rule with its state and history; ErrNotFound when
	// there is none. Queued deliveries of its events stay.
	DeleteRule(ctx context.Context, scope domain.Scope, id string) error

	// CreateEndpoint, UpdateEndpoint, Endpoint, Endpoints and DeleteEndpoint
	// are the same for endpoints (secrets included: they are returned as
	// stored). Deleting an endpoint leaves its queued deliveries, which the
	// worker then abandons.
	CreateEndpoint(ctx context.Context, e alerting.Endpoint) error
	UpdateEndpoint(ctx context.Context, e alerting.Endpoint) error
	Endpoint(ctx context.Context, scope domain.Scope, id string) (alerting.Endpoint, error)
	Endpoints(ctx context.Context, scope domain.Scope) ([]alerting.Endpoint, error)
	DeleteEndpoint(ctx context.Context, scope domain.Scope, id string) error
}

// AlertStateStore keeps rule states, their transitions and the evaluation
// lease.
type AlertStateStore interface {
	// States returns the states of scope's rules (none for a rule never
	// evaluated); AllStates those of every scope.
	States(ctx context.Context, scope domain.Scope) ([]alerting.State, error)
	AllStates(ctx context.Context) ([]alerting.State, error)
	// SwapState stores next as the state of its rule if the stored state's
	// Version is prev (0: no state stored yet), and then holds next with
	// Version prev+1 (the store sets it). It MUST be atomic: of concurrent
	// calls with the same prev at most one succeeds, and the others fail with
	// an error wrapping ErrStale, having changed nothing. A state whose rule
	// has been deleted MUST NOT be stored (ErrNotFound). It MUST be durable
	// when it returns nil.
	SwapState(ctx context.Context, next alerting.State, prev int64) error
	// AppendTransitions adds transitions to their rules' history. It MUST be
	// idempotent per (RuleID, Seq): a transition already stored is left as it
	// is. It MUST be durable when it returns nil.
	AppendTransitions(ctx context.Context, trs []alerting.Transition) error
	// Transitions returns the history of scope's rule, newest first (by Seq
	// descending), those with Seq below q.Before when it is set and with At in
	// [q.From, q.To) when they are set, at most q.Limit.
	Transitions(ctx context.Context, scope domain.Scope, ruleID string, q TransitionQuery) ([]alerting.Transition, error)
	Leases
}

// Leases are named leases replicas sharing a store take in turn: the alert
// evaluation's slot, the erasure job's work.
type Leases interface {
	// AcquireLease makes owner the holder of the lease name until until, when
	// the lease is free at now (never held, or held until now or earlier) or
	// owner holds it already; it reports whether owner holds it afterwards. Of
	// concurrent callers at most one MUST get a lease that is free.
	AcquireLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error)
}

// TransitionQuery selects a part of a rule's history.
type TransitionQuery struct {
	Before   int64 // Seq below this (0: no bound)
	From, To time.Time
	Limit    int
}

// AlertDeliveryStore keeps the delivery queue, each delivery an event on its
// way to one endpoint, and the log of their attempts.
type AlertDeliveryStore interface {
	// Enqueue adds deliveries to the queue. It MUST be idempotent per ID: a
	// delivery already queued (whatever its status) is left as it is. It MUST
	// be durable when it returns nil.
	Enqueue(ctx context.Context, ds []alerting.Delivery) error
	// DueAccounts returns the accounts that have a delivery Claim could take
	// at now (pending, due and not leased), each once, in no particular
	// order: every such account when there are at most limit, otherwise
	// limit of them. The worker takes turns between them.
	DueAccounts(ctx context.Context, now time.Time, limit int) ([]string, error)
	// Claim leases to owner, until until, at most q.Limit pending deliveries
	// of q.Account that are due (NextAttemptAt <= now) and not leased
	// (LeaseUntil <= now), and whose endpoint is not one of
	// q.ExceptEndpoints, oldest due first (by NextAttemptAt, then ID), and
	// returns them with the lease set. Of concurrent claims, each delivery
	// MUST go to at most one owner until its lease ends.
	Claim(ctx context.Context, owner string, now, until time.Time, q ClaimQuery) ([]alerting.Delivery, error)
	// DropExcess bounds an account's queue: when account has more than limit
	// pending deliveries, it deletes some until keep remain, tests
	// (alerting.EventTest) before other events and the oldest first, as
	// alerting.Excess chooses, and returns those it deleted. It MUST NOT
	// delete a delivery leased at now (being attempted): those stay beyond
	// keep. Under concurrent calls the account may briefly hold more than
	// limit, never fewer than keep less the deliveries leased meanwhile.
	DropExcess(ctx context.Context, account string, limit, keep int, now time.Time) ([]alerting.Delivery, error)
	// Finish stores d, the outcome of owner's attempt (its lease released), if
	// owner still holds the delivery's lease; otherwise it fails with
	// ErrStale and changes nothing (the lease ran out and another worker
	// took the delivery over).
	Finish(ctx context.Context, d alerting.Delivery, owner string) error
	// Delivery returns the delivery of scope with id, or ErrNotFound.
	Delivery(ctx context.Context, scope domain.Scope, id string) (alerting.Delivery, error)
	// LogAttempt adds one attempt to the delivery log.
	LogAttempt(ctx context.Context, a alerting.Attempt) error
	// Attempts returns the log of scope's endpoint, newest first (by At, then
	// ID descending), at most limit.
	Attempts(ctx context.Context, scope domain.Scope, endpointID string, limit int) ([]alerting.Attempt, error)
	// PruneAlerts deletes what is older than before: transitions (At),
	// finished deliveries (UpdatedAt) and logged attempts (At). It returns how
	// many records it deleted (-1 when the backend cannot tell).
	PruneAlerts(ctx context.Context, before time.Time) (int64, error)
}

// ClaimQuery selects the deliveries of one claim.
type ClaimQuery struct {
	Account string
	// ExceptEndpoints are endpoints the claimer will not attempt now (busy,
	// or backed off).
	ExceptEndpoints []string
	Limit           int
}

// WebhookSender makes HTTP requests to endpoints on behalf of the delivery
// worker, and refuses destinations that must not be reached.
type WebhookSender interface {
	// CheckURL reports, as a *domain.ValidationError naming "url", a URL whose
	// host cannot be resolved or resolves to an address the sender refuses
	// (loopback, private, link-local, metadata), unless it is configured to
	// allow them.
	CheckURL(ctx context.Context, rawURL string) error
	// Send makes one attempt to deliver d to e at time at and returns what the
	// receiver answered (or why there was no answer) and the start of its
	// reply's body. It MUST sign with every secret e.SigningSecrets(at) gives
	// and send d.Event.ID as the webhook-id, so a retry is recognisable, and
	// MUST check the address it connects to as CheckURL checks the URL's.
	Send(ctx context.Context, e alerting.Endpoint, d alerting.Delivery, at time.Time) (alerting.AttemptOutcome, string)
}

// PortalLinker makes the portal links of alert events.
type PortalLinker interface {
	// PortalLink returns a link to the portal page with view as its query and,
	// when expires is set, a read-only session of principal's scope (and
	// application) until then; "" when the service has no link to give.
	PortalLink(principal domain.Principal, view url.Values, expires time.Time) string
}
