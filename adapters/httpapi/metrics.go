package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/reqlog/reqlog/app"
)

// Metrics is the service's Prometheus instrumentation: HTTP requests (the API's
// middleware), store calls (app.Metrics), the ingest queue and the room
// reserved in it (app.QueueMetrics, app.ReservationMetrics), alerting's bounds at
// work (app.AlertMetrics), what the accounts' rule sets do (app.RuleMetrics).
// NewMetrics puts them on the service's registry with the Go runtime and
// process collectors, served at /metrics; other modules register their own
// collectors on the same *prometheus.Registry from the fx graph.
// RegisterMetrics puts them on an embedder's registry, which the embedder
// serves.
//
// GET /metrics needs no API key, as Prometheus scrapers expect: it shows counts by
// route template, never an account, key, path or body; the rule ids accounts
// choose label the rules' counts, never what the rules matched.
type Metrics struct {
	// registerer holds the collectors; gatherer, if set, is served at /metrics.
	registerer      prometheus.Registerer
	gatherer        prometheus.Gatherer
	registered      []prometheus.Collector
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	batchSize       prometheus.Histogram
	appendDuration  prometheus.Histogram
	storeErrors     *prometheus.CounterVec
	queueMessages   prometheus.Gauge
	queueBytes      prometheus.Gauge
	reservedMsgs    prometheus.Gauge
	reservedBytes   prometheus.Gauge
	alertDropped    *prometheus.CounterVec
	alertDisabled   *prometheus.CounterVec
	alertDeferred   prometheus.Counter
	alertSkipped    prometheus.Counter
	ruleMatches     *prometheus.CounterVec
	ruleDropped     prometheus.Counter
	ruleWithheld    prometheus.Counter
	ruleLabels      ruleLabels
	rescrubJobs     *prometheus.CounterVec
	rescrubScanned  *prometheus.CounterVec
	rescrubChanged  *prometheus.CounterVec
}

var (
	_ app.Metrics            = (*Metrics)(nil)
	_ app.QueueMetrics       = (*Metrics)(nil)
	_ app.ReservationMetrics = (*Metrics)(nil)
	_ app.AlertMetrics       = (*Metrics)(nil)
	_ app.RuleMetrics        = (*Metrics)(nil)
	_ app.RescrubMetrics     = (*Metrics)(nil)
)

// unmatchedRoute labels requests that matched no route (404, 405).
const unmatchedRoute = "unmatched"

// NewMetrics registers the service's metrics on reg, with the Go runtime and
// process collectors unless reg has them already (Prometheus's default
// registry does), and serves reg at /metrics.
func NewMetrics(reg *prometheus.Registry) (*Metrics, error) {
	m, err := RegisterMetrics(reg)
	if err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			m.Unregister()
			return nil, err
		}
	}
	m.gatherer = reg
	return m, nil
}

// RegisterMetrics registers reqlog's own metrics on reg, and nothing else (an
// embedder's registry has the runtime collectors it wants). The API then
// serves no /metrics: reg's owner serves reg. Two APIs on one registry need
// a label each (prometheus.WrapRegistererWith), or the second is refused.
func RegisterMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		registerer: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_http_requests_total",
			Help: "HTTP requests answered, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reqlog_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method and route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reqlog_ingest_batch_size",
			Help:    "Messages written by one store Append.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}),
		appendDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reqlog_store_append_duration_seconds",
			Help:    "Time of one store Append, failed or not.",
			Buckets: prometheus.DefBuckets,
		}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_store_errors_total",
			Help: "Failed store calls, by operation (append, list, get, purge) and kind (unavailable, overloaded, canceled, other).",
		}, []string{"operation", "kind"}),
		queueMessages: newGauge("reqlog_ingest_queue_messages",
			"Messages held by the group committer, queued or being written (0 with REQLOG_GROUP_COMMIT=false)."),
		queueBytes: newGauge("reqlog_ingest_queue_bytes",
			"Estimated bytes held by the group committer, queued or being written."),
		reservedMsgs: newGauge("reqlog_ingest_reserved_messages",
			"Admitted POSTs whose messages are not queued yet (being read, decoded, or looking up their Idempotency-Key), each holding room for one message in the queue, which its bound counts (0 with REQLOG_GROUP_COMMIT=false)."),
		reservedBytes: newGauge("reqlog_ingest_reserved_bytes",
			"Body bytes reserved in the queue by admitted POSTs whose messages are not queued yet: the declared length (a chunked body: the body limit) until the body is read, then its length; the queue's bound counts them."),
		alertDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_alert_deliveries_dropped_total",
			Help: "Webhook deliveries dropped from an account's full queue (REQLOG_ALERTS_MAX_PENDING_DELIVERIES), by event: test (dropped first) or other; the log names the account.",
		}, []string{"event"}),
		alertDisabled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_alert_endpoints_disabled_total",
			Help: "Webhook endpoints the delivery worker disabled, by reason: gone (a 410) or timeout (no reply for REQLOG_ALERTS_ENDPOINT_DISABLE_AFTER).",
		}, []string{"reason"}),
		alertDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reqlog_alert_rule_evaluations_deferred_total",
			Help: "Rule evaluations left to the next slot because their account used its budget (REQLOG_ALERTS_EVALUATION_BUDGET) or the slot ended; the log names the account.",
		}),
		alertSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reqlog_alert_evaluation_slots_skipped_total",
			Help: "Evaluation slots in which no evaluation started, the pass before having run past them; the log names the account whose rules took the most of it.",
		}),
		ruleMatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_rule_matches_total",
			Help: "Matches of the accounts' rules in the messages written, by rule id (the accounts' ids together; past " + strconv.Itoa(maxRuleLabels) + " distinct ids, \"" + otherRules + "\"), action and mode (enforce, dry_run); an ingest rule matches once per message.",
		}, []string{"rule", "action", "mode"}),
		ruleDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reqlog_rule_dropped_messages_total",
			Help: "Messages an ingest rule kept out of the store (dropped, or sampled out); the submit reply marks them \"stored\": false.",
		}),
		ruleWithheld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reqlog_rule_withheld_bodies_total",
			Help: "Bodies stored as \"[body withheld: …]\" because the rules could not read them within their limits.",
		}),
		rescrubJobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_rescrub_jobs_total",
			Help: "Re-scrub jobs started (created by this replica), done or failed (run to their end by this replica), by store and event.",
		}, []string{"store", "event"}),
		rescrubScanned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_rescrub_messages_scanned_total",
			Help: "Stored messages the re-scrub jobs of this replica read, by store.",
		}, []string{"store"}),
		rescrubChanged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reqlog_rescrub_messages_changed_total",
			Help: "Stored messages the re-scrub jobs of this replica rewrote, their rules having changed them, by store.",
		}, []string{"store"}),
	}
	for _, c := range []prometheus.Collector{m.alertDropped, m.alertDisabled, m.alertDeferred, m.alertSkipped, m.requests, m.requestDuration, m.batchSize, m.appendDuration, m.storeErrors,
		m.queueMessages, m.queueBytes, m.reservedMsgs, m.reservedBytes, m.ruleMatches, m.ruleDropped, m.ruleWithheld,
		m.rescrubJobs, m.rescrubScanned, m.rescrubChanged} {
		if err := reg.Register(c); err != nil {
			m.Unregister()
			return nil, fmt.Errorf("httpapi: registering reqlog's metrics: %w", err)
		}
		m.registered = append(m.registered, c)
	}
	return m, nil
}

// Unregister takes reqlog's metrics off the registry they were put on, so
// that a core closed in a process that goes on can be made again.
func (m *Metrics) Unregister() {
	for _, c := range m.registered {
		m.registerer.Unregister(c)
	}
	m.registered = nil
}

// privateMetrics is for an API built without Options.Metrics.
func privateMetrics() *Metrics {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		panic("httpapi: an empty registry refused the metrics: " + err.Error()) // a programming error
	}
	return m
}

// newGauge is a gauge without labels.
func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// ObserveAppend implements app.Metrics.
func (m *Metrics) ObserveAppend(size int, took time.Duration) {
	m.batchSize.Observe(float64(size))
	m.appendDuration.Observe(took.Seconds())
}

// ObserveStoreError implements app.Metrics.
func (m *Metrics) ObserveStoreError(operation, kind string) {
	m.storeErrors.WithLabelValues(operation, kind).Inc()
}

// ObserveQueue implements app.QueueMetrics.
func (m *Metrics) ObserveQueue(messages int, bytes int64) {
	m.queueMessages.Set(float64(messages))
	m.queueBytes.Set(float64(bytes))
}

// ObserveReserved implements app.ReservationMetrics.
func (m *Metrics) ObserveReserved(messages int, bytes int64) {
	m.reservedMsgs.Set(float64(messages))
	m.reservedBytes.Set(float64(bytes))
}

// ObserveDeliveriesDropped implements app.AlertMetrics.
func (m *Metrics) ObserveDeliveriesDropped(tests, others int) {
	m.alertDropped.WithLabelValues("test").Add(float64(tests))
	m.alertDropped.WithLabelValues("other").Add(float64(others))
}

// ObserveEndpointDisabled implements app.AlertMetrics.
func (m *Metrics) ObserveEndpointDisabled(reason string) {
	m.alertDisabled.WithLabelValues(reason).Inc()
}

// ObserveEvaluationsDeferred implements app.AlertMetrics.
func (m *Metrics) ObserveEvaluationsDeferred(rules int) { m.alertDeferred.Add(float64(rules)) }

// ObserveSlotsSkipped implements app.AlertMetrics.
func (m *Metrics) ObserveSlotsSkipped(slots int) { m.alertSkipped.Add(float64(slots)) }

// maxRuleLabels bounds the rule ids /metrics names: accounts choose them, and
// a scrape must not grow with every id any account ever used.
const (
	maxRuleLabels = 500
	otherRules    = "_other"
)

// ruleLabels are the rule ids named so far.
type ruleLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

// label is id, or otherRules once maxRuleLabels other ids are named.
func (l *ruleLabels) label(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[id] {
		return id
	}
	if len(l.seen) >= maxRuleLabels {
		return otherRules
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[id] = true
	return id
}

// ObserveRuleMatches implements app.RuleMetrics.
func (m *Metrics) ObserveRuleMatches(id, action string, dryRun bool, n int) {
	mode := "enforce"
	if dryRun {
		mode = "dry_run"
	}
	m.ruleMatches.WithLabelValues(m.ruleLabels.label(id), action, mode).Add(float64(n))
}

// ObserveRuleEffects implements app.RuleMetrics.
func (m *Metrics) ObserveRuleEffects(dropped, withheld int) {
	m.ruleDropped.Add(float64(dropped))
	m.ruleWithheld.Add(float64(withheld))
}

// ObserveRescrubJob implements app.RescrubMetrics.
func (m *Metrics) ObserveRescrubJob(store, event string) {
	m.rescrubJobs.WithLabelValues(store, event).Inc()
}

// ObserveRescrubMessages implements app.RescrubMetrics.
func (m *Metrics) ObserveRescrubMessages(store string, scanned, changed int) {
	m.rescrubScanned.WithLabelValues(store).Add(float64(scanned))
	m.rescrubChanged.WithLabelValues(store).Add(float64(changed))
}

// handler serves the registry in the Prometheus text format; nil when the
// registry's owner serves it.
func (m *Metrics) handler() http.Handler {
	if m.gatherer == nil {
		return nil
	}
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{Registry: m.registerer})
}

// measure counts every request and its duration by route template, after the
// router has named the route.
func (a *api) measure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK // net/http's answer to a handler that wrote nothing
		}
		route, method := stateOf(r.Context()).route, r.Method
		if route == "" {
			// Only known methods: a client must not be able to mint label values.
			route, method = unmatchedRoute, knownMethod(method)
		}
		a.metrics.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		a.metrics.requestDuration.WithLabelValues(method, route).Observe(time.Since(began).Seconds())
	})
}

func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "OTHER"
}
