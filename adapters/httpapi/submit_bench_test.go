package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// discardAppends is a store whose Append keeps nothing, so the benchmark
// measures the service's path, not the store's growing heap.
type discardAppends struct{ ports.MessageStore }

func (discardAppends) Append(context.Context, []domain.Message) error { return nil }

// BenchmarkSubmit serves POST /v1/messages of one 1.8 KB submission, as the
// wrk ingest measure sends (docs/benchmarks.md), through the whole handler (authentication, access
// log as JSON to io.Discard, decoding) into a store that discards it. Run it with
//
//	go test -run '^$' -bench Submit -benchmem ./adapters/httpapi/
func BenchmarkSubmit(b *testing.B) {
	store := discardAppends{memory.New()}
	policy := domain.DefaultPolicy()
	clock := app.SystemClock{}
	keys := keyring.New([]keyring.Entry{{Account: "acme", Domain: domain.DomainLive, Digest: keyring.Digest("bench-key")}})
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel))
	handler := httpapi.New(app.NewIngester(store, policy, clock), app.NewReader(store, policy, clock), keys,
		httpapi.Options{Logger: logger})
	header := `"Accept":"application/json","User-Agent":"shop/1.0 (+https://shop.example)","X-Request-Id":"4f9c2a7e-1b3d-4c5e-9f8a-7b6c5d4e3f2a"`
	body := []byte(`{"name":"shop","created_at":` + strconv.FormatInt(time.Now().Unix(), 10) +
		`,"method":"POST","path":"/v1/orders/42?expand=items","ip_address":"203.0.113.9",` +
		`"request":{"header":{"Authorization":"Bearer secret","Content-Type":"application/json",` + header + `},` +
		`"body":` + strconv.Quote(`{"customer":{"id":"cus_123","email":"a@example.com","password":"hunter2"},"items":[`+strings.Repeat(`{"sku":"SKU-00042","qty":3},`, 12)+`{}]}`) + `},` +
		`"response":{"status_code":201,"header":{"Content-Type":"application/json",` + header + `},` +
		`"body":` + strconv.Quote(`{"id":"ord_42","status":"created","items":[`+strings.Repeat(`{"sku":"SKU-00042","price":12.5},`, 12)+`{}]}`) + `}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench-key")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("POST: %d %s", rec.Code, rec.Body)
		}
	}
}
