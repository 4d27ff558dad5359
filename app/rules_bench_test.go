package app_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// fiftyRules is a rule set of 50 user rules, a mix of the kinds an account
// writes: header, query and body field selectors, patterns, detectors over
// whole bodies and every value, scoped and not, a few dry runs, ingest and
// retention rules.
const fiftyRules = `{
 "privacy": [
  {"id": "h-partner", "select": ["request.headers.x-partner-id"], "action": {"type": "hash"}},
  {"id": "h-session", "select": ["request.headers.x-session"], "action": {"type": "mask"}},
  {"id": "h-forwarded", "select": ["request.headers.x-forwarded-for"], "match": {"detector": "ipv4"}, "action": {"type": "mask"}},
  {"id": "h-client-secret", "select": ["request.headers.x-client-secret"], "action": {"type": "remove"}},
  {"id": "h-debug", "select": ["response.headers.x-debug"], "action": {"type": "remove"}},
  {"id": "h-user-email", "select": ["headers.x-user-email"], "match": {"detector": "email"}, "action": {"type": "mask"}},
  {"id": "h-bearer", "select": ["headers.*"], "match": {"detector": "bearer_token"}, "action": {"type": "keep_scheme"}},
  {"id": "h-api-token", "select": ["request.headers.x-api-token"], "action": {"type": "remove"}},
  {"id": "h-device", "select": ["request.headers.x-device-id"], "action": {"type": "hash"}},
  {"id": "h-trace-secret", "select": ["headers.x-trace-secret"], "action": {"type": "mask"}},
  {"id": "h-customer", "select": ["request.headers.x-customer-id"], "action": {"type": "partial", "keep_last": 4}},
  {"id": "h-cookie2", "select": ["headers.cookie2"], "action": {"type": "mask"}},
  {"id": "q-token", "select": ["query.token"], "action": {"type": "remove"}},
  {"id": "q-session", "select": ["query.session"], "action": {"type": "remove"}},
  {"id": "q-email", "select": ["query.email"], "match": {"detector": "email"}, "action": {"type": "mask"}},
  {"id": "q-sig", "select": ["query.sig"], "action": {"type": "remove"}},
  {"id": "q-code", "select": ["query.code"], "action": {"type": "remove"}},
  {"id": "q-api-key", "select": ["query.api_key"], "action": {"type": "remove"}},
  {"id": "q-jwt", "select": ["query.*"], "match": {"detector": "jwt"}, "action": {"type": "mask"}},
  {"id": "q-ssn", "select": ["query.*"], "match": {"detector": "us_ssn"}, "action": {"type": "mask"}},
  {"id": "b-customer-email", "select": ["request.body.customer.email"], "action": {"type": "mask"}},
  {"id": "b-phone", "select": ["request.body.customer.phone"], "action": {"type": "partial", "keep_last": 2}},
  {"id": "b-iban", "select": ["body.**.iban"], "match": {"detector": "iban"}, "action": {"type": "replace", "with": "[iban]"}},
  {"id": "b-card", "select": ["body.**.card"], "match": {"detector": "card_number"}, "action": {"type": "partial", "keep_last": 4}},
  {"id": "b-ssn", "select": ["body.**.ssn"], "match": {"detector": "us_ssn"}, "action": {"type": "mask"}},
  {"id": "b-payment", "scope": {"paths": ["/v1/orders/**"]}, "select": ["request.body.payment.*"], "match": {"detector": "card_number"}, "action": {"type": "partial", "keep_last": 4}},
  {"id": "b-response-customer", "select": ["response.body.customer.*"], "match": {"detector": "email"}, "action": {"type": "mask"}},
  {"id": "b-notes", "select": ["body.items.*.note"], "match": {"pattern": "\\b\\d{6,}\\b"}, "action": {"type": "mask"}},
  {"id": "b-answer", "select": ["body.**.secret_answer"], "action": {"type": "remove"}},
  {"id": "b-dob", "select": ["body.**.dob"], "match": {"pattern": "\\d{4}-\\d{2}-\\d{2}"}, "action": {"type": "replace", "with": "[date]"}},
  {"id": "b-address", "select": ["body.**.address"], "action": {"type": "mask"}},
  {"id": "b-national", "scope": {"applications": ["signup"]}, "select": ["request.body.**.national_id"], "action": {"type": "mask"}},
  {"id": "d-email", "select": ["body"], "match": {"detector": "email"}, "action": {"type": "mask"}},
  {"id": "d-aws", "select": ["**"], "match": {"detector": "aws_access_key"}, "action": {"type": "mask"}},
  {"id": "d-github", "select": ["**"], "match": {"detector": "github_token"}, "action": {"type": "mask"}},
  {"id": "d-stripe", "select": ["**"], "match": {"detector": "stripe_key"}, "action": {"type": "mask"}},
  {"id": "d-jwt", "select": ["**"], "match": {"detector": "jwt"}, "action": {"type": "mask"}},
  {"id": "d-pem", "select": ["body"], "match": {"detector": "pem_private_key"}, "action": {"type": "remove"}},
  {"id": "d-ipv6", "select": ["body"], "match": {"detector": "ipv6"}, "action": {"type": "mask"}, "mode": "dry_run"},
  {"id": "d-ipv4", "select": ["**"], "match": {"detector": "ipv4"}, "action": {"type": "mask"}, "mode": "dry_run"},
  {"id": "d-iban", "select": ["body"], "match": {"detector": "iban"}, "action": {"type": "mask"}},
  {"id": "d-card", "select": ["body"], "match": {"detector": "card_number"}, "action": {"type": "partial", "keep_last": 4}},
  {"id": "p-passport", "select": ["body"], "match": {"pattern": "(?i)passport[:= ]+([A-Z0-9]{6,9})", "group": 1}, "action": {"type": "mask"}},
  {"id": "p-order", "scope": {"paths": ["/v1/orders/**"]}, "select": ["body"], "match": {"pattern": "\\bORD-\\d{8}\\b"}, "action": {"type": "hash"}},
  {"id": "p-user-path", "select": ["path"], "match": {"pattern": "/users/(\\d+)", "group": 1}, "action": {"type": "replace", "with": "{id}"}}
 ],
 "ingest": [
  {"id": "probes", "scope": {"paths": ["/healthz", "/readyz"]}, "action": "drop"},
  {"id": "search", "scope": {"routes": ["/v1/search"]}, "status": ["2xx"], "action": "sample", "sample_rate": 10},
  {"id": "slow", "min_duration_ms": 1000, "action": "keep"}
 ],
 "retention": [
  {"id": "payments", "scope": {"applications": ["payments"]}, "keep": "7d", "bodies": "2d"},
  {"id": "audit", "scope": {"applications": ["audit"]}, "keep": "365d"}
 ]
}`

// benchSubmissions are n POST bodies of 10 submissions each, of varied
// size (request and response bodies of 0.3 to 6 KB of JSON, a dozen headers
// each way), holding the values the rules above look for now and then.
func benchSubmissions(n int) [][]byte {
	apps := []string{"shop", "payments", "signup", "search", "audit"}
	out := make([][]byte, n)
	for i := range out {
		items := make([]map[string]any, 10)
		for j := range items {
			k := i*10 + j
			lines := make([]map[string]any, 2+k%38)
			for l := range lines {
				note := "gift wrap"
				if (k+l)%10 == 0 {
					note = "call back on 01512345678" // one line in ten holds what b-notes masks
				}
				lines[l] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", l), "qty": l % 7, "price": 12.5 + float64(l), "note": note}
			}
			req := map[string]any{"customer": map[string]any{"id": fmt.Sprintf("cus_%06d", k), "email": fmt.Sprintf("user%d@example.com", k),
				"phone": "+49 151 2345 6789", "address": "Hauptstraße 1, Berlin"}, "items": lines,
				"payment": map[string]any{"card": "4111 1111 1111 1111", "holder": "Ada Lovelace"}, "reference": fmt.Sprintf("ORD-%08d", k)}
			resp := map[string]any{"id": k, "status": "created", "items": lines, "customer": map[string]any{"email": fmt.Sprintf("user%d@example.com", k)}}
			reqBody, _ := json.Marshal(req)
			respBody, _ := json.Marshal(resp)
			header := map[string]any{"Authorization": "Bearer sk_live_0123456789abcdef", "Accept": "application/json", "User-Agent": "shop/1.0",
				"X-Request-Id": fmt.Sprintf("req-%08d", k), "X-Partner-Id": "partner-42", "X-Forwarded-For": "203.0.113.9",
				"X-Device-Id": "dev-0xdeadbeef", "Content-Type": "application/json", "Accept-Encoding": "gzip, br", "X-Customer-Id": "cus_0042",
				"Cookie": "session=abc", "X-Trace": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
			items[j] = map[string]any{"name": apps[k%len(apps)], "created_at": time.Now().Add(-time.Minute).Unix(), "method": "POST",
				"path": fmt.Sprintf("/v1/orders/%d?page=2&token=t%d&expand=items", k, k), "route": "/v1/orders/{id}",
				"ip_address": "203.0.113.9", "duration_ms": 12.5 + float64(k%200),
				"request":  map[string]any{"header": header, "body": string(reqBody)},
				"response": map[string]any{"status_code": 201 + (k%5)*100/4, "header": header, "body": string(respBody)}}
		}
		out[i], _ = json.Marshal(items)
	}
	return out
}

func rusage(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIngestRules is ingest on the default store (SQLite) without a
// rule set and with the 50 user rules above, built-in masking and redaction
// in both: POST bodies of 10 submissions decoded as the API decodes them,
// validated, put through the account's rules, and written through the group
// committer (reqlogd's defaults) by 16 submitters at once. It reports
// messages per second and the process's CPU per message; docs/benchmarks.md
// holds the ratio, and the command that measures it pinned to one core,
// the two variants alternating.
func BenchmarkIngestRules(b *testing.B) {
	bodies := benchSubmissions(64)
	for _, set := range []string{"none", "builtins+50"} {
		b.Run("rules="+set, func(b *testing.B) {
			store, err := sqlite.New(b.Context(), sqlite.Config{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			policy := domain.DefaultPolicy()
			clock := app.SystemClock{}
			opts := app.DefaultGroupCommitOptions()
			opts.Stamper = &app.StoredTimeStamper{Policy: policy, Clock: clock}
			committer := app.NewGroupCommitter(store, opts)
			defer committer.Close(b.Context())
			cfg := app.DefaultRulesConfig()
			cfg.HashKey = []byte("bench-rules-hash-key-0123")
			ruleSets := memory.NewRuleSetStore()
			book, err := app.NewRuleBook(ruleSets, cfg, nil, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			principal := domain.Principal{Scope: domain.Scope{Account: "bench", Domain: domain.DomainLive}, KeyID: "key_bench"}
			if set != "none" {
				if _, err := rules.Parse([]byte(fiftyRules)); err != nil {
					b.Fatal(err)
				}
				if _, err := app.NewRuleSets(ruleSets, book, nil, policy, clock).Replace(b.Context(), principal, []byte(fiftyRules), "bench", 0); err != nil {
					b.Fatal(err)
				}
			}
			ingest, err := app.NewIngesterWith(app.IngestPorts{Store: store, Queue: committer, Lookup: store, Clock: clock, Rules: book},
				policy, app.DefaultAdmissionOptions())
			if err != nil {
				b.Fatal(err)
			}
			var next, stored atomic.Int64
			cpu := rusage(b)
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := bodies[next.Add(1)%int64(len(bodies))]
					drafts, err := httpapi.DecodeSubmissions(body, domain.DefaultMaxBatch)
					if err != nil {
						b.Error(err)
						return
					}
					res, err := ingest.Submit(b.Context(), principal, drafts, "")
					if err != nil {
						b.Error(err)
						return
					}
					for _, id := range res.Identities {
						if !id.Dropped {
							stored.Add(1)
						}
					}
				}
			})
			b.StopTimer()
			n := float64(b.N * 10)
			b.ReportMetric(n/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64((rusage(b)-cpu).Microseconds())/n, "cpu-µs/msg")
			if int(stored.Load()) != b.N*10 {
				b.Fatalf("stored %d of %d: the rules must drop nothing of this traffic", stored.Load(), b.N*10)
			}
		})
	}
}
