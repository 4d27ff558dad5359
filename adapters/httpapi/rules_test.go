package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// rulesService is the API with rule sets on memory stores, the portal on, and
// a portal session token of the whole account.
type rulesService struct {
	srv      *httptest.Server
	messages *memory.Store
	ruleSets *memory.RuleSetStore
	token    string
}

func rulesServer(t *testing.T, file map[string]rules.RuleSet) rulesService {
	t.Helper()
	clock := conformance.NewFakeClock(start)
	p, err := portal.New(portal.Config{Secret: portal.RandomSecret()}, clock)
	if err != nil {
		t.Fatal(err)
	}
	svc := rulesService{messages: memory.New(), ruleSets: memory.NewRuleSetStore()}
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	policy := cfg.Policy()
	rulesCfg := app.DefaultRulesConfig()
	rulesCfg.HashKey, rulesCfg.File = []byte("httpapi-test-hash-key"), file
	metrics, err := httpapi.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	book, err := app.NewRuleBook(svc.ruleSets, rulesCfg, metrics, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ingest, err := app.NewIngesterWith(app.IngestPorts{Store: svc.messages, Lookup: svc.messages, Clock: clock, Rules: book}, policy, app.DefaultAdmissionOptions())
	if err != nil {
		t.Fatal(err)
	}
	reader := app.NewReader(svc.messages, policy, clock)
	keys := p.KeyStore(keyring.New([]keyring.Entry{{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)}}))
	svc.srv = httptest.NewServer(httpapi.New(ingest, reader, keys, httpapi.Options{Portal: p, Metrics: metrics,
		Rules: app.NewRuleSets(svc.ruleSets, book, reader, policy, clock)}))
	t.Cleanup(svc.srv.Close)
	session, err := p.CreateSession(domain.Principal{Scope: domain.Scope{Account: "acme", Domain: "live"}}, portal.SessionRequest{},
		httptest.NewRequest(http.MethodGet, "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	svc.token = session.Token
	return svc
}

const (
	tokenRules = `{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "remove"}},` +
		`{"id": "emails", "select": ["body"], "match": {"detector": "email"}, "action": {"type": "mask"}}],` +
		`"ingest": [{"id": "probes", "scope": {"paths": ["/healthz"]}, "action": "drop"}]}`
	unknownDetector = `{"privacy": [{"id": "p", "select": ["**"], "match": {"detector": "dna"}, "action": {"type": "mask"}}]}`
)

func putRules(body, ifMatch, reason string) openAPICase {
	header := []string{"If-Match", ifMatch, app.RuleReasonHeader, reason}
	return openAPICase{method: http.MethodPut, target: "/v1/rules", body: body, header: header}
}

// manyRules is a privacy list of n rules.
func manyRules(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":"r%d","select":["query.q%d"],"action":{"type":"mask"}}`, i, i)
	}
	return `{"privacy":[` + strings.Join(items, ",") + `]}`
}

type rulesReply struct {
	Data struct {
		Version     int64           `json:"version"`
		Source      string          `json:"source"`
		FileVersion string          `json:"file_version"`
		Rules       json.RawMessage `json:"rules"`
		KeyID       string          `json:"key_id"`
		Reason      string          `json:"reason"`
	}
}

// Every rule set operation's real replies, accepted and refused, against the
// document; refusals change nothing.
func TestRulesRepliesMatchOpenAPI(t *testing.T) {
	svc := rulesServer(t, nil)
	c := newOpenAPIChecker(t, svc.srv)
	var got rulesReply
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules", status: 200, requestValid: true}), &got)
	if got.Data.Version != 0 || got.Data.Source != "store" || string(got.Data.Rules) != "{}" {
		t.Errorf("no rule set yet: %+v", got.Data)
	}
	put := putRules(tokenRules, `"0"`, "drop reset tokens and probes (OPS-12)")
	put.status, put.requestValid = 200, true
	mustUnmarshal(t, c.check(t, put), &got)
	if got.Data.Version != 1 || got.Data.KeyID != keyring.KeyID(keyring.Digest(liveKey)) || got.Data.Reason != "drop reset tokens and probes (OPS-12)" {
		t.Errorf("saved: %+v, want version 1 by the key with the reason", got.Data)
	}
	second := putRules(`{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "hash"}}]}`, `"1"`, "hash instead ‰ ü")
	second.status, second.requestValid = 200, true
	c.check(t, second)

	for _, tc := range []struct {
		openAPICase
		field string
	}{
		{openAPICase{name: "stale", status: 412, requestValid: true}, ""},
		{openAPICase{name: "future", status: 412, requestValid: true}, ""},
		{openAPICase{name: "no If-Match", status: 428}, ""},
		{openAPICase{name: "weak If-Match", status: 400}, "If-Match"},
		{openAPICase{name: "no reason", status: 400}, app.RuleReasonHeader},
		{openAPICase{name: "blank reason", status: 400, replyOnly: true}, app.RuleReasonHeader},
		{openAPICase{name: "unknown detector", status: 400}, "privacy[0].match.detector"},
		{openAPICase{name: "10,000 rules", status: 400}, "privacy"},
		{openAPICase{name: "not JSON", status: 400}, ""},
		{openAPICase{name: "text body", status: 415}, ""},
	} {
		req := map[string]openAPICase{
			"stale":            putRules(`{}`, `"1"`, "x"),
			"future":           putRules(`{}`, `"7"`, "x"),
			"no If-Match":      putRules(`{}`, "", "x"),
			"weak If-Match":    putRules(`{}`, `W/"2"`, "x"),
			"no reason":        putRules(`{}`, `"2"`, ""),
			"blank reason":     putRules(`{}`, `"2"`, "   "),
			"unknown detector": putRules(unknownDetector, `"2"`, "x"),
			"10,000 rules":     putRules(manyRules(10_000), `"2"`, "x"),
			"not JSON":         putRules(`{"privacy":`, `"2"`, "x"),
			"text body":        putRules(`{}`, `"2"`, "x"),
		}[tc.name]
		if tc.name == "text body" {
			req.header = append(req.header, "Content-Type", "text/plain")
		}
		req.name, req.status, req.requestValid, req.replyOnly = tc.name, tc.status, tc.requestValid, tc.replyOnly
		t.Run(tc.name, func(t *testing.T) {
			var e errorJSON
			mustUnmarshal(t, c.check(t, req), &e)
			if tc.field != "" && (len(e.Errors) == 0 || e.Errors[0].Field != tc.field) {
				t.Errorf("%+v, want the field %s named", e, tc.field)
			}
		})
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules", status: 200, requestValid: true}), &got)
	if got.Data.Version != 2 || !strings.Contains(string(got.Data.Rules), `"hash"`) {
		t.Errorf("after the refusals: %+v, want version 2 unchanged", got.Data)
	}

	var history struct {
		Data []struct {
			Version int64
			Diff    rules.Difference
		}
		Pagination struct {
			HasMore    bool  `json:"has_more"`
			NextBefore int64 `json:"next_before"`
		}
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules/history?limit=1", status: 200, requestValid: true}), &history)
	if len(history.Data) != 1 || history.Data[0].Version != 2 || !history.Pagination.HasMore || history.Pagination.NextBefore != 2 ||
		fmt.Sprint(history.Data[0].Diff.Changed) != "[token]" || fmt.Sprint(history.Data[0].Diff.Removed) != "[emails probes]" {
		t.Errorf("history page 1: %+v", history)
	}
	c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules/history?before=2", status: 200, requestValid: true})
	c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules/history?limit=0", status: 400})

	// Trying: a sample exchange, a stored message, proposed rules.
	sample := openAPIItem(start.Add(-time.Minute), `"/pay?x=1"`, `"/reset?token=s3cret&x=1"`)
	var tried struct {
		Data struct {
			Version int64
			Stored  bool
			Message struct{ Path string }
			Outcome struct{ Changes []rules.Change }
		}
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: "/v1/rules/try", body: `{"exchange":` + sample + `}`,
		status: 200, requestValid: true}), &tried)
	if tried.Data.Version != 2 || !tried.Data.Stored || strings.Contains(tried.Data.Message.Path, "s3cret") ||
		fmt.Sprint(tried.Data.Outcome.Changes) != "[{token query.token}]" {
		t.Errorf("tried version 2: %+v", tried.Data)
	}
	var stored struct{ Data struct{ ID string } }
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: openAPIItem(start.Add(-time.Minute)),
		status: 200, requestValid: true}), &stored)
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/rules/try", status: 200, requestValid: true,
		body: `{"message_id":"` + stored.Data.ID + `","source":"proxy","rules":{"ingest":[{"id":"all-posts","scope":{"methods":["POST"]},"action":"drop"}]}}`})
	for _, tc := range []openAPICase{
		{name: "unknown message", body: `{"message_id":"msg_AAAAAAAAAAAA"}`, status: 404, requestValid: true},
		{name: "bad source", body: `{"exchange":` + sample + `,"source":"smtp"}`, status: 400},
		{name: "both", body: `{"exchange":` + sample + `,"message_id":"msg_AAAAAAAAAAAA"}`, status: 400, requestValid: true},
		{name: "neither", body: `{}`, status: 400, requestValid: true},
		{name: "bad proposed rules", body: `{"exchange":` + sample + `,"rules":` + unknownDetector + `}`, status: 400},
		{name: "unknown member", body: `{"exchange":` + sample + `,"dry":true}`, status: 400},
	} {
		tc.method, tc.target = http.MethodPost, "/v1/rules/try"
		t.Run("try "+tc.name, func(t *testing.T) { c.check(t, tc) })
	}

	// A portal session gets 403 on every rule set operation.
	portalAuth := []string{"Authorization", "Bearer " + svc.token}
	for _, tc := range []openAPICase{
		{method: http.MethodGet, target: "/v1/rules"},
		{method: http.MethodGet, target: "/v1/rules/history"},
		{method: http.MethodPost, target: "/v1/rules/try", body: `{"exchange":` + sample + `}`},
		putRules(`{}`, `"2"`, "from the portal"),
	} {
		tc.header, tc.status, tc.requestValid = append(tc.header, portalAuth...), 403, true
		c.check(t, tc)
	}
	mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules", status: 200, requestValid: true}), &got)
	if got.Data.Version != 2 {
		t.Errorf("after the portal's refused PUT: version %d, want 2", got.Data.Version)
	}

	// Without rule sets, every rule endpoint is a 404.
	off := newOpenAPIChecker(t, openAPIServer(t, memory.New(), nil))
	off.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules", status: 404, requestValid: true})
	off.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules/history", status: 404, requestValid: true})
}

// A stale If-Match is a 412 carrying the current ETag, and the running rules
// stay those of the current version: the next submission follows them.
func TestStaleIfMatchLeavesTheRunningRules(t *testing.T) {
	svc := rulesServer(t, nil)
	c := newOpenAPIChecker(t, svc.srv)
	for i, doc := range []string{tokenRules, `{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "mask"}}]}`} {
		put := putRules(doc, fmt.Sprintf(`"%d"`, i), "step")
		put.status, put.requestValid = 200, true
		c.check(t, put)
	}
	resp, raw := send(t, svc.srv, c.request(t, putRules(`{}`, `"1"`, "an editor's stale copy")))
	if resp.StatusCode != http.StatusPreconditionFailed || resp.Header.Get("ETag") != `"2"` {
		t.Fatalf("stale PUT: %d with ETag %q: %s; want 412 with the current ETag \"2\"", resp.StatusCode, resp.Header.Get("ETag"), raw)
	}
	if v, err := svc.ruleSets.RuleSet(t.Context(), "acme"); err != nil || v.Number != 2 || v.Reason != "step" {
		t.Fatalf("the store after a stale PUT: %+v (%v), want version 2", v, err)
	}
	submitted := c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", status: 200, requestValid: true,
		body: openAPIItem(start.Add(-time.Minute), `"/pay?x=1"`, `"/reset?token=s3cret"`)})
	var id struct{ Data struct{ ID string } }
	mustUnmarshal(t, submitted, &id)
	msgs, err := svc.messages.Lookup(t.Context(), domain.Scope{Account: "acme", Domain: "live"}, []string{id.Data.ID})
	if err != nil || len(msgs) != 1 || msgs[0].Path != "/reset?token="+strings.ReplaceAll(domain.Mask, "*", "%2A") {
		t.Errorf("stored %+v (%v): want version 2's masked token", msgs, err)
	}
}

// A message an ingest rule drops is "stored": false in the submit reply,
// and nothing else changes; a proxy's submissions say so and meet the rules
// scoped to it; the rules' counts reach /metrics.
func TestSubmitReplyMarksDroppedMessages(t *testing.T) {
	svc := rulesServer(t, nil)
	c := newOpenAPIChecker(t, svc.srv)
	put := putRules(`{"ingest": [{"id": "probes", "scope": {"paths": ["/healthz"]}, "action": "drop"},`+
		`{"id": "proxied-pay", "scope": {"paths": ["/pay"], "sources": ["proxy"]}, "action": "drop"}]}`, `"0"`, "noise")
	put.status, put.requestValid = 200, true
	c.check(t, put)
	probe := openAPIItem(start.Add(-time.Minute), `"/pay?x=1"`, `"/healthz"`)
	raw := c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: "[" + openAPIItem(start.Add(-time.Minute)) + "," + probe + "]",
		status: 200, requestValid: true})
	var reply struct{ Data []map[string]any }
	mustUnmarshal(t, raw, &reply)
	if len(reply.Data) != 2 || reply.Data[0]["stored"] != nil || reply.Data[1]["stored"] != false || reply.Data[1]["id"] == nil {
		t.Fatalf("reply %s: want the health check's identity marked \"stored\": false, the other unmarked", raw)
	}
	ids := []string{reply.Data[0]["id"].(string), reply.Data[1]["id"].(string)}
	if got, _ := svc.messages.Lookup(t.Context(), domain.Scope{Account: "acme", Domain: "live"}, ids); len(got) != 1 || got[0].ID != ids[0] {
		t.Errorf("stored %d of the two, want the first alone", len(got))
	}

	pay := strings.Replace(openAPIItem(start.Add(-time.Minute)), `"/pay?x=1"`, `"/pay"`, 1)
	for source, dropped := range map[string]bool{"proxy": true, "api": false} {
		reply.Data = nil
		mustUnmarshal(t, c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: "[" + pay + "]",
			header: []string{httpapi.SourceHeader, source}, status: 200, requestValid: true}), &reply)
		if (reply.Data[0]["stored"] == false) != dropped {
			t.Errorf("source %s: %v, want dropped %v", source, reply.Data[0], dropped)
		}
	}
	c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: pay, header: []string{httpapi.SourceHeader, "smtp"}, status: 400})
	for _, cut := range []string{"0", "-1", "ten"} {
		refused := c.check(t, openAPICase{method: http.MethodPost, target: "/v1/messages", body: pay, header: []string{httpapi.BodyCutHeader, cut}, status: 400})
		if !strings.Contains(string(refused), httpapi.BodyCutHeader) {
			t.Errorf("%s %s: %s, want the header named", httpapi.BodyCutHeader, cut, refused)
		}
	}

	resp, err := svc.srv.Client().Get(svc.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`reqlog_rule_matches_total{action="drop",mode="enforce",rule="probes"} 1`, `reqlog_rule_dropped_messages_total 2`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A rules file rules its accounts: GET shows its version, PUT is a 409.
func TestRulesFromFileAreReadOnly(t *testing.T) {
	rs, err := rules.Parse([]byte(tokenRules))
	if err != nil {
		t.Fatal(err)
	}
	svc := rulesServer(t, map[string]rules.RuleSet{"acme": rs})
	c := newOpenAPIChecker(t, svc.srv)
	var got rulesReply
	raw := c.check(t, openAPICase{method: http.MethodGet, target: "/v1/rules", status: 200, requestValid: true})
	mustUnmarshal(t, raw, &got)
	if got.Data.Source != "file" || len(got.Data.FileVersion) != 12 || !strings.Contains(string(got.Data.Rules), `"probes"`) {
		t.Errorf("GET under a file: %s", raw)
	}
	for _, put := range []openAPICase{putRules(`{}`, `"0"`, "x"), putRules(`{}`, "", "")} {
		put.status, put.requestValid, put.replyOnly = 409, true, true
		c.check(t, put)
	}
}
