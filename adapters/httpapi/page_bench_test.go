package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// BenchmarkListPage serves GET /v1/messages pages of messages shaped like
// cmd/reqlog-bench's traffic (20 headers, a 4 KB JSON body): authentication,
// routing, the memory store's List and the wire encoding of the page, which
// dominates. Run it with
//
//	go test -run '^$' -bench ListPage -benchmem ./adapters/httpapi/
func BenchmarkListPage(b *testing.B) {
	store := memory.New()
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	clock := app.SystemClock{}
	ingest := app.NewIngester(store, policy, clock)
	principal := domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}
	header := make([]string, 10)
	for i := range header {
		header[i] = fmt.Sprintf(`"X-Header-%d":"value-%d-%s"`, i, i, strings.Repeat("v", 30))
	}
	responseBody := strconv.Quote(`{"items":[` + strings.Repeat(`{"sku":"SKU-00042","name":"standard \"warehouse\" item","qty":3,"price":12.5},`, 50) + `{}]}`)
	item := `{"name":"shop","created_at":` + strconv.FormatInt(time.Now().Unix(), 10) + `,"method":"POST","path":"/v1/orders/42",` +
		`"request":{"header":{"Authorization":"Bearer secret",` + strings.Join(header, ",") + `},"body":"{\"sku\":42}"},` +
		`"response":{"status_code":201,"header":{"Content-Type":"application/json",` + strings.Join(header, ",") + `},"body":` + responseBody + `}}`
	batch := "[" + strings.Repeat(item+",", 199) + item + "]"
	if _, err := ingest.Submit(context.Background(), principal, mustDecode(b, batch), ""); err != nil {
		b.Fatal(err)
	}
	keys := keyring.New([]keyring.Entry{{Account: "acme", Domain: domain.DomainLive, Digest: keyring.Digest("bench-key")}})
	handler := httpapi.New(ingest, app.NewReader(store, policy, clock), keys, httpapi.Options{})
	for _, limit := range []int{domain.DefaultLimit, domain.MaxLimit} {
		b.Run("limit="+strconv.Itoa(limit), func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/messages?limit="+strconv.Itoa(limit), nil)
			req.Header.Set("Authorization", "Bearer bench-key")
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET: %d %s", rec.Code, rec.Body)
				}
				b.SetBytes(int64(rec.Body.Len()))
			}
		})
	}
}

// discardWriter is a ResponseWriter that counts and drops the reply, so an
// export's memory is what the service holds, not the recording.
type discardWriter struct {
	header http.Header
	status int
	bytes  int64
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { w.bytes += int64(len(p)); return len(p), nil }
func (w *discardWriter) Flush()                      {}

// BenchmarkExport streams an export of 10,000 messages (10 headers a side, a
// 1 KB JSON body) from the memory store, in both formats, and reports messages
// per second. Run it with
//
//	go test -run '^$' -bench Export -benchmem ./adapters/httpapi/
func BenchmarkExport(b *testing.B) {
	const count = 10_000
	store := memory.New()
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	clock := app.SystemClock{}
	ingest := app.NewIngester(store, policy, clock)
	principal := domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive}}
	header := make([]string, 10)
	for i := range header {
		header[i] = fmt.Sprintf(`"X-Header-%d":"value-%d-%s"`, i, i, strings.Repeat("v", 30))
	}
	responseBody := strconv.Quote(`{"items":[` + strings.Repeat(`{"sku":"SKU-00042","name":"standard item","qty":3,"price":12.5},`, 15) + `{}]}`)
	now := time.Now().Unix()
	for first := 0; first < count; first += 1000 {
		items := make([]string, 1000)
		for i := range items {
			items[i] = `{"name":"shop","created_at":` + strconv.FormatInt(now-int64(first+i), 10) + `,"method":"POST","path":"/v1/orders/42","duration_ms":12.5,` +
				`"request":{"header":{` + strings.Join(header, ",") + `},"body":"{\"sku\":42}"},` +
				`"response":{"status_code":201,"header":{"Content-Type":"application/json",` + strings.Join(header, ",") + `},"body":` + responseBody + `}}`
		}
		if _, err := ingest.Submit(context.Background(), principal, mustDecode(b, "["+strings.Join(items, ",")+"]"), ""); err != nil {
			b.Fatal(err)
		}
	}
	keys := keyring.New([]keyring.Entry{{Account: "acme", Domain: domain.DomainLive, Digest: keyring.Digest("bench-key")}})
	handler := httpapi.New(ingest, app.NewReader(store, policy, clock), keys, httpapi.Options{})
	for _, format := range []string{"ndjson", "csv"} {
		b.Run(format, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/messages/export?format="+format, nil)
			req.Header.Set("Authorization", "Bearer bench-key")
			b.ReportAllocs()
			started := time.Now()
			for b.Loop() {
				w := &discardWriter{header: http.Header{}}
				handler.ServeHTTP(w, req)
				if w.status != http.StatusOK || w.bytes == 0 {
					b.Fatalf("GET: %d, %d bytes", w.status, w.bytes)
				}
				b.SetBytes(w.bytes)
			}
			b.ReportMetric(float64(count*b.N)/time.Since(started).Seconds(), "msgs/s")
		})
	}
}

// mustDecode decodes a POST body as the API does.
func mustDecode(tb testing.TB, body string) domain.Drafts {
	tb.Helper()
	drafts, err := httpapi.DecodeSubmissions([]byte(body), domain.DefaultMaxBatch)
	if err != nil {
		tb.Fatal(err)
	}
	return drafts
}
