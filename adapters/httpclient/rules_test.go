package httpclient_test

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// clientCanaryRules scrub every place the client's canaries hide.
var clientCanaryRules = rules.RuleSet{
	Privacy: []rules.PrivacyRule{
		{ID: "emails", Select: []string{"**"}, Match: rules.Match{Detector: "email"}, Action: rules.Action{Type: rules.ActionMask}},
		{ID: "token", Select: []string{"query.token"}, Action: rules.Action{Type: rules.ActionRemove}},
		{ID: "partner", Select: []string{"request.headers.x-partner-id"}, Action: rules.Action{Type: rules.ActionHash}},
		{ID: "secrets", Select: []string{"body.**.secret"}, Action: rules.Action{Type: rules.ActionMask}},
	},
	Ingest: []rules.IngestRule{{ID: "probes", Scope: rules.Scope{Paths: []string{"/healthz"}}, Action: rules.IngestDrop}},
}

// The rule set calls against a real service, and a canary submitted through
// the Go client that reaches the store scrubbed (read from the store itself,
// not through the API).
func TestRuleSetCallsAndCanaries(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c, err := httpclient.New(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	current, err := c.Rules(ctx)
	if err != nil || current.Version != 0 || current.Source != "store" {
		t.Fatalf("Rules before any: %+v, %v", current, err)
	}
	saved, err := c.ReplaceRules(ctx, clientCanaryRules, 0, "scrub the canaries")
	if err != nil || saved.Version != 1 || saved.Reason != "scrub the canaries" || !strings.HasPrefix(saved.KeyID, "key_") || saved.SavedAt.IsZero() {
		t.Fatalf("ReplaceRules = %+v, %v", saved, err)
	}
	if _, err := c.ReplaceRules(ctx, rules.RuleSet{}, 0, "stale"); !errors.Is(err, ports.ErrStale) {
		t.Errorf("a stale version: %v, want ErrStale", err)
	}
	bad := rules.RuleSet{Privacy: []rules.PrivacyRule{{ID: "p", Select: []string{"**"}, Match: rules.Match{Detector: "dna"}, Action: rules.Action{Type: "mask"}}}}
	var invalid *domain.ValidationError
	if _, err := c.ReplaceRules(ctx, bad, 1, "bad"); !errors.As(err, &invalid) || invalid.Fields[0].Field != "privacy[0].match.detector" {
		t.Errorf("an unknown detector: %v, want a validation error naming it", err)
	}

	canaries := []string{"canary-1@example.com", "canary-2-token", "canary-3-partner", "canary-4@example.org", "canary-5-secret", "canary-6@example.net"}
	ex := httpclient.Exchange{Name: "signup", CreatedAt: time.Now().Add(-time.Second), Method: "POST",
		Path: "/v1/users?token=" + canaries[1] + "&page=2", IPAddress: "203.0.113.7",
		Request: httpclient.ExchangeRequest{Header: map[string][]string{"x-PARTNER-id": {canaries[2]}},
			Body: `{"email":"` + canaries[0] + `","list":[{"secret":"` + canaries[4] + `"}],"meta":"{\"to\":\"` + canaries[3] + `\"}"}`},
		Response: httpclient.ExchangeResponse{StatusCode: 201, Body: "email=" + strings.ReplaceAll(canaries[5], "@", "%40"),
			Header: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}}}
	probe := httpclient.Exchange{Name: "signup", CreatedAt: time.Now().Add(-time.Second), Method: "GET", Path: "/healthz",
		Response: httpclient.ExchangeResponse{StatusCode: 200}}
	ids, err := c.Submit(ctx, ex, probe)
	if err != nil || len(ids) != 2 || ids[0].Dropped || !ids[1].Dropped {
		t.Fatalf("Submit = %+v, %v; want the probe dropped", ids, err)
	}
	stored, err := svc.Store.Lookup(ctx, domain.Scope{Account: httpclienttest.Account, Domain: domain.DomainLive}, []string{ids[0].ID, ids[1].ID})
	if err != nil || len(stored) != 1 {
		t.Fatalf("the store holds %d of the two (%v), want the first alone", len(stored), err)
	}
	m := stored[0]
	all := m.Path + m.Request.Body + m.Response.Body + strings.Join(slices.Concat(slices.Collect(maps.Values(m.Request.Header))...), " ")
	for _, canary := range canaries {
		if strings.Contains(all, canary) || strings.Contains(all, strings.ReplaceAll(canary, "@", "%40")) {
			t.Errorf("canary %q reached the store: %s", canary, all)
		}
	}
	if m.Path != "/v1/users?page=2" || !strings.Contains(m.Request.Body, domain.Mask) {
		t.Errorf("stored path %q body %s", m.Path, m.Request.Body)
	}

	tried, err := c.TryRules(ctx, httpclient.RulesTrial{Exchange: &ex})
	if err != nil || tried.Version != 1 || !tried.Stored || tried.Message == nil || strings.Contains(tried.Message.Path, "canary") ||
		len(tried.Outcome.Changes) == 0 {
		t.Fatalf("TryRules = %+v, %v", tried, err)
	}
	for _, change := range tried.Outcome.Changes {
		if strings.Contains(change.Field, "canary") {
			t.Errorf("a change names a value: %+v", change)
		}
	}
	dropAll := rules.RuleSet{Ingest: []rules.IngestRule{{ID: "posts", Scope: rules.Scope{Methods: []string{"POST"}}, Action: rules.IngestDrop}}}
	if tried, err := c.TryRules(ctx, httpclient.RulesTrial{Rules: &dropAll, MessageID: ids[0].ID}); err != nil || tried.Stored || tried.Message != nil {
		t.Errorf("TryRules on the stored message with proposed rules = %+v, %v; want it dropped", tried, err)
	}
	if _, err := c.ReplaceRules(ctx, rules.RuleSet{}, 1, "clear"); err != nil {
		t.Fatal(err)
	}
	history, err := c.RulesHistory(ctx, 0, 1)
	if err != nil || len(history.Changes) != 1 || !history.HasMore || history.NextBefore != 2 || len(history.Changes[0].Diff.Removed) != 5 {
		t.Errorf("RulesHistory = %+v, %v", history, err)
	}
}

// A capturing proxy's client says so: rules scoped to the proxy apply.
func TestClientWithSource(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	var seen []string
	proxyClient, err := httpclient.New(svc.URL, httpclienttest.APIKey, httpclient.WithSource(rules.SourceProxy),
		httpclient.WithHTTPClient(&http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen = append(seen, r.Header.Get("X-Reqlog-Source"))
			return http.DefaultTransport.RoundTrip(r)
		})}))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := httpclient.New(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	proxied := rules.RuleSet{Ingest: []rules.IngestRule{{ID: "proxied", Scope: rules.Scope{Sources: []rules.Source{rules.SourceProxy}}, Action: rules.IngestDrop}}}
	if _, err := plain.ReplaceRules(t.Context(), proxied, 0, "the proxy's traffic is noise"); err != nil {
		t.Fatal(err)
	}
	ex := httpclient.Exchange{Name: "shop", CreatedAt: time.Now().Add(-time.Second), Method: "GET", Path: "/", Response: httpclient.ExchangeResponse{StatusCode: 200}}
	if ids, err := proxyClient.Submit(t.Context(), ex); err != nil || !ids[0].Dropped || !slices.Equal(seen, []string{"proxy"}) {
		t.Errorf("through the proxy's client: %+v, %v, headers %v", ids, err, seen)
	}
	if ids, err := plain.Submit(t.Context(), ex); err != nil || ids[0].Dropped {
		t.Errorf("through a plain client: %+v, %v", ids, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A client cutting bodies (as capture.New makes one for its cap) asks the
// service to cut after its rules: a card straddling the cut is masked whole,
// then the body is held to the cut with the capture's marker.
func TestClientCuttingBodiesAt(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c, err := httpclient.New(svc.URL, httpclienttest.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	cards := rules.RuleSet{Privacy: []rules.PrivacyRule{{ID: "cards", Select: []string{"body.**"},
		Match: rules.Match{Detector: "card_number"}, Action: rules.Action{Type: rules.ActionMask}}}}
	if _, err := c.ReplaceRules(t.Context(), cards, 0, "no card numbers"); err != nil {
		t.Fatal(err)
	}
	const cut = 40
	body := strings.Repeat("x", cut-8) + " 4111111111111111 and more text after it"
	ex := httpclient.Exchange{Name: "shop", CreatedAt: time.Now().Add(-time.Second), Method: "POST", Path: "/pay",
		Request: httpclient.ExchangeRequest{Body: body}, Response: httpclient.ExchangeResponse{StatusCode: 200}}
	ids, err := c.CuttingBodiesAt(cut).SubmitExchanges(t.Context(), []domain.Exchange{ex})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Get(t.Context(), ids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("x", cut-8) + " " + strings.Repeat("*", 7) + fmt.Sprintf("…[truncated by reqlog capture: %d bytes total]", len(body))
	if m.Request.Body != want || m.Request.Size != len(body) {
		t.Errorf("stored %q (size %d), want %q (size %d)", m.Request.Body, m.Request.Size, want, len(body))
	}
}
