package app

import (
	"crypto/rand"
	"os"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// AlertConfig configures alerting's background work: the evaluator and the
// delivery worker every replica runs.
type AlertConfig struct {
	// EvaluationInterval is how often every rule is evaluated; evaluations
	// fall on its multiples (every whole minute by default), whichever replica
	// holds the evaluation lease.
	EvaluationInterval time.Duration
	// Poll is how often the evaluator looks for the next evaluation and the
	// delivery worker for due deliveries (a new event also wakes the worker of
	// the replica that raised it).
	Poll time.Duration
	// DeliveryLease is how long a worker holds a delivery it attempts: another
	// replica takes it over after that (the same webhook-id is sent again), so
	// it must exceed the sender's timeout.
	DeliveryLease time.Duration
	// DeliveryConcurrency bounds the attempts a worker makes at the same time.
	DeliveryConcurrency int
	// DeliveryPerAccount bounds the attempts of one account's deliveries a
	// worker makes at the same time (one per endpoint at most): below
	// DeliveryConcurrency, an account whose endpoints hang until the timeout
	// always leaves attempts to the others.
	DeliveryPerAccount int
	// MaxPendingDeliveries bounds an account's queue: past it, its oldest
	// test deliveries, then its oldest others, are dropped (counted and
	// logged) down to nine tenths of it, whatever the rate of API calls.
	MaxPendingDeliveries int
	// EndpointDisableAfter is how long an endpoint may go without a reply
	// (every attempt timing out, each worker counting since it started)
	// before the worker disables it with a reason, as it does on a 410; 0
	// never disables. Meanwhile the endpoint is backed off: after each
	// timeout it waits, doubling from 5 s to 5 min, before its next attempt.
	EndpointDisableAfter time.Duration
	// EvaluationBudget is how long one account's statistics may take in one
	// evaluation pass: its rules left then wait for the next slot (least
	// recently evaluated first), counted and logged, so that one account's
	// many or heavy rules cannot push another's past the interval. A pass
	// also ends with its slot, whatever the budget.
	EvaluationBudget time.Duration
	// MaxRules bounds the rules of one account in one domain.
	MaxRules int
	// Metrics, if set, counts what the budget, the bounds and the back-off
	// did (the fx module sets it from the graph's Metrics).
	Metrics AlertMetrics
	// HistoryRetention is how long transitions, finished deliveries and the
	// delivery log are kept.
	HistoryRetention time.Duration
	// PortalLinkTTL is how long the portal link of an event works (it carries a
	// read-only session of the rule's application, or of the whole account);
	// 0 sends links without a session, which open the portal only in a tab
	// that has one.
	PortalLinkTTL time.Duration
}

// DefaultAlertConfig returns the defaults of every field.
func DefaultAlertConfig() AlertConfig {
	return AlertConfig{EvaluationInterval: time.Minute, Poll: time.Second, DeliveryLease: time.Minute,
		DeliveryConcurrency: 16, DeliveryPerAccount: 4, MaxPendingDeliveries: 10000, EndpointDisableAfter: time.Hour,
		EvaluationBudget: 15 * time.Second, MaxRules: 1000, HistoryRetention: domain.DefaultRetention, PortalLinkTTL: 24 * time.Hour}
}

// Validate reports the first unusable field as a *domain.ValidationError
// naming it as in AlertConfig.
func (c AlertConfig) Validate() error {
	switch {
	case c.EvaluationInterval < time.Second || c.EvaluationInterval%time.Second != 0 || time.Hour%c.EvaluationInterval != 0:
		return invalidField("EvaluationInterval", "must be a whole number of seconds that divides an hour, such as 1m")
	case c.Poll <= 0 || c.Poll > c.EvaluationInterval:
		return invalidField("Poll", "must be positive and at most the evaluation interval")
	case c.DeliveryLease < time.Second:
		return invalidField("DeliveryLease", "must be at least 1s")
	case c.DeliveryConcurrency < 1:
		return invalidField("DeliveryConcurrency", "must be at least 1")
	case c.DeliveryPerAccount < 1 || c.DeliveryPerAccount > c.DeliveryConcurrency:
		return invalidField("DeliveryPerAccount", "must be from 1 to the delivery concurrency")
	case c.MaxPendingDeliveries < 10:
		return invalidField("MaxPendingDeliveries", "must be at least 10")
	case c.EndpointDisableAfter < 0 || (c.EndpointDisableAfter > 0 && c.EndpointDisableAfter < time.Minute):
		return invalidField("EndpointDisableAfter", "must be 0 (never) or at least 1m")
	case c.EvaluationBudget < time.Second:
		return invalidField("EvaluationBudget", "must be at least 1s")
	case c.MaxRules < 1:
		return invalidField("MaxRules", "must be at least 1")
	case c.HistoryRetention < time.Hour:
		return invalidField("HistoryRetention", "must be at least 1h")
	case c.PortalLinkTTL < 0 || c.PortalLinkTTL > 7*24*time.Hour:
		return invalidField("PortalLinkTTL", "must be from 0 (no session in the link) to 168h")
	}
	return nil
}

// ReplicaName names this process among the replicas in leases: the host name
// and a random part, so two processes on one host differ.
func ReplicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "reqlogd"
	}
	return host + "-" + rand.Text()[:8]
}
