package httpapi_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/domain"
)

// A read-only mount stores nothing: POST /v1/messages is not a route there,
// reads are.
func TestReadOnlyMountHasNoSubmitRoute(t *testing.T) {
	store := memory.New()
	f := newFixture(t, setup{store: store, readOnly: true})
	rec := f.do(t, request{method: http.MethodPost, target: "/v1/messages", body: submission(start), header: authed()})
	decodeError(t, rec, http.StatusMethodNotAllowed)
	if allow := rec.Header().Get("Allow"); allow != "GET, HEAD" {
		t.Errorf("Allow %q, want GET, HEAD", allow)
	}
	if page, _ := store.List(t.Context(), domain.Query{Scope: domain.Scope{Account: "acme", Domain: "live"}, Limit: 10}, start); len(page.Messages) != 0 {
		t.Errorf("a read-only mount stored %d messages", len(page.Messages))
	}
	if rec := f.do(t, request{method: http.MethodGet, target: "/v1/messages", header: authed()}); rec.Code != http.StatusOK {
		t.Errorf("GET /v1/messages on a read-only mount: %d %s", rec.Code, rec.Body)
	}
}

// NewMetrics works on a registry that has the Go and process collectors
// already, as Prometheus's default registry does: it used to fail with
// "duplicate metrics collector registration attempted".
func TestNewMetricsOnARegistryWithRuntimeCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := httpapi.NewMetrics(reg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	f := newFixture(t, setup{metrics: m})
	families := scrape(t, f.handler)
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "reqlog_ingest_queue_messages"} {
		if families[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// RegisterMetrics puts reqlog's metrics on an embedder's registry, which the
// embedder serves: the API has no /metrics of its own.
func TestRegisterMetricsOnAnEmbeddersRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := httpapi.RegisterMetrics(reg)
	if err != nil {
		t.Fatalf("RegisterMetrics: %v", err)
	}
	f := newFixture(t, setup{metrics: m})
	decodeError(t, f.do(t, request{method: http.MethodGet, target: "/metrics"}), http.StatusNotFound)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, family := range families {
		names[family.GetName()] = true
	}
	if !names["reqlog_ingest_queue_messages"] || names["go_goroutines"] {
		t.Errorf("the registry holds %v: want reqlog's metrics and no runtime collector", names)
	}

	// A second API on the same registry is refused, and leaves nothing there.
	if _, err := httpapi.RegisterMetrics(reg); !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("a second RegisterMetrics on one registry: %v, want AlreadyRegisteredError", err)
	}
	m.Unregister()
	if families, _ := reg.Gather(); len(families) != 0 {
		t.Errorf("after Unregister the registry still holds %d families", len(families))
	}
	if _, err := httpapi.RegisterMetrics(reg); err != nil {
		t.Errorf("RegisterMetrics after Unregister: %v", err)
	}
	// Two on one registry, each with a label of its own (a registry keeps a
	// name's label names for life: these need a registry of their own).
	shared := prometheus.NewRegistry()
	for _, core := range []string{"first", "second"} {
		if _, err := httpapi.RegisterMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"core": core}, shared)); err != nil {
			t.Errorf("RegisterMetrics labelled core=%s: %v", core, err)
		}
	}
}
