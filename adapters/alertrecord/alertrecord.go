// Package alertrecord is alerting's records as the document stores keep them:
// one struct per kind that MongoDB encodes through its bson tags and
// Elasticsearch through its json tags, and the conversions to and from the
// domain, so that a stored field is added in one place. It is public for
// document stores in other repositories; a stored name never changes.
//
// Times are int64 Unix microseconds, 0 for the zero time (a BSON date keeps
// only milliseconds; Elasticsearch reads a long as exactly as a date).
// What no query looks into is kept as the API's own JSON (alertjson): a rule,
// an event, an observation, a state's outbox. The fields queries use have
// their stored names as constants beside the tags.
package alertrecord

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/adapters/internal/alertjson"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
)

// Micros is t in Unix microseconds, 0 for the zero time.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// Time reads Micros back, in UTC.
func Time(micros int64) time.Time {
	if micros == 0 {
		return time.Time{}
	}
	return time.UnixMicro(micros).UTC()
}

// Stored names of the fields queries use (both stores name them alike).
const (
	FieldAccount       = "account"
	FieldDomain        = "domain"
	FieldCreatedAt     = "created_at"
	FieldVersion       = "version"
	FieldRuleID        = "rule_id"
	FieldSeq           = "seq"
	FieldAt            = "at"
	FieldStatus        = "status"
	FieldNextAttemptAt = "next_attempt_at"
	FieldLeaseOwner    = "lease_owner"
	FieldLeaseUntil    = "lease_until"
	FieldUpdatedAt     = "updated_at"
	FieldEndpointID    = "endpoint_id"
	FieldOwner         = "owner"
	FieldUntil         = "until"
)

// Rule is a rule: its scope and creation time for the queries, the rest as the
// API's rule object.
type Rule struct {
	ID        string `bson:"_id" json:"id"`
	Account   string `bson:"account" json:"account"`
	Domain    string `bson:"domain" json:"domain"`
	CreatedAt int64  `bson:"created_at" json:"created_at"`
	Rule      string `bson:"rule" json:"rule"`
}

// RuleOf is r as stored.
func RuleOf(r alerting.Rule) (Rule, error) {
	raw, err := alertjson.EncodeRule(r)
	if err != nil {
		return Rule{}, err
	}
	return Rule{ID: r.ID, Account: r.Scope.Account, Domain: r.Scope.Domain, CreatedAt: Micros(r.CreatedAt), Rule: string(raw)}, nil
}

// Domain is the rule stored.
func (r Rule) ToDomain() (alerting.Rule, error) {
	return alertjson.DecodeRule([]byte(r.Rule), domain.Scope{Account: r.Account, Domain: r.Domain})
}

// Secret is one of an endpoint's signing secrets.
type Secret struct {
	Secret    string `bson:"secret" json:"secret"`
	CreatedAt int64  `bson:"created_at" json:"created_at"`
	ExpiresAt int64  `bson:"expires_at" json:"expires_at"`
}

// Endpoint is a webhook endpoint, secrets included.
type Endpoint struct {
	ID             string   `bson:"_id" json:"id"`
	Account        string   `bson:"account" json:"account"`
	Domain         string   `bson:"domain" json:"domain"`
	URL            string   `bson:"url" json:"url"`
	Description    string   `bson:"description" json:"description"`
	Format         string   `bson:"format" json:"format"`
	Enabled        bool     `bson:"enabled" json:"enabled"`
	DisabledReason string   `bson:"disabled_reason" json:"disabled_reason"`
	Secrets        []Secret `bson:"secrets" json:"secrets"`
	CreatedAt      int64    `bson:"created_at" json:"created_at"`
	UpdatedAt      int64    `bson:"updated_at" json:"updated_at"`
}

// EndpointOf is e as stored.
func EndpointOf(e alerting.Endpoint) Endpoint {
	r := Endpoint{ID: e.ID, Account: e.Scope.Account, Domain: e.Scope.Domain, URL: e.URL, Description: e.Description,
		Format: string(e.Format), Enabled: e.Enabled, DisabledReason: e.DisabledReason, Secrets: []Secret{},
		CreatedAt: Micros(e.CreatedAt), UpdatedAt: Micros(e.UpdatedAt)}
	for _, s := range e.Secrets {
		r.Secrets = append(r.Secrets, Secret{Secret: s.Secret, CreatedAt: Micros(s.CreatedAt), ExpiresAt: Micros(s.ExpiresAt)})
	}
	return r
}

// Domain is the endpoint stored.
func (r Endpoint) ToDomain() alerting.Endpoint {
	e := alerting.Endpoint{ID: r.ID, Scope: domain.Scope{Account: r.Account, Domain: r.Domain}, URL: r.URL,
		Description: r.Description, Format: alerting.EndpointFormat(r.Format), Enabled: r.Enabled, DisabledReason: r.DisabledReason,
		CreatedAt: Time(r.CreatedAt), UpdatedAt: Time(r.UpdatedAt)}
	for _, s := range r.Secrets {
		e.Secrets = append(e.Secrets, alerting.WebhookSecret{Secret: s.Secret, CreatedAt: Time(s.CreatedAt), ExpiresAt: Time(s.ExpiresAt)})
	}
	return e
}

// Transition is one transition of a rule's history; its ID is the rule's id
// and the sequence number, so a transition is stored once.
type Transition struct {
	ID       string  `bson:"_id" json:"id"`
	RuleID   string  `bson:"rule_id" json:"rule_id"`
	Account  string  `bson:"account" json:"account"`
	Domain   string  `bson:"domain" json:"domain"`
	Seq      int64   `bson:"seq" json:"seq"`
	From     string  `bson:"from" json:"from"`
	To       string  `bson:"to" json:"to"`
	Reason   string  `bson:"reason" json:"reason"`
	At       int64   `bson:"at" json:"at"`
	Value    float64 `bson:"value" json:"value"`
	HasValue bool    `bson:"has_value" json:"has_value"`
}

// TransitionID is the stored id of rule's transition seq.
func TransitionID(ruleID string, seq int64) string { return ruleID + "/" + strconv.FormatInt(seq, 10) }

// TransitionOf is tr as stored.
func TransitionOf(tr alerting.Transition) Transition {
	return Transition{ID: TransitionID(tr.RuleID, tr.Seq), RuleID: tr.RuleID, Account: tr.Scope.Account, Domain: tr.Scope.Domain,
		Seq: tr.Seq, From: string(tr.From), To: string(tr.To), Reason: string(tr.Reason), At: Micros(tr.At), Value: tr.Value, HasValue: tr.HasValue}
}

// Domain is the transition stored.
func (r Transition) ToDomain() alerting.Transition {
	return alerting.Transition{RuleID: r.RuleID, Scope: domain.Scope{Account: r.Account, Domain: r.Domain}, Seq: r.Seq,
		From: alerting.Status(r.From), To: alerting.Status(r.To), Reason: alerting.Reason(r.Reason), At: Time(r.At),
		Value: r.Value, HasValue: r.HasValue}
}

// Delivery is an entry of the delivery queue; its event is the payload's JSON.
type Delivery struct {
	ID             string `bson:"_id" json:"id"`
	Account        string `bson:"account" json:"account"`
	Domain         string `bson:"domain" json:"domain"`
	EndpointID     string `bson:"endpoint_id" json:"endpoint_id"`
	Event          string `bson:"event" json:"event"`
	Status         string `bson:"status" json:"status"`
	Attempts       int    `bson:"attempts" json:"attempts"`
	NextAttemptAt  int64  `bson:"next_attempt_at" json:"next_attempt_at"`
	LeaseOwner     string `bson:"lease_owner" json:"lease_owner"`
	LeaseUntil     int64  `bson:"lease_until" json:"lease_until"`
	LastStatusCode int    `bson:"last_status_code" json:"last_status_code"`
	LastError      string `bson:"last_error" json:"last_error"`
	CreatedAt      int64  `bson:"created_at" json:"created_at"`
	UpdatedAt      int64  `bson:"updated_at" json:"updated_at"`
}

// DeliveryOf is d as stored.
func DeliveryOf(d alerting.Delivery) (Delivery, error) {
	event, err := alertjson.EncodeEvent(d.Event)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{ID: d.ID, Account: d.Scope.Account, Domain: d.Scope.Domain, EndpointID: d.EndpointID, Event: string(event),
		Status: string(d.Status), Attempts: d.Attempts, NextAttemptAt: Micros(d.NextAttemptAt), LeaseOwner: d.LeaseOwner,
		LeaseUntil: Micros(d.LeaseUntil), LastStatusCode: d.LastStatusCode, LastError: d.LastError,
		CreatedAt: Micros(d.CreatedAt), UpdatedAt: Micros(d.UpdatedAt)}, nil
}

// Domain is the delivery stored.
func (r Delivery) ToDomain() (alerting.Delivery, error) {
	scope := domain.Scope{Account: r.Account, Domain: r.Domain}
	event, err := alertjson.DecodeEvent([]byte(r.Event), scope)
	if err != nil {
		return alerting.Delivery{}, err
	}
	return alerting.Delivery{ID: r.ID, Scope: scope, EndpointID: r.EndpointID, Event: event, Status: alerting.DeliveryStatus(r.Status),
		Attempts: r.Attempts, NextAttemptAt: Time(r.NextAttemptAt), LeaseOwner: r.LeaseOwner, LeaseUntil: Time(r.LeaseUntil),
		LastStatusCode: r.LastStatusCode, LastError: r.LastError, CreatedAt: Time(r.CreatedAt), UpdatedAt: Time(r.UpdatedAt)}, nil
}

// State is a rule's state; its ID is the rule's. The last observation and the
// outbox are JSON: the observation as the API shows it, the outbox as these
// records.
type State struct {
	ID          string `bson:"_id" json:"id"`
	Account     string `bson:"account" json:"account"`
	Domain      string `bson:"domain" json:"domain"`
	Version     int64  `bson:"version" json:"version"`
	Status      string `bson:"status" json:"status"`
	Reason      string `bson:"reason" json:"reason"`
	Since       int64  `bson:"since" json:"since"`
	EvaluatedAt int64  `bson:"evaluated_at" json:"evaluated_at"`
	Observation string `bson:"observation" json:"observation"`
	Error       string `bson:"error" json:"error"`
	NotifiedAt  int64  `bson:"notified_at" json:"notified_at"`
	Transitions int64  `bson:"transitions" json:"transitions"`
	Events      int64  `bson:"events" json:"events"`
	Outbox      string `bson:"outbox" json:"outbox"`
}

// outbox is a state's outbox as its JSON holds it.
type outbox struct {
	Transitions []Transition `json:"transitions"`
	Deliveries  []Delivery   `json:"deliveries"`
}

// StateOf is st as stored, at version.
func StateOf(st alerting.State, version int64) (State, error) {
	r := State{ID: st.RuleID, Account: st.Scope.Account, Domain: st.Scope.Domain, Version: version, Status: string(st.Status),
		Reason: string(st.Reason), Since: Micros(st.Since), EvaluatedAt: Micros(st.EvaluatedAt), Error: st.Error,
		NotifiedAt: Micros(st.NotifiedAt), Transitions: st.Transitions, Events: st.Events}
	if !st.Observation.From.IsZero() {
		raw, err := alertjson.EncodeWindow(st.Observation)
		if err != nil {
			return State{}, err
		}
		r.Observation = string(raw)
	}
	if !st.Outbox.Empty() {
		var o outbox
		for _, tr := range st.Outbox.Transitions {
			o.Transitions = append(o.Transitions, TransitionOf(tr))
		}
		for _, d := range st.Outbox.Deliveries {
			rec, err := DeliveryOf(d)
			if err != nil {
				return State{}, err
			}
			o.Deliveries = append(o.Deliveries, rec)
		}
		raw, err := json.Marshal(o)
		if err != nil {
			return State{}, fmt.Errorf("alertrecord: encode outbox: %w", err)
		}
		r.Outbox = string(raw)
	}
	return r, nil
}

// Domain is the state stored.
func (r State) ToDomain() (alerting.State, error) {
	st := alerting.State{RuleID: r.ID, Scope: domain.Scope{Account: r.Account, Domain: r.Domain}, Version: r.Version,
		Status: alerting.Status(r.Status), Reason: alerting.Reason(r.Reason), Since: Time(r.Since),
		EvaluatedAt: Time(r.EvaluatedAt), Error: r.Error, NotifiedAt: Time(r.NotifiedAt), Transitions: r.Transitions, Events: r.Events}
	if r.Observation != "" {
		o, err := alertjson.DecodeWindow([]byte(r.Observation))
		if err != nil {
			return alerting.State{}, err
		}
		st.Observation = o
	}
	if r.Outbox != "" {
		var o outbox
		if err := json.Unmarshal([]byte(r.Outbox), &o); err != nil {
			return alerting.State{}, fmt.Errorf("alertrecord: decode outbox: %w", err)
		}
		for _, tr := range o.Transitions {
			st.Outbox.Transitions = append(st.Outbox.Transitions, tr.ToDomain())
		}
		for _, d := range o.Deliveries {
			delivery, err := d.ToDomain()
			if err != nil {
				return alerting.State{}, err
			}
			st.Outbox.Deliveries = append(st.Outbox.Deliveries, delivery)
		}
	}
	return st, nil
}

// Attempt is an entry of the delivery log.
type Attempt struct {
	ID             string `bson:"_id" json:"id"`
	Account        string `bson:"account" json:"account"`
	Domain         string `bson:"domain" json:"domain"`
	DeliveryID     string `bson:"delivery_id" json:"delivery_id"`
	EndpointID     string `bson:"endpoint_id" json:"endpoint_id"`
	EventID        string `bson:"event_id" json:"event_id"`
	EventType      string `bson:"event_type" json:"event_type"`
	RuleID         string `bson:"rule_id" json:"rule_id"`
	Number         int    `bson:"number" json:"number"`
	At             int64  `bson:"at" json:"at"`
	StatusCode     int    `bson:"status_code" json:"status_code"`
	Error          string `bson:"error" json:"error"`
	DurationMicros int64  `bson:"duration_micros" json:"duration_micros"`
	Response       string `bson:"response" json:"response"`
}

// AttemptOf is a as stored.
func AttemptOf(a alerting.Attempt) Attempt {
	return Attempt{ID: a.ID, Account: a.Scope.Account, Domain: a.Scope.Domain, DeliveryID: a.DeliveryID, EndpointID: a.EndpointID,
		EventID: a.EventID, EventType: string(a.EventType), RuleID: a.RuleID, Number: a.Number, At: Micros(a.At),
		StatusCode: a.StatusCode, Error: a.Error, DurationMicros: a.Duration.Microseconds(), Response: a.Response}
}

// Domain is the attempt stored.
func (r Attempt) ToDomain() alerting.Attempt {
	return alerting.Attempt{ID: r.ID, Scope: domain.Scope{Account: r.Account, Domain: r.Domain}, DeliveryID: r.DeliveryID,
		EndpointID: r.EndpointID, EventID: r.EventID, EventType: alerting.EventType(r.EventType), RuleID: r.RuleID,
		Number: r.Number, At: Time(r.At), StatusCode: r.StatusCode, Error: r.Error,
		Duration: time.Duration(r.DurationMicros) * time.Microsecond, Response: r.Response}
}

// Lease is a named lease.
type Lease struct {
	Name  string `bson:"_id" json:"name"`
	Owner string `bson:"owner" json:"owner"`
	Until int64  `bson:"until" json:"until"`
}
