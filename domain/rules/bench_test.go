package rules_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// benchMessages are n messages shaped as app's BenchmarkIngestRules sends
// them: a dozen headers each way, JSON bodies of 0.3 to 6 KB, an e-mail and
// a card number in every request, a long number in one item note in ten.
func benchMessages(n int) []domain.Message {
	apps := []string{"shop", "payments", "signup", "search", "audit"}
	created := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	out := make([]domain.Message, n)
	for k := range out {
		lines := make([]map[string]any, 2+k%38)
		for l := range lines {
			note := "gift wrap"
			if (k+l)%10 == 0 {
				note = "call back on 01512345678"
			}
			lines[l] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", l), "qty": l % 7, "price": 12.5 + float64(l), "note": note}
		}
		req, _ := json.Marshal(map[string]any{"customer": map[string]any{"id": fmt.Sprintf("cus_%06d", k), "email": fmt.Sprintf("user%d@example.com", k),
			"phone": "+49 151 2345 6789", "address": "Hauptstraße 1, Berlin"}, "items": lines,
			"payment": map[string]any{"card": "4111 1111 1111 1111", "holder": "Ada Lovelace"}, "reference": fmt.Sprintf("ORD-%08d", k)})
		resp, _ := json.Marshal(map[string]any{"id": k, "status": "created", "items": lines, "customer": map[string]any{"email": fmt.Sprintf("user%d@example.com", k)}})
		header := func() domain.Header {
			return domain.Header{"Authorization": {"Bearer sk_live_0123456789abcdef"}, "Accept": {"application/json"}, "User-Agent": {"shop/1.0"},
				"X-Request-Id": {fmt.Sprintf("req-%08d", k)}, "X-Partner-Id": {"partner-42"}, "X-Forwarded-For": {"203.0.113.9"},
				"X-Device-Id": {"dev-0xdeadbeef"}, "Content-Type": {"application/json"}, "Accept-Encoding": {"gzip, br"}, "X-Customer-Id": {"cus_0042"},
				"Cookie": {"session=abc"}, "X-Trace": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
		}
		out[k] = domain.Message{ID: fmt.Sprintf("0193a0c4-0000-7000-8000-%012d", k), Account: "bench", Domain: "live", Name: apps[k%len(apps)],
			Method: "POST", Path: fmt.Sprintf("/v1/orders/%d?page=2&token=t%d&expand=items", k, k), Route: "/v1/orders/{id}",
			IPAddress: "203.0.113.9", StatusCode: 201 + (k%5)*100/4, CreatedAt: created, ExpiresAt: created.Add(domain.DefaultRetention),
			Request:  domain.Content{Header: header(), Body: string(req), ContentType: "application/json"},
			Response: domain.Content{Header: header(), Body: string(resp), ContentType: "application/json"}}
	}
	return out
}

// BenchmarkApply is the fifty user rules of app's BenchmarkIngestRules
// applied to its kind of message, alone: what the rules cost a message,
// without the decoding and the write around them.
func BenchmarkApply(b *testing.B) { benchmarkFifty(b, benchMessages(64)) }

// BenchmarkApplyValidated is BenchmarkApply on the messages as ingest hands
// them to the rules: validated, with validation's verdict on their bodies.
func BenchmarkApplyValidated(b *testing.B) { benchmarkFifty(b, validatedBenchMessages(b, 64)) }

func benchmarkFifty(b *testing.B, messages []domain.Message) {
	doc, err := os.ReadFile("testdata/fifty-rules.json")
	if err != nil {
		b.Fatal(err)
	}
	c := compile(b, string(doc))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := messages[i%len(messages)].Clone()
		c.Apply(&m, rules.SourceAPI)
	}
}

// validatedBenchMessages are benchMessages as ingest hands them to the
// rules: submitted, validated and made messages by the default policy.
func validatedBenchMessages(b *testing.B, n int) []domain.Message {
	plain := benchMessages(n)
	exchanges := make([]domain.Exchange, len(plain))
	for i, m := range plain {
		exchanges[i] = domain.Exchange{Name: m.Name, CreatedAt: time.Now().Add(-time.Minute), IPAddress: m.IPAddress, Method: m.Method,
			Path: m.Path, Route: m.Route, Request: domain.ExchangeRequest{Header: m.Request.Header, Body: m.Request.Body},
			Response: domain.ExchangeResponse{StatusCode: m.StatusCode, Header: m.Response.Header, Body: m.Response.Body}}
	}
	policy := domain.DefaultPolicy()
	batch, err := policy.ValidateSubmissions(domain.DraftsOf(exchanges), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	scope := domain.Scope{Account: "bench", Domain: domain.DomainLive}
	out := make([]domain.Message, len(batch.Submissions))
	for i, s := range batch.Submissions {
		out[i] = policy.NewUnstoredMessage(scope, s, domain.Identity{ID: plain[i].ID, Reference: fmt.Sprintf("msg_%012d", i)})
	}
	return out
}

// BenchmarkSubjects is the subject keys of app's BenchmarkIngestSubjectKeys
// (a header, the client's address, e-mail addresses anywhere) read from its
// kind of validated message, alone: the core's share of the keys' cost.
func BenchmarkSubjects(b *testing.B) {
	c := compile(b, `{"subjects": [
  {"id": "customer", "select": ["request.headers.x-customer-id"]},
  {"id": "ip", "select": ["ip_address"]},
  {"id": "emails", "detector": "email"}
]}`)
	messages := validatedBenchMessages(b, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if len(c.Subjects(&messages[i%len(messages)])) != 3 {
			b.Fatal("not the three subjects of each message")
		}
	}
}
