package httpclient_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/adapters/webhook/webhooktest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// The alerting calls against a real service: rules and endpoints round trip,
// a test event reaches the receiver and the delivery log, errors are the
// sentinels and validation errors they should be.
func TestAlertingCalls(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c, err := httpclient.New(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rcv := webhooktest.NewReceiver(t)
	endpoint, err := c.CreateWebhookEndpoint(ctx, rcv.URL, "ops", "standard")
	if err != nil || endpoint.Secret == "" || endpoint.Format != "standard" {
		t.Fatalf("CreateWebhookEndpoint = %+v, %v", endpoint, err)
	}
	resolve, repeat := 0.05, 90*time.Minute
	spec := httpclient.AlertRuleSpec{Title: "Orders", Name: "shop", PathPrefix: "/v1/orders", Method: "POST",
		StatusClasses: []string{"4xx", "5xx"}, Metric: "error_rate", Comparison: ">=", Threshold: 0.1, ResolveThreshold: &resolve,
		Window: 10 * time.Minute, For: 2 * time.Minute, RepeatInterval: &repeat, MinRequests: 20, NoData: "ok",
		EndpointIDs: []string{endpoint.ID}, Disabled: true}
	rule, err := c.CreateAlertRule(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := httpclient.AlertRule{ID: rule.ID, Title: "Orders", Name: "shop", PathPrefix: "/v1/orders", Method: "POST",
		StatusClasses: []string{"4xx", "5xx"}, Metric: "error_rate", Comparison: ">=", Threshold: 0.1, ResolveThreshold: 0.05,
		Window: 10 * time.Minute, For: 2 * time.Minute, RepeatInterval: repeat, MinRequests: 20, NoData: "ok",
		EndpointIDs: []string{endpoint.ID}, CreatedAt: rule.CreatedAt, UpdatedAt: rule.UpdatedAt}
	if !sameRule(*rule, want) {
		t.Errorf("created %+v\nwant %+v", *rule, want)
	}
	if got, err := c.AlertRule(ctx, rule.ID); err != nil || !sameRule(*got, *rule) {
		t.Errorf("AlertRule = %+v, %v", got, err)
	}
	updated, err := c.UpdateAlertRule(ctx, rule.ID, map[string]any{"enabled": true, "name": nil, "window": "15m"})
	if err != nil || !updated.Enabled || updated.Name != "" || updated.Window != 15*time.Minute || updated.Threshold != 0.1 {
		t.Errorf("UpdateAlertRule = %+v, %v", updated, err)
	}
	if rules, err := c.AlertRules(ctx); err != nil || len(rules) != 1 || rules[0].ID != rule.ID {
		t.Errorf("AlertRules = %+v, %v", rules, err)
	}
	test, err := c.TestAlertRule(ctx, rule.ID)
	if err != nil || len(test.Deliveries) != 1 || test.Deliveries[0].EndpointID != endpoint.ID {
		t.Fatalf("TestAlertRule = %+v, %v", test, err)
	}
	got := rcv.WaitFor(t, 1, 15*time.Second)
	if got[0].Header.Get("webhook-id") != test.EventID {
		t.Errorf("webhook-id %q, want the test's event %q", got[0].Header.Get("webhook-id"), test.EventID)
	}
	// The worker logs the attempt just after the receiver answers: poll.
	var log []httpclient.DeliveryAttempt
	deadline, tick := time.After(15*time.Second), time.NewTicker(20*time.Millisecond)
	defer tick.Stop()
poll:
	for {
		if log, err = c.DeliveryLog(ctx, endpoint.ID, 10); err != nil || len(log) > 0 {
			break
		}
		select {
		case <-deadline:
			break poll
		case <-tick.C:
		}
	}
	if len(log) != 1 || log[0].WebhookID != test.EventID || log[0].StatusCode == nil || *log[0].StatusCode != 204 {
		t.Errorf("DeliveryLog = %+v, %v", log, err)
	}
	states, err := c.AlertStates(ctx, time.Time{}, time.Time{})
	if err != nil || len(states) != 1 || states[0].Rule.ID != rule.ID || states[0].Status != "ok" {
		t.Errorf("AlertStates = %+v, %v", states, err)
	}
	if h, err := c.AlertRuleHistory(ctx, rule.ID, 0, 5); err != nil || len(h.Transitions) != 0 || h.HasMore {
		t.Errorf("AlertRuleHistory = %+v, %v", h, err)
	}
	rotated, err := c.RotateWebhookSecret(ctx, endpoint.ID)
	if err != nil || rotated.Secret == "" || rotated.Secret == endpoint.Secret {
		t.Errorf("RotateWebhookSecret = %+v, %v", rotated, err)
	}
	if listed, err := c.WebhookEndpoints(ctx); err != nil || len(listed) != 1 || listed[0].Secret != "" {
		t.Errorf("WebhookEndpoints = %+v, %v: want one, without its secret", listed, err)
	}
	if e, err := c.UpdateWebhookEndpoint(ctx, endpoint.ID, map[string]any{"enabled": false}); err != nil || e.Enabled {
		t.Errorf("UpdateWebhookEndpoint = %+v, %v", e, err)
	}

	_, err = c.CreateAlertRule(ctx, httpclient.AlertRuleSpec{Metric: "error_rate", Threshold: 3})
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) || !slices.ContainsFunc(invalid.Fields, func(f domain.FieldError) bool { return f.Field == "threshold" }) {
		t.Errorf("a rate over 1: %v, want a validation error naming threshold", err)
	}
	if err := c.DeleteAlertRule(ctx, rule.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AlertRule(ctx, rule.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("AlertRule after delete: %v, want ErrNotFound", err)
	}
	if err := c.DeleteWebhookEndpoint(ctx, endpoint.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WebhookEndpoint(ctx, endpoint.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("WebhookEndpoint after delete: %v, want ErrNotFound", err)
	}
}

func sameRule(a, b httpclient.AlertRule) bool {
	return a.ID == b.ID && a.Title == b.Title && a.Name == b.Name && a.PathPrefix == b.PathPrefix && a.Method == b.Method &&
		slices.Equal(a.StatusClasses, b.StatusClasses) && a.Metric == b.Metric && a.Comparison == b.Comparison &&
		a.Threshold == b.Threshold && a.ResolveThreshold == b.ResolveThreshold && a.Window == b.Window && a.For == b.For &&
		a.RepeatInterval == b.RepeatInterval && a.MinRequests == b.MinRequests && a.NoData == b.NoData &&
		slices.Equal(a.EndpointIDs, b.EndpointIDs) && a.Enabled == b.Enabled && a.CreatedAt.Equal(b.CreatedAt)
}

func TestAlertDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 45 * time.Second: "45s", 5 * time.Minute: "5m",
		90 * time.Minute: "1h30m", 25*time.Hour + time.Second: "25h1s"} {
		if got := httpclient.AlertDuration(d); got != want {
			t.Errorf("AlertDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
