package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/reqlog/reqlog/adapters/httpapi"
)

// reqlogd takes OpenTelemetry exports on /v1/traces with an API key, and its
// API lists what they held.
func TestOTLPExportsAreListed(t *testing.T) {
	var server *httpapi.Server
	startGraph(t, map[string]string{"REQLOG_API_KEYS": "acme:test:rk_otlp_reqlogd_key"}, &server)
	base := "http://" + server.Addr().String()

	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(base+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer rk_otlp_reqlogd_key"}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "billing"))))
	_, span := tp.Tracer("t").Start(context.Background(), "GET /invoices/{id}", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(time.Now().Add(-time.Second)),
		trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("url.path", "/invoices/9"),
			attribute.Int("http.response.status_code", 200), attribute.String("http.route", "/invoices/{id}")))
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	req, _ := http.NewRequest(http.MethodGet, base+"/v1/messages?name=billing", nil)
	req.Header.Set("Authorization", "Bearer rk_otlp_reqlogd_key")
	var listed struct{ Messages []map[string]any }
	if status := call(t, req, &listed); status != http.StatusOK || len(listed.Messages) != 1 {
		t.Fatalf("list: %d, %d messages", status, len(listed.Messages))
	}
	if m := listed.Messages[0]; m["path"] != "/invoices/9" || m["method"] != "GET" || m["duration_ms"] == nil {
		t.Errorf("listed %v", m)
	}
}
