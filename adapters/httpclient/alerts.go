package httpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/adapters/internal/alertjson"
)

// AlertRule is an alert rule as the service keeps it (see the API's
// /v1/alerts/rules). Optional text the rule does not set is "".
type AlertRule struct {
	ID    string
	Title string
	// Name, PathPrefix, Method and StatusClasses ("5xx") select the requests
	// counted.
	Name, PathPrefix, Method string
	StatusClasses            []string
	// Metric is error_rate, server_error_rate, request_count, duration_p50,
	// duration_p95 or duration_p99; it fires when it compares with Threshold as
	// Comparison says (">", ">=", "<", "<="), and resolves when it no longer
	// compares with ResolveThreshold.
	Metric                      string
	Comparison                  string
	Threshold, ResolveThreshold float64
	Window, For, RepeatInterval time.Duration
	MinRequests                 int64
	NoData                      string
	EndpointIDs                 []string
	Enabled                     bool
	CreatedAt, UpdatedAt        time.Time
}

// AlertRuleSpec is a new rule. Zero fields take the service's defaults,
// except Metric and Threshold, which are always sent.
type AlertRuleSpec struct {
	Title, Name, PathPrefix, Method string
	StatusClasses                   []string
	Metric                          string
	Comparison                      string
	Threshold                       float64
	// ResolveThreshold nil: the threshold itself.
	ResolveThreshold *float64
	Window, For      time.Duration
	// RepeatInterval nil: the service's default (4h); 0: never repeat.
	RepeatInterval *time.Duration
	MinRequests    int64
	NoData         string
	EndpointIDs    []string
	// Disabled creates the rule without evaluating it.
	Disabled bool
}

// body is the spec as the API takes it.
func (s AlertRuleSpec) body() map[string]any {
	b := map[string]any{"metric": s.Metric, "threshold": s.Threshold}
	for name, v := range map[string]string{"title": s.Title, "name": s.Name, "path_prefix": s.PathPrefix, "method": s.Method,
		"comparison": s.Comparison, "no_data": s.NoData} {
		if v != "" {
			b[name] = v
		}
	}
	if len(s.StatusClasses) > 0 {
		b["status_classes"] = s.StatusClasses
	}
	if len(s.EndpointIDs) > 0 {
		b["endpoint_ids"] = s.EndpointIDs
	}
	if s.ResolveThreshold != nil {
		b["resolve_threshold"] = *s.ResolveThreshold
	}
	if s.Window != 0 {
		b["window"] = AlertDuration(s.Window)
	}
	if s.For != 0 {
		b["for"] = AlertDuration(s.For)
	}
	if s.RepeatInterval != nil {
		b["repeat_interval"] = AlertDuration(*s.RepeatInterval)
	}
	if s.MinRequests != 0 {
		b["min_requests"] = s.MinRequests
	}
	if s.Disabled {
		b["enabled"] = false
	}
	return b
}

// AlertDuration writes d as the API takes durations: whole hours, minutes and
// seconds ("1h30m", "45s", "0s").
func AlertDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	var out string
	for _, unit := range []struct {
		suffix string
		width  time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / unit.width; n > 0 {
			out += strconv.FormatInt(int64(n), 10) + unit.suffix
			d -= n * unit.width
		}
	}
	return out
}

// ruleOf reads the API's rule object.
func ruleOf(j alertjson.Rule) (AlertRule, error) {
	r := AlertRule{ID: j.ID, Title: text(j.Title), Name: text(j.Name), PathPrefix: text(j.PathPrefix), Method: text(j.Method),
		StatusClasses: j.StatusClasses, Metric: j.Metric, Comparison: j.Comparison, Threshold: j.Threshold,
		ResolveThreshold: j.ResolveThreshold, MinRequests: j.MinRequests, NoData: j.NoData, EndpointIDs: j.EndpointIDs,
		Enabled: j.Enabled, CreatedAt: time.Time(j.CreatedAt), UpdatedAt: time.Time(j.UpdatedAt)}
	var err error
	if r.Window, r.For, r.RepeatInterval, err = j.Durations(); err != nil {
		return AlertRule{}, fmt.Errorf("rule %s: %w", j.ID, err)
	}
	return r, nil
}

func text(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// alerts is {base}/v1/alerts joined with elems.
func (c *Client) alerts(elems ...string) *url.URL {
	return c.messages.JoinPath(append([]string{"..", "alerts"}, elems...)...)
}

// alertCall sends body (nil: none) to u with method and decodes the reply's
// data into data.
func (c *Client) alertCall(ctx context.Context, method string, u *url.URL, body any, data any) error {
	r := call{method: method, url: u}
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("httpclient: %w", err)
		}
		r.body, r.header = raw, http.Header{"Content-Type": {"application/json"}}
	}
	raw, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	reply := struct {
		replyText
		Data any `json:"data"`
	}{Data: data}
	return decode(r, raw, &reply, &reply.replyText)
}

func (c *Client) ruleCall(ctx context.Context, method string, u *url.URL, body any) (*AlertRule, error) {
	var j alertjson.Rule
	if err := c.alertCall(ctx, method, u, body, &j); err != nil {
		return nil, err
	}
	r, err := ruleOf(j)
	if err != nil {
		return nil, fmt.Errorf("httpclient: %s %s: %w", method, u.Path, err)
	}
	return &r, nil
}

// CreateAlertRule creates a rule (POST /v1/alerts/rules). Bad values are a 400
// *APIError naming each field. It is not retried.
func (c *Client) CreateAlertRule(ctx context.Context, spec AlertRuleSpec) (*AlertRule, error) {
	return c.ruleCall(ctx, http.MethodPost, c.alerts("rules"), spec.body())
}

// AlertRule returns one rule; a 404 *APIError when there is none.
func (c *Client) AlertRule(ctx context.Context, id string) (*AlertRule, error) {
	return c.ruleCall(ctx, http.MethodGet, c.alerts("rules", id), nil)
}

// UpdateAlertRule changes the fields changes names, as the API names them
// ("threshold", "window": "10m", "name": nil to clear); the others stay.
func (c *Client) UpdateAlertRule(ctx context.Context, id string, changes map[string]any) (*AlertRule, error) {
	if changes == nil {
		changes = map[string]any{}
	}
	return c.ruleCall(ctx, http.MethodPatch, c.alerts("rules", id), changes)
}

// AlertRules lists the rules of the key's account and domain, oldest first.
func (c *Client) AlertRules(ctx context.Context) ([]AlertRule, error) {
	var js []alertjson.Rule
	if err := c.alertCall(ctx, http.MethodGet, c.alerts("rules"), nil, &js); err != nil {
		return nil, err
	}
	rules := make([]AlertRule, len(js))
	for i, j := range js {
		var err error
		if rules[i], err = ruleOf(j); err != nil {
			return nil, fmt.Errorf("httpclient: GET %s: %w", c.alerts("rules").Path, err)
		}
	}
	return rules, nil
}

// DeleteAlertRule deletes a rule with its state and history.
func (c *Client) DeleteAlertRule(ctx context.Context, id string) error {
	return c.alertCall(ctx, http.MethodDelete, c.alerts("rules", id), nil, nil)
}

// AlertTest is a queued test event.
type AlertTest struct {
	EventID    string `json:"event_id"`
	Deliveries []struct {
		DeliveryID string `json:"delivery_id"`
		EndpointID string `json:"endpoint_id"`
	} `json:"deliveries"`
}

// TestAlertRule sends an alert.test event of the rule to its endpoints.
func (c *Client) TestAlertRule(ctx context.Context, id string) (*AlertTest, error) {
	var t AlertTest
	if err := c.alertCall(ctx, http.MethodPost, c.alerts("rules", id, "test"), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// AlertTransition is one change of a rule's status.
type AlertTransition struct {
	Seq    int64     `json:"seq"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	Value  *float64  `json:"value"`
}

// AlertHistory is one page of a rule's history, newest first.
type AlertHistory struct {
	Transitions []AlertTransition
	// NextBefore, when HasMore, asks for the next page.
	HasMore    bool
	NextBefore int64
}

// AlertRuleHistory reads the rule's transitions with seq below before (0: the
// newest), at most limit (0: the service's default of 20).
func (c *Client) AlertRuleHistory(ctx context.Context, id string, before int64, limit int) (*AlertHistory, error) {
	page, err := historyPage[AlertTransition](ctx, c, c.alerts("rules", id, "history"), before, limit)
	if err != nil {
		return nil, err
	}
	return &AlertHistory{Transitions: page.Data, HasMore: page.Pagination.HasMore, NextBefore: page.Pagination.NextBefore}, nil
}

// historyReply is one page of a history read newest first.
type historyReply[T any] struct {
	replyText
	Data       []T `json:"data"`
	Pagination struct {
		HasMore    bool  `json:"has_more"`
		NextBefore int64 `json:"next_before"`
	} `json:"pagination"`
}

// historyPage reads the page of the history at u with the items below before
// (0: from the newest), at most limit (0: the service's default).
func historyPage[T any](ctx context.Context, c *Client, u *url.URL, before int64, limit int) (*historyReply[T], error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	u.RawQuery = q.Encode()
	r := call{method: http.MethodGet, url: u}
	raw, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var reply historyReply[T]
	if err := decode(r, raw, &reply, &reply.replyText); err != nil {
		return nil, err
	}
	return &reply, nil
}

// AlertWindow is what an evaluation saw of a rule's window.
type AlertWindow struct {
	From         time.Time         `json:"from"`
	To           time.Time         `json:"to"`
	Count        int64             `json:"count"`
	Status       StatusCounts      `json:"status"`
	Errors       int64             `json:"errors"`
	ServerErrors int64             `json:"server_errors"`
	Duration     *durationJSON     `json:"duration_ms"`
	Value        *float64          `json:"value"`
	TopPaths     []json.RawMessage `json:"top_paths"`
}

// AlertPeriod is a span when a rule was firing; To is zero while it lasts.
type AlertPeriod struct {
	From time.Time  `json:"from"`
	To   *time.Time `json:"to"`
}

// AlertState is a rule with its state.
type AlertState struct {
	Rule AlertRule
	// Status is ok, pending, firing or resolved; Reason why the last
	// evaluation decided so (threshold, no_data, too_little_traffic,
	// evaluation_error).
	Status, Reason    string
	Since, Evaluated  time.Time
	Error             string
	Value             *float64
	Window            *AlertWindow
	RecentTransitions []AlertTransition
	FiringPeriods     []AlertPeriod
}

// AlertStates reads every rule's state, with the periods of [from, to) when it
// was firing (zero: the last 24 hours). A portal session may call it.
func (c *Client) AlertStates(ctx context.Context, from, to time.Time) ([]AlertState, error) {
	u := c.alerts("states")
	q := url.Values{}
	if !from.IsZero() {
		q.Set("from", from.UTC().Format(time.RFC3339Nano))
	}
	if !to.IsZero() {
		q.Set("to", to.UTC().Format(time.RFC3339Nano))
	}
	u.RawQuery = q.Encode()
	var js []struct {
		Rule        alertjson.Rule    `json:"rule"`
		Status      string            `json:"status"`
		Reason      *string           `json:"reason"`
		Since       *time.Time        `json:"since"`
		EvaluatedAt *time.Time        `json:"evaluated_at"`
		Error       *string           `json:"error"`
		Value       *float64          `json:"value"`
		Window      *AlertWindow      `json:"window"`
		Recent      []AlertTransition `json:"recent_transitions"`
		Firing      []AlertPeriod     `json:"firing_periods"`
	}
	if err := c.alertCall(ctx, http.MethodGet, u, nil, &js); err != nil {
		return nil, err
	}
	states := make([]AlertState, len(js))
	for i, j := range js {
		r, err := ruleOf(j.Rule)
		if err != nil {
			return nil, fmt.Errorf("httpclient: GET %s: %w", u.Path, err)
		}
		states[i] = AlertState{Rule: r, Status: j.Status, Reason: text(j.Reason), Error: text(j.Error), Value: j.Value,
			Window: j.Window, RecentTransitions: j.Recent, FiringPeriods: j.Firing}
		if j.Since != nil {
			states[i].Since = *j.Since
		}
		if j.EvaluatedAt != nil {
			states[i].Evaluated = *j.EvaluatedAt
		}
	}
	return states, nil
}

// WebhookEndpoint is where alert events are sent. Secret is set only by
// CreateWebhookEndpoint and RotateWebhookSecret: the service shows it once.
type WebhookEndpoint struct {
	ID              string    `json:"id"`
	URL             string    `json:"url"`
	Description     *string   `json:"description"`
	Format          string    `json:"format"`
	Enabled         bool      `json:"enabled"`
	DisabledReason  *string   `json:"disabled_reason"`
	SecretCreatedAt time.Time `json:"secret_created_at"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	Secret          string    `json:"secret"`
}

func (c *Client) endpointCall(ctx context.Context, method string, u *url.URL, body any) (*WebhookEndpoint, error) {
	var e WebhookEndpoint
	if err := c.alertCall(ctx, method, u, body, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// CreateWebhookEndpoint creates an endpoint on webhookURL in format
// ("standard", "slack"; "": chosen by the service) and returns it with its
// secret. A URL that leads to an internal address is a 400 naming "url".
func (c *Client) CreateWebhookEndpoint(ctx context.Context, webhookURL, description, format string) (*WebhookEndpoint, error) {
	body := map[string]any{"url": webhookURL}
	if description != "" {
		body["description"] = description
	}
	if format != "" {
		body["format"] = format
	}
	return c.endpointCall(ctx, http.MethodPost, c.alerts("endpoints"), body)
}

// WebhookEndpoint returns one endpoint, without its secret.
func (c *Client) WebhookEndpoint(ctx context.Context, id string) (*WebhookEndpoint, error) {
	return c.endpointCall(ctx, http.MethodGet, c.alerts("endpoints", id), nil)
}

// WebhookEndpoints lists the endpoints, oldest first, without secrets.
func (c *Client) WebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error) {
	var es []WebhookEndpoint
	if err := c.alertCall(ctx, http.MethodGet, c.alerts("endpoints"), nil, &es); err != nil {
		return nil, err
	}
	return es, nil
}

// UpdateWebhookEndpoint changes the fields changes names ("url",
// "description", "format", "enabled").
func (c *Client) UpdateWebhookEndpoint(ctx context.Context, id string, changes map[string]any) (*WebhookEndpoint, error) {
	if changes == nil {
		changes = map[string]any{}
	}
	return c.endpointCall(ctx, http.MethodPatch, c.alerts("endpoints", id), changes)
}

// RotateWebhookSecret gives the endpoint a new secret, returned here once; the
// old one signs beside it for a day.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string) (*WebhookEndpoint, error) {
	return c.endpointCall(ctx, http.MethodPost, c.alerts("endpoints", id, "rotate-secret"), nil)
}

// DeleteWebhookEndpoint deletes an endpoint.
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, id string) error {
	return c.alertCall(ctx, http.MethodDelete, c.alerts("endpoints", id), nil, nil)
}

// DeliveryAttempt is one entry of an endpoint's delivery log.
type DeliveryAttempt struct {
	ID         string    `json:"id"`
	DeliveryID string    `json:"delivery_id"`
	WebhookID  string    `json:"webhook_id"`
	EventType  string    `json:"event_type"`
	RuleID     string    `json:"rule_id"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	DurationMS float64   `json:"duration_ms"`
	Response   *string   `json:"response"`
}

// DeliveryLog reads the newest limit attempts to deliver to an endpoint (0:
// the service's default of 20).
func (c *Client) DeliveryLog(ctx context.Context, endpointID string, limit int) ([]DeliveryAttempt, error) {
	u := c.alerts("endpoints", endpointID, "deliveries")
	if limit > 0 {
		u.RawQuery = url.Values{"limit": {strconv.Itoa(limit)}}.Encode()
	}
	var log []DeliveryAttempt
	if err := c.alertCall(ctx, http.MethodGet, u, nil, &log); err != nil {
		return nil, err
	}
	return log, nil
}
