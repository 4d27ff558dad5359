package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// serveWithMetrics wires the whole service on store as cmd/reqlogd does, with
// its own registry; its clock stays at start.
func serveWithMetrics(t *testing.T, store ports.MessageStore) fixture {
	t.Helper()
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	return fixture{handler: httpapitest.Serve(t, store, conformance.APIConfig{
		Keys:   []conformance.APIKey{{Account: "acme", Domain: "live", Key: liveKey}},
		Policy: policy,
		Clock:  conformance.NewFakeClock(start),
	})}
}

// scrape reads GET /metrics of h, without a key.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("GET /metrics is not the Prometheus text format: %v", err)
	}
	return families
}

// series finds the series of name with exactly labels (name, value pairs); nil
// if there is none.
func series(t *testing.T, families map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	family, ok := families[name]
	if !ok {
		return nil
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range family.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return m
		}
	}
	return nil
}

// counter is the value of a counter series; 0 if absent.
func counter(t *testing.T, families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	return series(t, families, name, labels...).GetCounter().GetValue()
}

// histogram is the sample count and sum of a histogram series; 0 if absent.
func histogram(t *testing.T, families map[string]*dto.MetricFamily, name string, labels ...string) (uint64, float64) {
	t.Helper()
	h := series(t, families, name, labels...).GetHistogram()
	return h.GetSampleCount(), h.GetSampleSum()
}

func TestMetricsCountRequestsByRouteAndStatus(t *testing.T) {
	f := serveWithMetrics(t, memory.New())
	before := scrape(t, f.handler)
	if n := counter(t, before, "reqlog_http_requests_total", "method", "POST", "route", "/v1/messages", "code", "200"); n != 0 {
		t.Fatalf("a new service has counted %v submissions", n)
	}

	batch := "[" + submission(start) + "," + submission(start) + "," + submission(start) + "]"
	for _, r := range []request{
		{method: http.MethodPost, target: "/v1/messages", body: batch, header: authed()},
		{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()},
		{method: http.MethodGet, target: "/v1/messages", header: authed()},
		{method: http.MethodGet, target: "/v1/messages/msg_AAAAAAAAAAAA", header: authed()},
		{method: http.MethodGet, target: "/v1/messages"},
		{method: http.MethodGet, target: "/v1/messages/018f2b6c-aaaa-7bbb-8ccc-0123456789ab/extra"},
		{method: "BREW", target: "/v1/messages"},
		{method: "BREW", target: "/teapot"},
	} {
		f.do(t, r)
	}

	after := scrape(t, f.handler)
	for _, want := range []struct {
		method, route, code string
		n                   float64
	}{
		{"POST", "/v1/messages", "200", 2},
		{"GET", "/v1/messages", "200", 1},
		{"GET", "/v1/messages", "401", 1},
		{"GET", "/v1/messages/{idOrReference}", "404", 1},
		{"GET", "unmatched", "404", 1},
		// Methods a client invents are not label values.
		{"OTHER", "unmatched", "405", 1},
		{"OTHER", "unmatched", "404", 1},
	} {
		if got := counter(t, after, "reqlog_http_requests_total", "method", want.method, "route", want.route, "code", want.code); got != want.n {
			t.Errorf("requests %s %s %s = %v, want %v", want.method, want.route, want.code, got, want.n)
		}
	}
	if count, sum := histogram(t, after, "reqlog_http_request_duration_seconds", "method", "POST", "route", "/v1/messages"); count != 2 || sum <= 0 {
		t.Errorf("POST /v1/messages durations: %d samples summing to %v, want 2 taking some time", count, sum)
	}
	// The scrape before was counted too; the one now is still running.
	if got := counter(t, after, "reqlog_http_requests_total", "method", "GET", "route", "/metrics", "code", "200"); got != 1 {
		t.Errorf("scrapes counted %v, want 1", got)
	}
	if count, sum := histogram(t, after, "reqlog_ingest_batch_size"); count != 2 || sum != 4 {
		t.Errorf("batch sizes: %d appends of %v messages in all, want 2 of 4", count, sum)
	}
	if count, _ := histogram(t, after, "reqlog_store_append_duration_seconds"); count != 2 {
		t.Errorf("append durations: %d samples, want 2", count)
	}
	if series(t, after, "go_goroutines") == nil || series(t, after, "process_resident_memory_bytes") == nil {
		t.Error("the Go runtime and process collectors are not registered")
	}
}

func TestMetricsCountStoreErrors(t *testing.T) {
	down := downStore{flakyStore{MessageStore: memory.New(), err: fmt.Errorf("dial: %w", ports.ErrUnavailable)}}
	f := serveWithMetrics(t, down)
	for _, r := range []request{
		{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()},
		{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()},
		{method: http.MethodGet, target: "/v1/messages", header: authed()},
	} {
		decodeError(t, f.do(t, r), http.StatusServiceUnavailable)
	}
	got := scrape(t, f.handler)
	for _, want := range []struct {
		operation string
		n         float64
	}{{app.OpAppend, 2}, {app.OpList, 1}, {app.OpGet, 0}} {
		if n := counter(t, got, "reqlog_store_errors_total", "operation", want.operation, "kind", app.ErrorUnavailable); n != want.n {
			t.Errorf("%s errors = %v, want %v", want.operation, n, want.n)
		}
	}
	if n := counter(t, got, "reqlog_http_requests_total", "method", "POST", "route", "/v1/messages", "code", "503"); n != 2 {
		t.Errorf("503 replies to submissions = %v, want 2", n)
	}
}

// Every service has a registry of its own.
func TestMetricsRegistryPerService(t *testing.T) {
	first, second := serveWithMetrics(t, memory.New()), serveWithMetrics(t, memory.New())
	rec := first.do(t, request{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()})
	if rec.Code != http.StatusOK {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}

	for i, want := range []float64{1, 0} {
		got := scrape(t, []http.Handler{first.handler, second.handler}[i])
		if n := counter(t, got, "reqlog_http_requests_total", "method", "POST", "route", "/v1/messages", "code", "200"); n != want {
			t.Errorf("service %d counted %v submissions, want %v", i, n, want)
		}
		if count, _ := histogram(t, got, "reqlog_ingest_batch_size"); count != uint64(want) {
			t.Errorf("service %d counted %d appends, want %v", i, count, want)
		}
	}
}

// gateStore holds every Append until release is closed.
type gateStore struct {
	ports.MessageStore
	release chan struct{}
}

func (s gateStore) Append(ctx context.Context, msgs []domain.Message) error {
	select {
	case <-s.release:
		return s.MessageStore.Append(ctx, msgs)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The group committer's queue, as the wired service reports it while the store
// is slow.
func TestMetricsShowTheIngestQueue(t *testing.T) {
	store := gateStore{MessageStore: memory.New(), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(store.release) })
	defer release()
	f := serveWithMetrics(t, store)

	body := "[" + submission(start) + "," + submission(start) + "]"
	answered := postInBackground(f.handler, strings.NewReader(body), int64(len(body)))
	awaitGauge(t, f.handler, "reqlog_ingest_queue_messages", 2)
	if got := series(t, scrape(t, f.handler), "reqlog_ingest_queue_bytes").GetGauge().GetValue(); got <= 0 {
		t.Errorf("queued bytes %v while two messages wait", got)
	}
	release()
	awaitOK(t, answered, "the held submission, once the store went on")
	awaitGauge(t, f.handler, "reqlog_ingest_queue_messages", 0)
}

// postInBackground sends an authenticated POST /v1/messages to h; the channel
// gets the status code.
func postInBackground(h http.Handler, body io.Reader, length int64) <-chan int {
	answered := make(chan int, 1)
	go func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", body)
		req.ContentLength = length
		for name, value := range authed() {
			req.Header.Set(name, value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		answered <- rec.Code
	}()
	return answered
}

// awaitOK waits for a postInBackground's answer and wants 200.
func awaitOK(t *testing.T, answered <-chan int, what string) {
	t.Helper()
	select {
	case code := <-answered:
		if code != http.StatusOK {
			t.Errorf("%s got %d, want 200", what, code)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s got no answer", what)
	}
}

// blockingBody gives nothing until released, then its text.
type blockingBody struct {
	release <-chan struct{}
	text    *strings.Reader
}

func (b blockingBody) Read(p []byte) (int, error) {
	<-b.release
	return b.text.Read(p)
}

// A POST admitted and still being read holds room in the queue, which the
// reserved gauges show, and gives it back once its messages are queued.
func TestMetricsShowTheReservedRoom(t *testing.T) {
	f := serveWithMetrics(t, memory.New())
	body := submission(start)
	release := make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	defer let() // the request must not outlive a failed test
	answered := postInBackground(f.handler, blockingBody{release: release, text: strings.NewReader(body)}, int64(len(body)))
	awaitGauge(t, f.handler, "reqlog_ingest_reserved_messages", 1)
	awaitGauge(t, f.handler, "reqlog_ingest_reserved_bytes", float64(len(body)))
	let()
	awaitOK(t, answered, "the slow submission, once its body came")
	awaitGauge(t, f.handler, "reqlog_ingest_reserved_messages", 0)
	awaitGauge(t, f.handler, "reqlog_ingest_reserved_bytes", 0)
}

// awaitGauge polls /metrics until the gauge name reads want.
func awaitGauge(t *testing.T, h http.Handler, name string, want float64) {
	t.Helper()
	awaitMetric(t, h, name, want, func(families map[string]*dto.MetricFamily) float64 {
		return series(t, families, name).GetGauge().GetValue()
	})
}

// awaitCounter polls /metrics until the counter series name with labels reads
// want.
func awaitCounter(t *testing.T, h http.Handler, want float64, name string, labels ...string) {
	t.Helper()
	awaitMetric(t, h, fmt.Sprint(name, labels), want, func(families map[string]*dto.MetricFamily) float64 {
		return counter(t, families, name, labels...)
	})
}

// awaitMetric polls /metrics until read finds want there.
func awaitMetric(t *testing.T, h http.Handler, what string, want float64, read func(map[string]*dto.MetricFamily) float64) {
	t.Helper()
	var got float64
	await(t, func() bool { got = read(scrape(t, h)); return got == want }, func() string {
		return fmt.Sprintf("%s is %v, want %v", what, got, want)
	})
}

// await polls done until it holds, for ten seconds; then it fails with what
// failure says.
func await(t *testing.T, done func() bool, failure func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal(failure())
		}
		<-tick.C
	}
}
