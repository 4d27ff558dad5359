package alerting

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
)

// EventType names an event as Standard Webhooks' "type" field does.
type EventType string

// The events alerting sends.
const (
	EventFiring   EventType = "alert.firing"
	EventResolved EventType = "alert.resolved"
	EventTest     EventType = "alert.test"
)

// Event is one notification of a rule: it became firing (or is still, for
// a repeat), it resolved, or a test. Its ID is the webhook-id of every attempt
// to every endpoint, so a receiver can tell a retry from a new event.
type Event struct {
	ID   string
	Type EventType
	At   time.Time
	// Rule is the rule as it was when the event was raised.
	Rule Rule
	// Status is the rule's status after the event, Previous before it.
	Status, Previous Status
	Reason           Reason
	Since            time.Time
	Observation      Observation
	// Repeat marks a firing event sent again after RepeatInterval.
	Repeat bool
	// PortalURL opens the portal on the window's requests ("" when the
	// service has no portal link to give).
	PortalURL string
}

// Threshold is the threshold the event is about: the resolve threshold for a
// resolution, the threshold otherwise.
func (e Event) Threshold() float64 {
	if e.Type == EventResolved {
		return e.Rule.ResolveThreshold
	}
	return e.Rule.Threshold
}

// Clone returns a copy that shares no slice with e.
func (e Event) Clone() Event {
	e.Rule = e.Rule.Clone()
	e.Observation.TopPaths = slices.Clone(e.Observation.TopPaths)
	return e
}

// TestEvent is the alert.test event of rule at time at, shaped as a firing event
// on the rule's last observation, so a receiver sees what a real one holds.
func TestEvent(r Rule, st State, at time.Time) (Event, error) {
	id, err := NewID(EventIDPrefix)
	if err != nil {
		return Event{}, err
	}
	status := st.Status
	if status == "" {
		status = OK
	}
	return Event{ID: id, Type: EventTest, At: at, Rule: r.Clone(), Status: status, Previous: status,
		Reason: st.Reason, Since: st.Since, Observation: st.Observation}, nil
}

// PortalView is the portal's query string for the requests an event is about:
// the rule's filters over the window (one status class at most: the portal
// filters on one).
func (e Event) PortalView() url.Values {
	v := url.Values{}
	f := e.Rule.Filter
	for name, value := range map[string]string{"name": f.Name, "path_prefix": f.PathPrefix, "method": f.Method} {
		if value != "" {
			v.Set(name, value)
		}
	}
	if len(f.StatusClasses) == 1 {
		v.Set("status_code", strconv.Itoa(f.StatusClasses[0])+"xx")
	}
	if o := e.Observation; !o.From.IsZero() {
		v.Set("range", "custom")
		v.Set("from", domain.FormatTime(o.From))
		v.Set("to", domain.FormatTime(o.To))
	}
	return v
}

// EndpointFormat is what an endpoint is sent.
type EndpointFormat string

// The formats of an endpoint.
const (
	// FormatStandard is a Standard Webhooks JSON body {type, timestamp, data}.
	FormatStandard EndpointFormat = "standard"
	// FormatSlack is a Slack incoming webhook's {"text": ...}, readable in a
	// channel.
	FormatSlack EndpointFormat = "slack"
)

// Bounds of an endpoint.
const (
	MaxEndpointURLLength   = 2048
	MaxEndpointDescription = 200
	// SecretRotationGrace is how long a rotated-out secret still signs, beside
	// the new one, so a receiver can switch over.
	SecretRotationGrace = 24 * time.Hour
)

// WebhookSecret is one signing secret of an endpoint; ExpiresAt is zero for the
// current one.
type WebhookSecret struct {
	Secret    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Endpoint is where a scope's alert events are sent.
type Endpoint struct {
	ID          string
	Scope       domain.Scope
	URL         string
	Description string
	Format      EndpointFormat
	// Enabled is false when turned off, by its owner or by a 410 Gone reply
	// (DisabledReason says which).
	Enabled        bool
	DisabledReason string
	Secrets        []WebhookSecret
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Clone returns a copy that shares no slice with e.
func (e Endpoint) Clone() Endpoint {
	e.Secrets = slices.Clone(e.Secrets)
	return e
}

// SigningSecrets are the secrets that sign at time at: the current one first,
// then those rotated out less than SecretRotationGrace ago.
func (e Endpoint) SigningSecrets(at time.Time) []string {
	var secrets []string
	for i := len(e.Secrets) - 1; i >= 0; i-- {
		if s := e.Secrets[i]; s.ExpiresAt.IsZero() || at.Before(s.ExpiresAt) {
			secrets = append(secrets, s.Secret)
		}
	}
	return secrets
}

// Rotate makes secret the current one at time at: the one before signs beside
// it until SecretRotationGrace has passed, and expired ones are dropped.
func (e *Endpoint) Rotate(secret string, at time.Time) {
	kept := e.Secrets[:0:0]
	for _, s := range e.Secrets {
		if s.ExpiresAt.IsZero() {
			s.ExpiresAt = at.Add(SecretRotationGrace)
		}
		if at.Before(s.ExpiresAt) {
			kept = append(kept, s)
		}
	}
	e.Secrets = append(kept, WebhookSecret{Secret: secret, CreatedAt: at})
	e.UpdatedAt = at
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// The statuses of a delivery.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
)

// DeliverySchedule is the wait before each retry of a failed delivery: Svix's
// schedule, shortened (theirs ends after 32 hours, this one after about 5), as
// alerts lose their worth sooner than most events. A delivery is attempted once
// plus once per entry.
var DeliverySchedule = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute,
	10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour}

// MaxRetryAfter bounds how long a receiver's Retry-After may delay the next
// attempt.
const MaxRetryAfter = 6 * time.Hour

// Delivery is one event on its way to one endpoint: the delivery queue's
// entry. Its ID derives from the event and the endpoint, so queuing it again
// is a no-op.
type Delivery struct {
	ID         string
	Scope      domain.Scope
	EndpointID string
	Event      Event
	Status     DeliveryStatus
	// Attempts made so far; the next is due at NextAttemptAt.
	Attempts      int
	NextAttemptAt time.Time
	// LeaseOwner holds the delivery until LeaseUntil while it attempts it; after
	// that another worker may take it over (the same event id is sent again).
	LeaseOwner     string
	LeaseUntil     time.Time
	LastStatusCode int
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Clone returns a copy that shares no slice with d.
func (d Delivery) Clone() Delivery {
	d.Event = d.Event.Clone()
	return d
}

// NewDelivery queues event e for endpoint at time at, due at once.
func NewDelivery(e Event, scope domain.Scope, endpointID string, at time.Time) Delivery {
	return Delivery{ID: DerivedID(DeliveryIDPrefix, e.ID, endpointID), Scope: scope, EndpointID: endpointID,
		Event: e.Clone(), Status: DeliveryPending, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at}
}

// AttemptOutcome is what one attempt got: an HTTP status, or an error before
// one (StatusCode 0), and the Retry-After the receiver asked for.
type AttemptOutcome struct {
	StatusCode int
	RetryAfter time.Duration
	Error      string
	// TimedOut marks an attempt that got no reply within the sender's
	// timeout: it held a delivery slot for all of it.
	TimedOut bool
}

// Succeeded reports a 2xx reply.
func (o AttemptOutcome) Succeeded() bool { return o.StatusCode >= 200 && o.StatusCode < 300 }

// Gone reports a 410: the receiver says the endpoint no longer exists.
func (o AttemptOutcome) Gone() bool { return o.StatusCode == 410 }

// Record returns d after an attempt at time at that had outcome o: delivered,
// failed for good (a 410, or the schedule is used up), or due again after the
// schedule's wait, or the receiver's Retry-After if longer. The lease is
// released.
func (d Delivery) Record(o AttemptOutcome, at time.Time) Delivery {
	d.Attempts++
	d.LastStatusCode, d.LastError = o.StatusCode, o.Error
	d.LeaseOwner, d.LeaseUntil, d.UpdatedAt = "", time.Time{}, at
	switch {
	case o.Succeeded():
		d.Status = DeliveryDelivered
	case o.Gone():
		d.Status, d.LastError = DeliveryFailed, "the endpoint answered 410 Gone and was disabled"
	case d.Attempts > len(DeliverySchedule):
		d.Status = DeliveryFailed
	default:
		wait := max(DeliverySchedule[d.Attempts-1], min(o.RetryAfter, MaxRetryAfter))
		d.NextAttemptAt = at.Add(wait)
	}
	return d
}

// Abandon returns d failed for good without an attempt, for reason (its
// endpoint was deleted or disabled).
func (d Delivery) Abandon(reason string, at time.Time) Delivery {
	d.Status, d.LastError = DeliveryFailed, reason
	d.LeaseOwner, d.LeaseUntil, d.UpdatedAt = "", time.Time{}, at
	return d
}

// Excess returns the deliveries of pending (one account's pending queue) to
// drop so that keep remain: alert.test deliveries before any other, since a
// test tells nothing of the traffic, and among each the oldest first (by
// CreatedAt, then ID). One leased at now is being attempted: it is never
// dropped, so more than keep may remain.
func Excess(pending []Delivery, keep int, now time.Time) []Delivery {
	droppable := slices.DeleteFunc(slices.Clone(pending), func(d Delivery) bool { return d.LeaseUntil.After(now) })
	slices.SortFunc(droppable, func(a, b Delivery) int {
		aTest, bTest := a.Event.Type == EventTest, b.Event.Type == EventTest
		switch {
		case aTest && !bTest:
			return -1
		case bTest && !aTest:
			return 1
		}
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return droppable[:min(len(droppable), max(len(pending)-max(keep, 0), 0))]
}

// Attempt is one HTTP request of a delivery, in the delivery log.
type Attempt struct {
	ID         string
	Scope      domain.Scope
	DeliveryID string
	EndpointID string
	EventID    string
	EventType  EventType
	RuleID     string
	// Number is the attempt's place among the delivery's, from 1.
	Number     int
	At         time.Time
	StatusCode int
	Error      string
	Duration   time.Duration
	// Response is the start of the reply's body (MaxLoggedResponse bytes).
	Response string
}

// MaxLoggedResponse is how much of a reply's body the delivery log keeps.
const MaxLoggedResponse = 1024

// NewAttempt logs attempt number n of d at time at with outcome o.
func NewAttempt(d Delivery, n int, at time.Time, o AttemptOutcome, took time.Duration, response string) (Attempt, error) {
	id, err := NewID(AttemptIDPrefix)
	if err != nil {
		return Attempt{}, fmt.Errorf("delivery log: %w", err)
	}
	return Attempt{ID: id, Scope: d.Scope, DeliveryID: d.ID, EndpointID: d.EndpointID, EventID: d.Event.ID,
		EventType: d.Event.Type, RuleID: d.Event.Rule.ID, Number: n, At: at, StatusCode: o.StatusCode,
		Error: o.Error, Duration: took, Response: response}, nil
}

// ParseEndpoint applies an endpoint's fields ("url", "description",
// "format", "enabled"), as the edge decoded them from JSON, onto base:
// DefaultEndpoint for a new one, the stored endpoint for an update. Every
// problem is a *ValidationError naming the field. Whether the URL's host may
// be reached is for the sender to say.
func ParseEndpoint(fields map[string]any, base Endpoint) (Endpoint, error) {
	e := base.Clone()
	var fe domain.FieldErrors
	_, formatGiven := fields["format"]
	for name, v := range fields {
		var msg string
		switch name {
		case "url":
			var s string
			if msg = readString(v, &s); msg == "" {
				e.URL, msg = checkEndpointURL(s)
			}
		case "description":
			msg = readDisplayText(v, &e.Description, MaxEndpointDescription)
		case "format":
			s, _ := v.(string)
			if s != string(FormatStandard) && s != string(FormatSlack) {
				msg = "must be " + joinQuoted([]EndpointFormat{FormatStandard, FormatSlack})
			}
			e.Format = EndpointFormat(s)
		case "enabled":
			enabled, ok := v.(bool)
			switch {
			case !ok:
				msg = "must be true or false"
			case enabled:
				e.Enabled, e.DisabledReason = true, ""
			default:
				e.Enabled = false
			}
		default:
			name, msg = unknownField(name), "is not a field of a webhook endpoint"
		}
		if msg != "" {
			fe.Add(name, "%s", msg)
		}
	}
	if e.URL == "" && len(fe.List) == 0 {
		fe.Add("url", "is required")
	}
	if len(fe.List) > 0 {
		slices.SortFunc(fe.List, func(a, b domain.FieldError) int { return strings.Compare(a.Field, b.Field) })
		return Endpoint{}, &domain.ValidationError{Message: "the webhook endpoint is invalid", Fields: fe.List}
	}
	if !formatGiven && base.URL == "" {
		e.Format = FormatStandard
		if u, err := url.Parse(e.URL); err == nil && strings.EqualFold(u.Hostname(), slackWebhookHost) {
			e.Format = FormatSlack
		}
	}
	return e, nil
}

// slackWebhookHost serves Slack's incoming webhooks: an endpoint there is sent
// Slack's format unless told otherwise.
const slackWebhookHost = "hooks.slack.com"

// DefaultEndpoint is what a new endpoint holds before its fields are read.
func DefaultEndpoint() Endpoint {
	return Endpoint{Enabled: true}
}

// checkEndpointURL accepts an absolute http or https URL with a host and
// without a fragment.
func checkEndpointURL(s string) (string, string) {
	u, err := url.Parse(s)
	switch {
	case utf8.RuneCountInString(s) > MaxEndpointURLLength:
		return "", fmt.Sprintf("must be at most %d characters", MaxEndpointURLLength)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "":
		return "", "must be an absolute http or https URL such as https://example.com/webhooks/reqlog"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "", "must not have a fragment (#...)"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", "must have a port from 1 to 65535"
		}
	}
	return s, ""
}
