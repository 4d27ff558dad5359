// Package httpapi serves reqlog's HTTP API (shared/spec/CONTRACT.md) on gorilla/mux:
// POST and GET /v1/messages, GET /v1/messages/{idOrReference}, GET /v1/stats,
// GET /v1/messages/export, /v1/alerts (rules, states, webhook endpoints), /v1/rules
// (the account's rule set, its history, trying one), /healthz, /readyz,
// /metrics (Prometheus) and /v1/openapi.json (the OpenAPI 3.1 document of all of them).
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// Options tune the API; the zero value works.
type Options struct {
	// MaxBodyBytes limits a POST body (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives the access log and errors (nil: no logging).
	Logger *zap.Logger
	// Readiness reports whether the store answers, for /readyz (nil: always ready).
	Readiness func(context.Context) error
	// Metrics counts requests, and serves /metrics when NewMetrics made it (nil:
	// a registry of its own, served).
	Metrics *Metrics
	// RateLimiter limits each principal's /v1 requests after authentication (nil:
	// no limit).
	RateLimiter *RateLimiter
	// Portal issues portal sessions and serves the portal page (nil: those
	// endpoints answer 404). Its tokens authenticate only through a KeyStore that
	// Portal.KeyStore decorated.
	Portal *portal.Portal
	// Statistics and Exporter serve GET /v1/stats and GET /v1/messages/export
	// (nil: made from the reader).
	Statistics *app.Statistics
	Exporter   *app.Exporter
	// Traces, if set, takes OpenTelemetry trace exports on POST /v1/traces.
	Traces TraceReceiver
	// Exports bounds the exports running at once and how slowly they may be
	// read (zero: DefaultExportLimits).
	Exports ExportLimits
	// Alerts serves /v1/alerts (nil: those endpoints answer 404).
	Alerts *app.Alerts
	// ReadOnly leaves out the routes that store messages (POST /v1/messages
	// answers 405, POST /v1/traces 404), for a mount whose messages arrive in
	// process; keys still read, create portal sessions and manage alerts.
	ReadOnly bool
	// Rules serves /v1/rules (nil: those endpoints answer 404).
	Rules *app.RuleSets
	// Rescrubs serves /v1/rules/rescrub (nil: those endpoints answer 404).
	Rescrubs *app.Rescrubs
	// Erasures serves /v1/erasures and /v1/subjects/messages (nil: those
	// endpoints answer 404).
	Erasures *app.Erasures
}

// readinessTimeout bounds one /readyz probe of the store.
const readinessTimeout = 2 * time.Second

const authChallenge = `Bearer realm="reqlog"`

type api struct {
	ingest     *app.Ingester
	reader     *app.Reader
	statistics *app.Statistics
	exporter   *app.Exporter
	keys       ports.KeyStore
	maxBody    int64
	log        *zap.Logger
	successLog *zap.Logger // a.log, sampled: the access lines of successful submissions
	readiness  func(context.Context) error
	metrics    *Metrics
	limiter    *RateLimiter
	portal     *portal.Portal
	// traceReceiver serves POST /v1/traces; nil: no such route.
	traceReceiver TraceReceiver
	exports       *exportSlots
	alerts        *app.Alerts
	readOnly      bool
	rules         *app.RuleSets
	rescrubs      *app.Rescrubs
	erasures      *app.Erasures
}

// New returns the API's handler: routes, authentication, request ids, access log,
// panic recovery and the header size limit.
func New(ingest *app.Ingester, reader *app.Reader, keys ports.KeyStore, opts Options) http.Handler {
	a := &api{ingest: ingest, reader: reader, keys: keys, maxBody: opts.MaxBodyBytes,
		log: opts.Logger, readiness: opts.Readiness, metrics: opts.Metrics, limiter: opts.RateLimiter,
		portal: opts.Portal, statistics: opts.Statistics, exporter: opts.Exporter, traceReceiver: opts.Traces, alerts: opts.Alerts,
		readOnly: opts.ReadOnly, rules: opts.Rules, rescrubs: opts.Rescrubs, erasures: opts.Erasures}
	if a.statistics == nil {
		a.statistics = reader.Statistics()
	}
	if a.exporter == nil {
		a.exporter = reader.Exporter()
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	if opts.Exports == (ExportLimits{}) {
		opts.Exports = DefaultExportLimits()
	}
	a.exports = newExportSlots(opts.Exports)
	if a.log == nil {
		a.log = zap.NewNop()
	}
	a.successLog = sampled(a.log)
	if a.metrics == nil {
		a.metrics = privateMetrics()
	}

	// SkipClean: a path such as /v1//messages gets a JSON 404, not a redirect.
	r := mux.NewRouter().SkipClean(true)
	r.Use(recordRoute)
	a.routes(r)
	r.NotFoundHandler = http.HandlerFunc(notFound)
	r.MethodNotAllowedHandler = methodNotAllowed(r)

	return withRequestID(a.accessLog(a.measure(a.recoverPanics(limitHeaderBytes(r)))))
}

// submitRoute is the route of POST (and GET) /v1/messages.
const submitRoute = "/v1/messages"

// routes registers every endpoint; openapi.json must list exactly these (a test
// walks them).
func (a *api) routes(r *mux.Router) {
	r.HandleFunc("/healthz", a.healthz).Methods(readMethods()...)
	r.HandleFunc("/readyz", a.readyz).Methods(readMethods()...)
	if metrics := a.metrics.handler(); metrics != nil {
		r.Handle("/metrics", metrics).Methods(readMethods()...)
	}
	r.HandleFunc("/v1/openapi.json", serveOpenAPI).Methods(readMethods()...)
	// No subrouter: mux loses method mismatches inside subrouters (404 for 405).
	if !a.readOnly {
		r.Handle(submitRoute, a.authenticate(a.rateLimit(a.submit))).Methods(http.MethodPost)
	}
	r.Handle(submitRoute, a.authenticate(a.rateLimit(a.list))).Methods(readMethods()...)
	// Before {idOrReference}, which would take "export" for an id.
	r.Handle("/v1/messages/export", a.authenticate(a.rateLimit(a.export))).Methods(readMethods()...)
	r.Handle("/v1/messages/{idOrReference}", a.authenticate(a.rateLimit(a.get))).Methods(readMethods()...)
	r.Handle("/v1/stats", a.authenticate(a.rateLimit(a.stats))).Methods(readMethods()...)
	r.Handle("/v1/portal/sessions", a.authenticate(a.rateLimit(a.createPortalSession))).Methods(http.MethodPost)
	r.Handle("/v1/dashboard_access", a.authenticate(a.rateLimit(a.dashboardAccess))).Methods(http.MethodPost)
	if a.traceReceiver != nil && !a.readOnly {
		r.HandleFunc(TracesPath, a.traces).Methods(http.MethodPost)
	}
	r.HandleFunc(portal.PagePath, a.portalPage).Methods(readMethods()...)
	r.HandleFunc(portal.PagePath+"/{asset}", a.portalPage).Methods(readMethods()...)
	a.alertRoutes(r)
	a.rescrubRoutes(r)
	a.rulesRoutes(r)
	a.erasureRoutes(r)
}

// readMethods are the methods of every read route: HEAD wherever GET works (RFC
// 9110 §9.3.2), as load balancers' health checks expect. The handler runs in full
// and net/http drops the body, so status and headers are those of the GET. The
// slice is new at each call: mux upper-cases the slice it is given in place and
// keeps it, so one shared slice was written by each router being built while
// another router read it (a data race between two servers in one process).
func readMethods() []string { return []string{http.MethodGet, http.MethodHead} }

func (a *api) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgHealthy})
}

func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if a.readiness != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
		defer cancel()
		if err := a.readiness(ctx); err != nil {
			if a.clientLeft(w, r, err) {
				return
			}
			a.log.Warn("not ready", zap.Error(err), zap.String("request_id", requestID(r.Context())))
			message := msgNotReady
			if faults := ports.Faults(err); len(faults) > 0 {
				message = msgStoreFaults + strings.Join(faults, "; ")
			}
			writeError(w, apiError{status: http.StatusServiceUnavailable, message: message, retryAfter: retryUnavailable})
			return
		}
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgReady})
}

// SourceHeader says what captured a submission's exchanges, for rules scoped
// to sources: api (the default), proxy (a capturing proxy submitting to a
// remote reqlogd) or otlp.
const SourceHeader = "X-Reqlog-Source"

// BodyCutHeader asks that each body of a submission be held to this many
// bytes once the privacy rules have run on it (domain.CutBody): a capture
// sends more than it keeps, so that a secret straddling its cap is read whole.
const BodyCutHeader = "X-Reqlog-Body-Cut"

// parseBodyCut reads BodyCutHeader's values: none is 0 (keep all); one must be
// 1 to limit bytes; anything else is a *domain.ValidationError naming the
// header.
func parseBodyCut(limit int64, values ...string) (int, error) {
	if len(values) == 0 {
		return 0, nil
	}
	if len(values) == 1 {
		if n, err := strconv.ParseInt(strings.TrimSpace(values[0]), 10, 64); err == nil && n >= 1 && n <= limit {
			return int(n), nil
		}
	}
	return 0, &domain.ValidationError{Message: "the " + BodyCutHeader + " header is invalid",
		Fields: []domain.FieldError{{Field: BodyCutHeader, Message: fmt.Sprintf("must be given at most once: bytes, 1 to %d", limit)}}}
}

// parseSource reads SourceHeader's values: none is api; one must name a
// source; anything else is a *domain.ValidationError naming the header.
func parseSource(values ...string) (rules.Source, error) {
	if len(values) == 0 {
		return rules.SourceAPI, nil
	}
	if len(values) == 1 {
		switch src := rules.Source(strings.ToLower(strings.TrimSpace(values[0]))); src {
		case rules.SourceAPI, rules.SourceProxy, rules.SourceOTLP:
			return src, nil
		}
	}
	return "", &domain.ValidationError{Message: "the " + SourceHeader + " header is invalid",
		Fields: []domain.FieldError{{Field: SourceHeader, Message: "must be given at most once: api, proxy or otlp"}}}
}

// submit is the HTTP end of the one ingest line: it checks what only HTTP knows
// (content type, charset and coding included; the Idempotency-Key and
// X-Reqlog-Source headers; the declared body size), then app.Ingester.Admit decides from the headers
// (permission, load), the body is read, and the Admission decodes it into
// drafts (submissions.go) and validates them (Decode), then writes its messages
// to the store (Store). Everything before the body costs
// no more than its headers, so an overloaded service refuses fast; an admitted
// request holds room for its body in the store's queue, so it is not refused for
// load once its body is read.
func (a *api) submit(w http.ResponseWriter, r *http.Request) {
	if !requireJSON(w, r) {
		return
	}
	key, err := app.ParseIdempotencyKey(r.Header.Values("Idempotency-Key")...)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	source, err := parseSource(r.Header.Values(SourceHeader)...)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	bodyCut, err := parseBodyCut(a.maxBody, r.Header.Values(BodyCutHeader)...)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !a.declaresAtMost(w, r, a.maxBody) {
		return
	}
	bodyBytes := r.ContentLength
	if bodyBytes < 0 {
		bodyBytes = a.maxBody // chunked: room for the largest body it may be
	}
	admitted, err := a.ingest.Admit(principalOf(r.Context()), key, bodyBytes)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer admitted.Release()
	admitted.CapturedBy(source)
	admitted.CutBodiesAt(bodyCut)
	buf, giveBack := pooledBuffer()
	body, err := readBody(w, r, a.maxBody, buf)
	if err != nil {
		giveBack()
		admitted.Release() // not held while the rest of the body is dropped
		a.refuseBody(w, r, a.maxBody, err)
		return
	}
	drafts := decodings.Get().(*decoding)
	err = admitted.Decode(r.Context(), int64(len(body)), func() (domain.Drafts, error) {
		return drafts.decode(body, a.ingest.MaxBatch())
	})
	drafts.release()
	giveBack() // before the store is waited for: the messages hold copies
	if err != nil {
		a.fail(w, r, err)
		return
	}
	result, err := admitted.Store(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeEncoded(w, http.StatusOK, func(dst []byte) []byte { return appendIngestReply(dst, result) })
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	values, ok := queryValues(w, r)
	if !ok {
		return
	}
	q, err := domain.ParseQuery(values)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.reader.List(r.Context(), principalOf(r.Context()), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeEncoded(w, http.StatusOK, func(dst []byte) []byte { return appendListReply(dst, page, q.Limit) })
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	m, err := a.reader.Get(r.Context(), principalOf(r.Context()), mux.Vars(r)["idOrReference"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeEncoded(w, http.StatusOK, func(dst []byte) []byte { return appendFetchedReply(dst, m) })
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeError(w, apiError{status: http.StatusNotFound, message: msgNoEndpoint})
}

// methodNotAllowed answers 405 with the methods the path does accept, found by
// asking the router itself.
func methodNotAllowed(router *mux.Router) http.Handler {
	var methods []string
	_ = router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		ms, _ := route.GetMethods()
		for _, m := range ms {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range methods {
			probe := r.Clone(r.Context())
			probe.Method = m
			var match mux.RouteMatch
			if router.Match(probe, &match) && match.MatchErr == nil {
				allowed = append(allowed, m)
			}
		}
		slices.Sort(allowed)
		writeError(w, apiError{status: http.StatusMethodNotAllowed,
			message: "method " + r.Method + " is not allowed here",
			header:  http.Header{"Allow": {strings.Join(allowed, ", ")}}})
	})
}

// writeJSON writes body as the reply. Encoding happens first, so a failure cannot
// leave half a reply.
func writeJSON(w http.ResponseWriter, status int, body any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"status":false,"message":"internal error"}` + "\n")
	}
	writeBody(w, status, buf.Bytes())
}

// writeBody writes an encoded JSON reply.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = jsonType
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
