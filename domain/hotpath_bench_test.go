package domain_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/domain"
)

// Benchmarks of the ingest hot path, on a submission shaped like cmd/reqlog-bench's
// traffic: 20 headers, a 4 KB JSON response body with fields to redact. They run
// only with -bench, so CI's pass/fail never depends on them:
//
//	go test -run '^$' -bench . -benchmem ./domain/

var benchNow = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

// benchSubmission returns one submission of about 5 KB.
func benchSubmission() map[string]any {
	requestHeader := map[string]any{"Authorization": "Bearer sk_live_0123456789abcdef", "Accept": "application/json",
		"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "X-Request-Id": "9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a",
		"Accept-Encoding": "gzip, br", "X-Forwarded-For": "203.0.113.9, 198.51.100.7", "Cache-Control": "no-cache",
		"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Cookie": "session=abc; theme=dark",
		"X-Client-Version": []any{"4.2.0", "build-977"}}
	responseHeader := map[string]any{"Content-Type": "application/json; charset=utf-8", "Date": "Fri, 14 Mar 2025 12:00:00 GMT",
		"Etag": `"33a64df551425fcc55e4d42a148795d9f25f89d4"`, "Server": "envoy", "Vary": "Accept-Encoding",
		"X-Ratelimit-Limit": 1000, "X-Ratelimit-Remaining": 998, "Set-Cookie": []any{"session=def; HttpOnly", "seen=1"},
		"Strict-Transport-Security": "max-age=63072000", "X-Request-Id": "9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a"}
	items := make([]map[string]any, 30)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", i), "name": "standard warehouse item", "qty": i,
			"price": 12.5 + float64(i), "tags": []string{"blue", "large"}}
	}
	responseBody, _ := json.Marshal(map[string]any{"id": 4711, "status": "shipped", "customer": map[string]any{
		"email": "ada@example.com", "password": "hunter2", "token": "tok_abc"}, "items": items})
	return map[string]any{"name": "shop-frontend", "created_at": benchNow.Add(-time.Minute).Unix(),
		"ip_address": "203.0.113.9", "method": "post", "path": "/v1/orders?page=2",
		"request":  map[string]any{"header": requestHeader, "body": `{"sku":42,"qty":1,"card_number":"4242424242424242"}`},
		"response": map[string]any{"status_code": 201, "header": responseHeader, "body": string(responseBody)}}
}

// benchSmallSubmission returns one submission of about 1.8 KB, the size of the
// realistic one-per-POST load of issue 21: a dozen headers each way, a small
// request body and a 900-byte JSON response body with a field to redact.
func benchSmallSubmission() map[string]any {
	requestHeader := map[string]any{"Authorization": "Bearer sk_live_0123456789abcdef", "Accept": "application/json",
		"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "X-Request-Id": "9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a",
		"Accept-Encoding": "gzip, br", "Content-Type": "application/json", "Cookie": "session=abc; theme=dark"}
	responseHeader := map[string]any{"Content-Type": "application/json; charset=utf-8", "Date": "Fri, 14 Mar 2025 12:00:00 GMT",
		"Server": "envoy", "Vary": "Accept-Encoding", "X-Ratelimit-Remaining": 998, "Set-Cookie": []any{"session=def; HttpOnly"}}
	items := make([]map[string]any, 12)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", i), "name": "standard item", "qty": i, "price": 12.5 + float64(i)}
	}
	responseBody, _ := json.Marshal(map[string]any{"id": 4711, "status": "shipped", "customer": map[string]any{
		"email": "ada@example.com", "token": "tok_abc"}, "items": items})
	return map[string]any{"name": "shop-frontend", "created_at": benchNow.Add(-time.Minute).Unix(),
		"ip_address": "203.0.113.9", "method": "post", "path": "/v1/orders?page=2", "duration_ms": 12.345,
		"request":  map[string]any{"header": requestHeader, "body": `{"sku":42,"qty":1,"password":"hunter2"}`},
		"response": map[string]any{"status_code": 201, "header": responseHeader, "body": string(responseBody)}}
}

func benchBody(b *testing.B, items int) []byte {
	b.Helper()
	return benchBodyOf(b, benchSubmission(), items)
}

func benchBodyOf(b *testing.B, submission map[string]any, items int) []byte {
	b.Helper()
	var v any = submission
	if items > 1 {
		batch := make([]any, items)
		for i := range batch {
			batch[i] = v
		}
		v = batch
	}
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkParseSubmissions: decode (the HTTP API's decoder, as POST
// /v1/messages runs it) and validate, then each normalisation step the policy
// turns on (header masking, body redaction). The differences between the
// sub-benchmarks are the cost of each step.
func BenchmarkParseSubmissions(b *testing.B) {
	plain := domain.DefaultPolicy()
	plain.MaskedHeaders, plain.RedactedFields = nil, nil
	masked := plain
	masked.MaskedHeaders = domain.DefaultMaskedHeaders
	full := domain.DefaultPolicy()
	for _, bc := range []struct {
		name   string
		policy domain.Policy
		items  int
	}{
		{"decode+validate", plain, 1},
		{"decode+validate+mask", masked, 1},
		{"decode+validate+mask+redact", full, 1},
		{"batch of 100", full, 100},
		{"1.8 KB", full, 1},
		{"1.8 KB batch of 100", full, 100},
	} {
		body := benchBody(b, bc.items)
		if strings.HasPrefix(bc.name, "1.8 KB") {
			body = benchBodyOf(b, benchSmallSubmission(), bc.items)
		}
		validator := bc.policy.Validator() // as the ingest use case holds one
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := httpapi.ParseSubmissions(validator, body, benchNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateSubmissions: the domain's part of BenchmarkParseSubmissions,
// from drafts decoded once.
func BenchmarkValidateSubmissions(b *testing.B) {
	validator := domain.DefaultPolicy().Validator()
	for _, items := range []int{1, 100} {
		drafts, err := httpapi.DecodeSubmissions(benchBodyOf(b, benchSmallSubmission(), items), items)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("1.8 KB x %d", items), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := validator.ValidateSubmissions(drafts, benchNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewMessage: normalising a validated submission into the message to store.
func BenchmarkNewMessage(b *testing.B) {
	policy := domain.DefaultPolicy()
	batch, err := httpapi.ParseSubmissions(policy.Validator(), benchBody(b, 1), benchNow)
	if err != nil {
		b.Fatal(err)
	}
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	id := domain.Identity{ID: "0195a3b4-0000-7000-8000-000000000000", Reference: "msg_0123456789ab"}
	b.ReportAllocs()
	for b.Loop() {
		m := policy.NewMessage(scope, batch.Submissions[0], id, benchNow)
		if m.ID == "" {
			b.Fatal("no id")
		}
	}
}

// BenchmarkNewIdentity: the random id and reference of every stored message.
func BenchmarkNewIdentity(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domain.NewIdentity(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessageClone: the deep copy a store makes of each message it keeps or
// returns.
func BenchmarkMessageClone(b *testing.B) {
	policy := domain.DefaultPolicy()
	batch, err := httpapi.ParseSubmissions(policy.Validator(), benchBody(b, 1), benchNow)
	if err != nil {
		b.Fatal(err)
	}
	m := policy.NewMessage(domain.Scope{Account: "acme", Domain: domain.DomainLive}, batch.Submissions[0],
		domain.Identity{ID: "id", Reference: "msg_0123456789ab"}, benchNow)
	b.ReportAllocs()
	for b.Loop() {
		if c := m.Clone(); len(c.Request.Header) == 0 {
			b.Fatal("no headers")
		}
	}
}
