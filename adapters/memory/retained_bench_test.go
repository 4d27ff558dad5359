package memory_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkRetained measures what the store costs the process while it takes
// in retainedMessages submissions shaped like reqlog-bench's seed mix, each
// parsed as the service parses a POST and appended in batches of 64: resident
// memory and Go heap per message against the submitted bytes, and the share of
// the CPU the garbage collector took. Run it once per process:
//
//	go test -run '^$' -bench Retained -benchtime 1x -cpu 1 ./adapters/memory/
func BenchmarkRetained(b *testing.B) {
	const retainedMessages, batchSize, distinct = 200_000, 64, 2000
	g := seedGenerator{rng: rand.New(rand.NewPCG(7, 7^0x9e3779b97f4a7c15))}
	now := time.Now().UTC()
	bodies := make([][]byte, distinct)
	for i := range bodies {
		bodies[i] = submissionJSON(b, g.exchange(now)) // one submission per POST, as the seed posts
	}
	policy := domain.DefaultPolicy()
	validator := policy.Validator()
	for b.Loop() {
		store := memory.New()
		runtime.GC()
		before := sample()
		var submitted int64
		batch := make([]domain.Message, 0, batchSize)
		for i := range retainedMessages {
			body := bodies[i%distinct]
			submitted += int64(len(body))
			parsed, err := httpapi.ParseSubmissions(validator, body, now)
			if err != nil {
				b.Fatal(err)
			}
			id, err := domain.NewIdentity()
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, policy.NewMessage(scope, parsed.Submissions[0], id, now))
			if len(batch) == batchSize || i == retainedMessages-1 {
				if err := store.Append(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
				clear(batch)
				batch = batch[:0]
			}
		}
		after := sample()
		per := func(v float64) float64 { return v / retainedMessages }
		b.ReportMetric(per(float64(submitted)), "submitted-B/msg")
		b.ReportMetric(per(after.rss-before.rss), "rss-B/msg")
		b.ReportMetric(per(after.heapInUse-before.heapInUse), "heapinuse-B/msg")
		b.ReportMetric(per(after.goTotal-before.goTotal), "gomapped-B/msg")
		b.ReportMetric(100*(after.gcCPU-before.gcCPU)/(after.busyCPU-before.busyCPU), "gc-%cpu")
		b.ReportMetric(after.gcCycles-before.gcCycles, "gc-cycles")
		runtime.KeepAlive(store)
	}
}

type memorySample struct {
	rss, heapInUse, goTotal, gcCPU, busyCPU, gcCycles float64
}

func sample() memorySample {
	names := []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
		"/memory/classes/total:bytes", "/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/total:cpu-seconds",
		"/cpu/classes/idle:cpu-seconds", "/gc/cycles/total:gc-cycles"}
	ms := make([]metrics.Sample, len(names))
	for i, n := range names {
		ms[i].Name = n
	}
	metrics.Read(ms)
	value := func(i int) float64 {
		if ms[i].Value.Kind() == metrics.KindUint64 {
			return float64(ms[i].Value.Uint64())
		}
		return ms[i].Value.Float64()
	}
	return memorySample{rss: residentBytes(), heapInUse: value(0) + value(1), goTotal: value(2),
		gcCPU: value(3), busyCPU: value(4) - value(5), gcCycles: value(6)}
}

// residentBytes is the process's resident set (Linux), 0 elsewhere.
func residentBytes() float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// seedGenerator makes exchanges the way cmd/reqlog-bench's generator (gen.go)
// makes the seed's: bodies of 200 B to 20 KB, log-uniform, split 3:7 between
// request and response when both have one; 10 to 30 headers; most requests
// with an Authorization header.
type seedGenerator struct{ rng *rand.Rand }

var (
	seedApplications = []string{"shop-frontend", "checkout", "billing-api", "mobile-ios", "mobile-android",
		"partner-gateway", "search", "inventory", "notifications", "admin-console"}
	seedMethods = []string{"GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET",
		"POST", "POST", "POST", "POST", "POST", "PUT", "PATCH", "DELETE", "HEAD"}
	seedCodes = []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201, 201, 204, 304,
		400, 401, 404, 500}
	seedPaths = []string{"/v1/orders/%d", "/v1/orders?page=%d&sort=-created_at", "/v1/users/%d/profile",
		"/v1/products/%d/reviews", "/api/v2/payments/%d/refunds", "/v1/search?q=item%d&limit=20",
		"/v1/carts/%d/items", "/v1/invoices/%d.pdf", "/oauth/token", "/healthz"}
	seedRequestHeaders = []string{"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control", "Connection",
		"Content-Length", "Host", "Origin", "Referer", "User-Agent", "X-Request-Id", "X-Forwarded-For",
		"X-Forwarded-Proto", "X-Correlation-Id", "X-Client-Version", "X-Device-Id", "If-None-Match",
		"Traceparent", "Tracestate", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Dnt", "Priority"}
	seedResponseHeaders = []string{"Cache-Control", "Content-Length", "Date", "Etag", "Expires", "Last-Modified",
		"Server", "Vary", "X-Request-Id", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
		"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "Access-Control-Allow-Origin",
		"Content-Security-Policy", "Referrer-Policy", "Server-Timing", "Via", "Age"}
	seedWords = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor
		incididunt ut labore et dolore magna aliqua order customer invoice payment shipped pending refund
		express standard warehouse berlin lisbon tokyo premium basic annual monthly blue green large small`)
	seedBodyKeys = strings.Fields(`id sku name email status quantity price currency total description note
		city country street zip tags items created_at updated_at discount coupon customer_id plan token password`)
)

func (g seedGenerator) exchange(created time.Time) domain.Exchange {
	r := g.rng
	method, code := seedMethods[r.IntN(len(seedMethods))], seedCodes[r.IntN(len(seedCodes))]
	e := domain.Exchange{Name: seedApplications[r.IntN(len(seedApplications))], CreatedAt: created, Method: method,
		Path:     strings.Replace(seedPaths[r.IntN(len(seedPaths))], "%d", strconv.Itoa(r.IntN(100_000)), 1),
		Response: domain.ExchangeResponse{StatusCode: code}}
	if r.IntN(10) > 0 {
		e.IPAddress = netip.AddrFrom4([4]byte{byte(1 + r.IntN(223)), byte(r.IntN(256)), byte(r.IntN(256)), 1}).String()
	}
	total := int(math.Exp(math.Log(200) + r.Float64()*(math.Log(20_000)-math.Log(200))))
	hasRequestBody := method == "POST" || method == "PUT" || method == "PATCH"
	hasResponseBody := method != "HEAD" && code != 204 && code != 304
	switch {
	case hasRequestBody && hasResponseBody:
		e.Request.Body, e.Response.Body = g.jsonBody(total*3/10), g.jsonBody(total-total*3/10)
	case hasRequestBody:
		e.Request.Body = g.jsonBody(total)
	case hasResponseBody:
		e.Response.Body = g.jsonBody(total)
	}
	headers := 10 + r.IntN(21)
	e.Request.Header = g.headers(seedRequestHeaders, headers/2, e.Request.Body != "")
	e.Response.Header = g.headers(seedResponseHeaders, headers-headers/2, e.Response.Body != "")
	if r.IntN(10) < 7 {
		e.Request.Header["Authorization"] = []string{"Bearer sk_live_" + g.token(24)}
	}
	return e
}

func (g seedGenerator) headers(pool []string, n int, hasBody bool) map[string][]string {
	h := map[string][]string{}
	if hasBody {
		h["Content-Type"] = []string{"application/json; charset=utf-8"}
		n--
	}
	for _, i := range g.rng.Perm(len(pool))[:max(n, 0)] {
		h[pool[i]] = []string{g.token(8 + g.rng.IntN(40))}
	}
	return h
}

func (g seedGenerator) token(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// jsonBody is a JSON object of about size bytes: keys and values from the seed's
// vocabulary.
func (g seedGenerator) jsonBody(size int) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; b.Len() < size-2; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(seedBodyKeys[g.rng.IntN(len(seedBodyKeys))] + "_" + strconv.Itoa(i))
		b.Write(key)
		b.WriteByte(':')
		switch g.rng.IntN(3) {
		case 0:
			b.WriteString(strconv.Itoa(g.rng.IntN(1_000_000)))
		default:
			words := make([]string, 1+g.rng.IntN(12))
			for j := range words {
				words[j] = seedWords[g.rng.IntN(len(seedWords))]
			}
			text, _ := json.Marshal(strings.Join(words, " "))
			b.Write(text)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// submissionJSON is e as a client submits it: the contract's submission object.
func submissionJSON(tb testing.TB, e domain.Exchange) []byte {
	side := func(header map[string][]string, body string) map[string]any {
		m := map[string]any{"body": body}
		if len(header) > 0 {
			m["header"] = header
		}
		return m
	}
	submission := map[string]any{"name": e.Name, "created_at": domain.FormatTime(e.CreatedAt), "method": e.Method,
		"path": e.Path, "request": side(e.Request.Header, e.Request.Body), "response": side(e.Response.Header, e.Response.Body)}
	submission["response"].(map[string]any)["status_code"] = e.Response.StatusCode
	if e.IPAddress != "" {
		submission["ip_address"] = e.IPAddress
	}
	if e.HasDuration {
		submission["duration_ms"] = json.Number(domain.FormatDurationMS(e.Duration))
	}
	body, err := json.Marshal(submission)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}
