package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/reqlog/reqlog/adapters/internal/alertjson"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// maxAlertBody bounds a rule's or an endpoint's body: a few hundred bytes of
// fields.
const maxAlertBody = 64 << 10

// Page sizes of the alert history and the delivery log.
const (
	defaultAlertPage = 20
	maxAlertPage     = 100
)

// alertRoutes registers alerting's endpoints.
func (a *api) alertRoutes(r *mux.Router) {
	route := func(path string, h http.HandlerFunc, methods ...string) {
		r.Handle(path, a.authenticate(a.rateLimit(a.withAlerts(h)))).Methods(methods...)
	}
	route("/v1/alerts/rules", a.createRule, http.MethodPost)
	route("/v1/alerts/rules", a.listRules, readMethods()...)
	route("/v1/alerts/rules/{ruleID}", a.getRule, readMethods()...)
	route("/v1/alerts/rules/{ruleID}", a.updateRule, http.MethodPatch)
	route("/v1/alerts/rules/{ruleID}", a.deleteRule, http.MethodDelete)
	route("/v1/alerts/rules/{ruleID}/test", a.testRule, http.MethodPost)
	route("/v1/alerts/rules/{ruleID}/history", a.ruleHistory, readMethods()...)
	route("/v1/alerts/states", a.alertStates, readMethods()...)
	route("/v1/alerts/endpoints", a.createEndpoint, http.MethodPost)
	route("/v1/alerts/endpoints", a.listEndpoints, readMethods()...)
	route("/v1/alerts/endpoints/{endpointID}", a.getEndpoint, readMethods()...)
	route("/v1/alerts/endpoints/{endpointID}", a.updateEndpoint, http.MethodPatch)
	route("/v1/alerts/endpoints/{endpointID}", a.deleteEndpoint, http.MethodDelete)
	route("/v1/alerts/endpoints/{endpointID}/rotate-secret", a.rotateSecret, http.MethodPost)
	route("/v1/alerts/endpoints/{endpointID}/deliveries", a.endpointDeliveries, readMethods()...)
}

// withAlerts answers 404 when the service has no alerting (its store keeps no
// rules).
func (a *api) withAlerts(next http.HandlerFunc) http.HandlerFunc {
	return onlyIf(a.alerts != nil, "alerting is not available: this server's store keeps no alert rules", next)
}

// onlyIf is next when the part of the service it serves is there (present),
// else a 404 saying so, unavailable: the routes of an optional use case.
func onlyIf(present bool, unavailable string, next http.HandlerFunc) http.HandlerFunc {
	if present {
		return next
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, apiError{status: http.StatusNotFound, message: unavailable})
	}
}

// failAlert is fail with alerting's own words for what is missing or
// forbidden.
func (a *api) failAlert(w http.ResponseWriter, r *http.Request, err error, what string) {
	switch {
	case errors.Is(err, ports.ErrNotFound):
		writeError(w, apiError{status: http.StatusNotFound, message: what + " not found"})
	case errors.Is(err, ports.ErrForbidden):
		writeError(w, apiError{status: http.StatusForbidden,
			message: "a portal session may only read alert states (GET /v1/alerts/states): use an API key"})
	default:
		a.fail(w, r, err)
	}
}

// alertBody reads a JSON object of at most maxAlertBody bytes and decodes its
// fields, answering every refusal itself.
func (a *api) alertBody(w http.ResponseWriter, r *http.Request, example string) (map[string]any, bool) {
	if !requireJSON(w, r) || !a.declaresAtMost(w, r, maxAlertBody) {
		return nil, false
	}
	body, err := readBody(w, r, maxAlertBody, new(bytes.Buffer))
	if err != nil {
		a.refuseBody(w, r, maxAlertBody, err)
		return nil, false
	}
	fields, err := alertjson.Fields(body, example)
	if err != nil {
		a.fail(w, r, err)
		return nil, false
	}
	return fields, true
}

const (
	whatRule     = "alert rule"
	whatEndpoint = "webhook endpoint"
)

func (a *api) createRule(w http.ResponseWriter, r *http.Request) {
	body, ok := a.alertBody(w, r, alertjson.RuleExample)
	if !ok {
		return
	}
	rule, err := a.alerts.CreateRule(r.Context(), principalOf(r.Context()), body)
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	writeJSON(w, http.StatusCreated, reply{Status: true, Message: "alert rule created", Data: alertjson.RuleOf(rule)})
}

func (a *api) listRules(w http.ResponseWriter, r *http.Request) {
	rules, err := a.alerts.Rules(r.Context(), principalOf(r.Context()))
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	out := make([]alertjson.Rule, len(rules))
	for i, rule := range rules {
		out[i] = alertjson.RuleOf(rule)
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "alert rules", Data: out})
}

func (a *api) getRule(w http.ResponseWriter, r *http.Request) {
	rule, err := a.alerts.Rule(r.Context(), principalOf(r.Context()), mux.Vars(r)["ruleID"])
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "alert rule", Data: alertjson.RuleOf(rule)})
}

func (a *api) updateRule(w http.ResponseWriter, r *http.Request) {
	if _, err := a.alerts.Rule(r.Context(), principalOf(r.Context()), mux.Vars(r)["ruleID"]); err != nil {
		a.failAlert(w, r, err, whatRule) // before the body: an unknown rule is a 404 whatever is sent
		return
	}
	body, ok := a.alertBody(w, r, alertjson.RuleExample)
	if !ok {
		return
	}
	rule, err := a.alerts.UpdateRule(r.Context(), principalOf(r.Context()), mux.Vars(r)["ruleID"], body)
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "alert rule updated", Data: alertjson.RuleOf(rule)})
}

func (a *api) deleteRule(w http.ResponseWriter, r *http.Request) {
	if err := a.alerts.DeleteRule(r.Context(), principalOf(r.Context()), mux.Vars(r)["ruleID"]); err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "alert rule deleted"})
}

// testQueued is the reply of POST .../test: the event and where it goes.
type testQueued struct {
	EventID    string              `json:"event_id"`
	Deliveries []testQueuedTarget  `json:"deliveries"`
	Payload    alertjson.EventData `json:"payload"`
}

type testQueuedTarget struct {
	DeliveryID string `json:"delivery_id"`
	EndpointID string `json:"endpoint_id"`
}

func (a *api) testRule(w http.ResponseWriter, r *http.Request) {
	event, deliveries, err := a.alerts.TestRule(r.Context(), principalOf(r.Context()), mux.Vars(r)["ruleID"])
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	out := testQueued{EventID: event.ID, Deliveries: make([]testQueuedTarget, len(deliveries)), Payload: alertjson.PayloadOf(event).Data}
	for i, d := range deliveries {
		out.Deliveries[i] = testQueuedTarget{DeliveryID: d.ID, EndpointID: d.EndpointID}
	}
	message := "test event queued for delivery"
	if len(deliveries) == 0 {
		message = "test event queued for no endpoint: create a webhook endpoint (POST /v1/alerts/endpoints) or enable one"
	}
	writeJSON(w, http.StatusAccepted, reply{Status: true, Message: message, Data: out})
}

// pagination of the history and the delivery log.
type alertPagination struct {
	Limit      int    `json:"limit"`
	HasMore    bool   `json:"has_more"`
	NextBefore *int64 `json:"next_before,omitempty"`
}

type alertPageReply struct {
	Status     bool            `json:"status"`
	Message    string          `json:"message"`
	Data       any             `json:"data"`
	Pagination alertPagination `json:"pagination"`
}

// alertQuery reads the query parameters of the alert listings; every bad one
// is a 400 naming it.
type alertQuery struct {
	values map[string][]string
	fields []domain.FieldError
}

func (q *alertQuery) get(name string) (string, bool) {
	vs, ok := q.values[name]
	switch {
	case !ok:
		return "", false
	case len(vs) != 1 || vs[0] == "":
		q.fields = append(q.fields, domain.FieldError{Field: name, Message: "must be given once, not empty"})
		return "", false
	}
	return vs[0], true
}

func (q *alertQuery) integer(name string, lo, hi, def int64) int64 {
	v, ok := q.get(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		q.fields = append(q.fields, domain.FieldError{Field: name, Message: "must be a whole number from " +
			strconv.FormatInt(lo, 10) + " to " + strconv.FormatInt(hi, 10)})
		return def
	}
	return n
}

func (q *alertQuery) time(name string, def time.Time) time.Time {
	v, ok := q.get(name)
	if !ok {
		return def
	}
	t, err := domain.ParseUnixOrRFC3339(v)
	if err != nil {
		q.fields = append(q.fields, domain.FieldError{Field: name, Message: err.Error()})
		return def
	}
	return t
}

func (q *alertQuery) err() error {
	if len(q.fields) == 0 {
		return nil
	}
	return &domain.ValidationError{Message: "the query parameters are invalid", Fields: q.fields}
}

func (a *api) ruleHistory(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q := alertQuery{values: values}
	limit := int(q.integer("limit", 1, maxAlertPage, defaultAlertPage))
	before := q.integer("before", 1, 1<<62, 0)
	if err := q.err(); err != nil {
		a.fail(w, r, err)
		return
	}
	trs, err := a.alerts.History(r.Context(), principalOf(r.Context()), mux.Vars(r)["ruleID"], before, limit+1)
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	page := alertPagination{Limit: limit, HasMore: len(trs) > limit}
	trs = trs[:min(len(trs), limit)]
	if page.HasMore {
		next := trs[len(trs)-1].Seq
		page.NextBefore = &next
	}
	out := make([]alertjson.Transition, len(trs))
	for i, tr := range trs {
		out[i] = alertjson.TransitionOf(tr)
	}
	writeJSON(w, http.StatusOK, alertPageReply{Status: true, Message: "alert rule history", Data: out, Pagination: page})
}

// alertStates answers GET /v1/alerts/states, which a portal session may call
// too: every rule with its state, last transitions and the periods of
// [from, to) (default: the last 24 hours ending now) when it was firing.
func (a *api) alertStates(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q := alertQuery{values: values}
	to := q.time("to", time.Time{})
	from := q.time("from", time.Time{})
	if err := q.err(); err != nil {
		a.fail(w, r, err)
		return
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		a.fail(w, r, &domain.ValidationError{Message: "the query parameters are invalid",
			Fields: []domain.FieldError{{Field: "to", Message: "must be after from"}}})
		return
	}
	states, err := a.alerts.States(r.Context(), principalOf(r.Context()), from, to)
	if err != nil {
		a.failAlert(w, r, err, whatRule)
		return
	}
	out := make([]alertjson.State, len(states))
	for i, st := range states {
		periods := make([][2]time.Time, len(st.Firing))
		for j, p := range st.Firing {
			periods[j] = [2]time.Time{p.From, p.To}
		}
		out[i] = alertjson.StateOf(st.Rule, st.State, st.Recent, periods)
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "alert states", Data: out})
}

func (a *api) createEndpoint(w http.ResponseWriter, r *http.Request) {
	body, ok := a.alertBody(w, r, alertjson.EndpointExample)
	if !ok {
		return
	}
	e, err := a.alerts.CreateEndpoint(r.Context(), principalOf(r.Context()), body)
	if err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	writeJSON(w, http.StatusCreated, reply{Status: true,
		Message: "webhook endpoint created; keep its secret now, it is not shown again", Data: alertjson.EndpointWithSecret(e)})
}

func (a *api) listEndpoints(w http.ResponseWriter, r *http.Request) {
	es, err := a.alerts.Endpoints(r.Context(), principalOf(r.Context()))
	if err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	out := make([]alertjson.Endpoint, len(es))
	for i, e := range es {
		out[i] = alertjson.EndpointOf(e)
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "webhook endpoints", Data: out})
}

func (a *api) getEndpoint(w http.ResponseWriter, r *http.Request) {
	e, err := a.alerts.Endpoint(r.Context(), principalOf(r.Context()), mux.Vars(r)["endpointID"])
	if err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "webhook endpoint", Data: alertjson.EndpointOf(e)})
}

func (a *api) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	if _, err := a.alerts.Endpoint(r.Context(), principalOf(r.Context()), mux.Vars(r)["endpointID"]); err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	body, ok := a.alertBody(w, r, alertjson.EndpointExample)
	if !ok {
		return
	}
	e, err := a.alerts.UpdateEndpoint(r.Context(), principalOf(r.Context()), mux.Vars(r)["endpointID"], body)
	if err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "webhook endpoint updated", Data: alertjson.EndpointOf(e)})
}

func (a *api) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	if err := a.alerts.DeleteEndpoint(r.Context(), principalOf(r.Context()), mux.Vars(r)["endpointID"]); err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "webhook endpoint deleted"})
}

func (a *api) rotateSecret(w http.ResponseWriter, r *http.Request) {
	e, err := a.alerts.RotateSecret(r.Context(), principalOf(r.Context()), mux.Vars(r)["endpointID"])
	if err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "webhook secret rotated; the one before signs too for " +
		alerting.FormatDuration(alerting.SecretRotationGrace) + "; keep the new one now, it is not shown again",
		Data: alertjson.EndpointWithSecret(e)})
}

func (a *api) endpointDeliveries(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q := alertQuery{values: values}
	limit := int(q.integer("limit", 1, maxAlertPage, defaultAlertPage))
	if err := q.err(); err != nil {
		a.fail(w, r, err)
		return
	}
	attempts, err := a.alerts.Attempts(r.Context(), principalOf(r.Context()), mux.Vars(r)["endpointID"], limit)
	if err != nil {
		a.failAlert(w, r, err, whatEndpoint)
		return
	}
	out := make([]alertjson.Attempt, len(attempts))
	for i, at := range attempts {
		out[i] = alertjson.AttemptOf(at)
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: "delivery log", Data: out})
}
