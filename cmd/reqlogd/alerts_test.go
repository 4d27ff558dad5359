package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap/zaptest"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/webhook/webhooktest"
	"github.com/reqlog/reqlog/app"
)

// send makes one API call with key and decodes the reply into into.
func send(t *testing.T, method, target, key, body string, into any) int {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return call(t, req, into)
}

// traffic is a batch of n submissions to /v1/orders with status, created at.
func traffic(n, status int, at time.Time) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"POST","path":"/v1/orders/%d","request":{},"response":{"status_code":%d}}`,
			at.Unix(), i, status)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// The whole service on the real clock, as a user would try it: an endpoint and
// a rule made over the API, a burst of 5xx that crosses the threshold, then
// traffic that brings it back under the resolve threshold; the local receiver
// gets alert.firing then alert.resolved, signed so that the Python
// standardwebhooks package (independent of reqlog) and the official Go library
// accept them, with a portal link that opens the window's requests.
func TestServiceAlertsEndToEnd(t *testing.T) {
	cfg := defaultConfig() // the default store: SQLite
	cfg.SQLite.Dir = t.TempDir()
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.App.VisibilityDelay = 0
	cfg.Alerts.EvaluationInterval, cfg.Alerts.Poll = time.Second, 50*time.Millisecond
	cfg.Webhook.AllowPrivate = true
	const apiKey = "rk_alerts_end_to_end"
	key, err := app.NewAPIKey("acme", "live", apiKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keyring.Keys = []app.APIKey{key}
	graph, err := options(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var server *httpapi.Server
	var links *portalLinks
	svc := fxtest.New(t, graph, fx.Populate(&server, &links))
	svc.RequireStart()
	defer svc.RequireStop()
	links.listening(server.Addr())
	base := "http://" + server.Addr().String()
	rcv := webhooktest.NewReceiver(t)

	var endpoint struct{ Data struct{ ID, Secret string } }
	if status := send(t, http.MethodPost, base+"/v1/alerts/endpoints", apiKey, `{"url":"`+rcv.URL+`"}`, &endpoint); status != http.StatusCreated {
		t.Fatalf("creating the endpoint: %d %+v", status, endpoint)
	}
	var rule struct{ Data struct{ ID string } }
	if status := send(t, http.MethodPost, base+"/v1/alerts/rules", apiKey, `{"title":"Orders 5xx","path_prefix":"/v1/orders",
		"metric":"server_error_rate","threshold":0.2,"resolve_threshold":0.1,"window":"5m","min_requests":10}`, &rule); status != http.StatusCreated {
		t.Fatalf("creating the rule: %d", status)
	}
	// Three minutes ago: inside the window of every evaluation for two minutes.
	at := time.Now().Add(-3 * time.Minute)
	var ack any
	// One request: an evaluation between two would see the 503s alone (1.0).
	burst := strings.TrimSuffix(traffic(10, 503, at), "]") + "," + strings.TrimPrefix(traffic(10, 200, at), "[")
	if status := send(t, http.MethodPost, base+"/v1/messages", apiKey, burst, &ack); status != http.StatusOK {
		t.Fatalf("submitting: %d %v", status, ack)
	}
	firing := rcv.WaitFor(t, 1, 30*time.Second)
	send(t, http.MethodPost, base+"/v1/messages", apiKey, traffic(200, 200, at), &ack)
	got := rcv.WaitFor(t, 2, 30*time.Second)
	if len(got) != 2 || len(firing) != 1 {
		t.Fatalf("the receiver got %d deliveries, want firing then resolved", len(got))
	}

	wh, err := standardwebhooks.NewWebhook(endpoint.Data.Secret)
	if err != nil {
		t.Fatal(err)
	}
	type payload struct {
		Type string `json:"type"`
		Data struct {
			EventID   string   `json:"event_id"`
			Value     *float64 `json:"value"`
			Threshold float64  `json:"threshold"`
			PortalURL string   `json:"portal_url"`
			Rule      struct {
				ID string `json:"id"`
			} `json:"rule"`
		} `json:"data"`
	}
	cases := make([]webhooktest.Case, len(got))
	payloads := make([]payload, len(got))
	for i, r := range got {
		if err := wh.Verify(r.Body, r.Header); err != nil {
			t.Errorf("delivery %d: the official Go library refuses it: %v", i, err)
		}
		cases[i] = webhooktest.Case{Secret: endpoint.Data.Secret, Header: r.Header, Body: r.Body}
		if err := json.Unmarshal(r.Body, &payloads[i]); err != nil {
			t.Fatalf("delivery %d: %s: %v", i, r.Body, err)
		}
	}
	first, second := payloads[0], payloads[1]
	if first.Type != "alert.firing" || second.Type != "alert.resolved" || first.Data.Rule.ID != rule.Data.ID ||
		first.Data.Value == nil || *first.Data.Value != 0.5 || second.Data.Threshold != 0.1 || first.Data.EventID == second.Data.EventID {
		t.Errorf("payloads %+v", payloads)
	}
	// The portal link opens the portal with a session that reads the window's
	// requests.
	link, err := url.Parse(first.Data.PortalURL)
	if err != nil || !strings.HasPrefix(first.Data.PortalURL, base+"/portal?") || !strings.Contains(link.Fragment, "token=") {
		t.Fatalf("portal link %q, want the portal on %s with a session", first.Data.PortalURL, base)
	}
	token := strings.TrimPrefix(link.Fragment, "token=")
	var listed struct{ Messages []map[string]any }
	query := link.Query()
	query.Del("range")
	if query.Get("path_prefix") != "/v1/orders" || query.Get("from") == "" || query.Get("to") == "" {
		t.Errorf("the link's view %v: want the rule's path prefix and the window", query)
	}
	// Every request of the test lies in the window (the resolving ones too).
	if status := send(t, http.MethodGet, base+"/v1/messages?limit=100&"+query.Encode(), token, "", &listed); status != http.StatusOK || len(listed.Messages) != 100 {
		t.Errorf("the link's session and filters list %d messages (status %d), want a full page", len(listed.Messages), status)
	}
	var states struct {
		Data []struct {
			Status string `json:"status"`
			Firing []struct {
				From string  `json:"from"`
				To   *string `json:"to"`
			} `json:"firing_periods"`
		} `json:"data"`
	}
	send(t, http.MethodGet, base+"/v1/alerts/states", token, "", &states)
	if len(states.Data) != 1 || len(states.Data[0].Firing) != 1 || states.Data[0].Firing[0].To == nil {
		t.Errorf("states through the portal session: %+v, want the rule with one closed firing period", states.Data)
	}
	for i, err := range webhooktest.NewPythonVerifier(t).Verify(t, cases) {
		if err != nil {
			t.Errorf("delivery %d: %v", i, err)
		}
	}
}
