// Package embedded is reqlog inside another Go server: New builds, on a store
// the embedder opened, what reqlogd builds (app.Core: group commit behind the
// breaker, the accounts' rule sets, read limits, the purge job, the read-lag
// check, the statistics warm-up, and alerting when there is an alert store),
// and the Core it returns gives the API and the portal as one http.Handler to
// mount under a base path, the capture middleware for the embedder's own
// routes, and the in-process submitter of the Go client's path. Close flushes
// and closes everything in order.
//
// It is the composition root for embedders, as cmd/reqlogd is for the binary,
// and links no dependency-injection framework (the fx modules live in
// packages of their own, appfx and the adapters' <name>fx).
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Options are what New builds a Core from. Store and Scope are required; every
// other field has a working zero value.
type Options struct {
	// Store keeps the messages (sqlite.New, memory.New, ...). The Core owns it
	// from New on: Close closes it last, if it has a Close method (Close() error
	// or Close(context.Context) error).
	Store ports.MessageStore
	// AlertStore keeps alert rules, states and deliveries (sqlite.NewAlertStore,
	// memory.NewAlertStore, ...): alerting runs when it is set, or when Store is
	// a ports.AlertStore itself, and is off otherwise. Close closes it before
	// Store.
	AlertStore ports.AlertStore
	// RuleSets keeps the accounts' rule sets, which every capture and
	// submission goes through (memory.NewRuleSetStore, ...; nil: the alert
	// store's, when it keeps them as SQLite's, MongoDB's and Elasticsearch's
	// do, else none: only App.Rules.File then rules). App.Rules.HashKey keys
	// the rules that hash.
	RuleSets ports.RuleSetStore
	// Keys authenticates the API's callers (keyring.New; nil: no key is
	// accepted, every call is 401).
	Keys ports.KeyStore
	// Scope is the account and domain that Capture and Submitter store as.
	Scope domain.Scope

	// BasePath is where the embedder mounts Handler, e.g. "/logs" for
	// mux.Handle("/logs/", core.Handler()); "" mounts it at the root. Handler
	// serves under it only, and every link the API and the portal make carries
	// it (portal.CleanBasePath says what a path may hold).
	BasePath string
	// ReadOnly leaves out of Handler the routes that store messages (POST
	// /v1/messages answers 405): messages then arrive only through Capture and
	// Submitter. API keys still read, create portal sessions and manage
	// alerts and rule sets.
	ReadOnly bool
	// Portal serves the customer portal at BasePath + "/portal" (nil: no
	// portal). A nil Secret signs sessions with a random one, so they end with
	// the process; its BasePath is Options.BasePath. Alert events carry portal
	// links only with a PublicURL.
	Portal *portal.Config
	// Metrics receives reqlog's metrics, which its owner serves; Go runtime and
	// process collectors are left to it (nil: no metrics, and no /metrics
	// route either way). Two cores on one registry need a label each:
	// prometheus.WrapRegistererWith(prometheus.Labels{"core": "a"}, reg).
	Metrics prometheus.Registerer
	// Logger receives the core's logs (nil: none).
	Logger *zap.Logger

	// App configures the use cases: visibility, retention, purge interval,
	// masking and redaction, group commit, admission (nil:
	// app.DefaultConfig()).
	App *app.Config
	// API configures Handler: body, rate and export limits (nil:
	// httpapi.DefaultConfig(); Addr is not used).
	API *httpapi.Config
	// Alerts and Webhooks configure alerting (nil: their defaults).
	Alerts   *app.AlertConfig
	Webhooks *webhook.Config
	// Capture configures Capture's recorder: application name, skipped
	// requests, route, body limit, queue (capture.Options). Requests to
	// Handler's own routes are never captured.
	Capture capture.Options
}

// ErrClosed is the error of a Core used after Close, wrapping
// ports.ErrUnavailable.
var ErrClosed = fmt.Errorf("reqlog core is closed: %w", ports.ErrUnavailable)

// Core is reqlog in the embedder's process. Its methods are safe for
// concurrent use.
type Core struct {
	core       *app.Core
	store      ports.MessageStore
	alertStore ports.AlertStore // nil: alerting is off
	ownAlerts  bool             // alertStore is a store of its own, closed before store
	metrics    *httpapi.Metrics // on the embedder's registry; nil: none
	recorder   *capture.Recorder
	submitter  app.LocalSubmitter
	handler    http.Handler
	basePath   string
	log        *zap.Logger

	gate      gate // the API's requests and Submitter's calls in flight
	closeOnce sync.Once
}

// New checks opts and that the store's read lag fits the visibility delay,
// then builds the core and starts its background work. A store that does not
// answer within ctx (a full disk) is logged, not refused: reads may still
// work, Handler's /readyz tells, and the embedder's own routes go on. On error
// nothing runs and the stores are the caller's to close.
func New(ctx context.Context, opts Options) (*Core, error) {
	if opts.Store == nil {
		return nil, errors.New("embedded: Options.Store is required")
	}
	if opts.Scope.Account == "" || !domain.ValidDomain(opts.Scope.Domain) {
		return nil, fmt.Errorf("embedded: Options.Scope must name an account and the domain %s or %s, that Capture and Submitter store as",
			domain.DomainLive, domain.DomainTest)
	}
	basePath, err := portal.CleanBasePath(opts.BasePath)
	if err != nil {
		return nil, fmt.Errorf("embedded: Options.BasePath %q %w", opts.BasePath, err)
	}
	c := &Core{store: opts.Store, alertStore: opts.AlertStore, ownAlerts: opts.AlertStore != nil, basePath: basePath, log: opts.Logger}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if !c.ownAlerts {
		c.alertStore, _ = opts.Store.(ports.AlertStore)
	}
	site, err := c.portal(opts)
	if err != nil {
		return nil, err
	}
	if err := c.build(opts, site); err != nil {
		c.unregisterMetrics()
		return nil, err
	}
	if health, ok := opts.Store.(ports.HealthChecker); ok {
		if err := health.Ping(ctx); err != nil {
			c.log.Warn("the store does not take writes: submissions and captures fail until it does", zap.Error(err))
		}
	}
	c.submitter = app.LocalSubmitter{Ingester: c.core.Ingester, Principal: domain.Principal{Scope: opts.Scope}}
	c.recorder = capture.New(c.submitter, c.captureOptions(opts.Capture))
	c.core.Start()
	return c, nil
}

// portal is the portal of opts, on the base path; nil without one.
func (c *Core) portal(opts Options) (*portal.Portal, error) {
	if opts.Portal == nil {
		return nil, nil
	}
	cfg := *opts.Portal
	cfg.BasePath = c.basePath
	return portal.FromConfig(cfg, app.SystemClock{}, opts.Logger)
}

// build makes the use cases (app.Core) and the API's handler.
func (c *Core) build(opts Options, site *portal.Portal) error {
	cfg := app.DefaultConfig()
	if opts.App != nil {
		cfg = *opts.App
	}
	deps := app.CoreDeps{Store: opts.Store, Log: opts.Logger, RuleSets: opts.RuleSets}
	if deps.RuleSets == nil {
		deps.RuleSets, _ = c.alertStore.(ports.RuleSetStore)
	}
	deps.Erasures, _ = c.alertStore.(ports.ErasureJournal)
	apiMetrics, err := c.registerMetrics(opts.Metrics)
	if err != nil {
		return err
	}
	if c.metrics != nil {
		deps.Metrics = c.metrics
	}
	if c.alertStore != nil {
		deps.Alerting.Store = c.alertStore
		if opts.Alerts != nil {
			deps.Alerting.Config = *opts.Alerts
		}
		hooks := webhook.DefaultConfig()
		if opts.Webhooks != nil {
			hooks = *opts.Webhooks
		}
		if err := hooks.Validate(); err != nil {
			return err
		}
		deps.Alerting.Sender = webhook.New(hooks)
		if site != nil {
			deps.Alerting.Links = site
		}
	}
	if c.core, err = app.NewCore(cfg, deps); err != nil {
		return err
	}
	c.handler = c.apiHandler(opts, site, apiMetrics)
	return nil
}

// registerMetrics puts reqlog's metrics on the embedder's registry, or on one
// nobody reads when there is none; the API serves neither.
func (c *Core) registerMetrics(reg prometheus.Registerer) (*httpapi.Metrics, error) {
	if reg == nil {
		return httpapi.RegisterMetrics(prometheus.NewRegistry())
	}
	m, err := httpapi.RegisterMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("embedded: Options.Metrics: %w (two cores on one registry need a label each: prometheus.WrapRegistererWith)", err)
	}
	c.metrics = m
	return m, nil
}

func (c *Core) unregisterMetrics() {
	if c.metrics != nil {
		c.metrics.Unregister()
	}
}

// apiHandler is the API (and the portal) under the base path, behind the gate.
func (c *Core) apiHandler(opts Options, site *portal.Portal, metrics *httpapi.Metrics) http.Handler {
	cfg := httpapi.DefaultConfig()
	if opts.API != nil {
		cfg = *opts.API
	}
	keys := opts.Keys
	if keys == nil {
		keys = keyring.New(nil)
	}
	api := httpapi.Options{MaxBodyBytes: cfg.MaxBodyBytes, Logger: named(opts.Logger, "http"), Metrics: metrics,
		Statistics: c.core.Statistics, Exporter: c.core.Exporter, Exports: cfg.Exports, Alerts: c.core.Alerts, ReadOnly: opts.ReadOnly,
		Rules: c.core.RuleSets, Rescrubs: c.core.Rescrubs, Erasures: c.core.Erasures}
	if site != nil {
		api.Portal, keys = site, site.KeyStore(keys)
	}
	if health, ok := opts.Store.(ports.HealthChecker); ok {
		api.Readiness = health.Ping
	}
	if cfg.RateLimit > 0 {
		api.RateLimiter = httpapi.NewRateLimiter(cfg.RateLimit, cfg.RateBurst, nil)
	}
	h := httpapi.New(c.core.Ingester, c.core.Reader, keys, api)
	if c.basePath != "" {
		h = http.StripPrefix(c.basePath, h)
	}
	return h
}

func named(log *zap.Logger, name string) *zap.Logger {
	if log == nil {
		return nil
	}
	return log.Named(name)
}

// captureOptions are the embedder's, never capturing Handler's own routes and
// logging failed submissions unless the embedder hears of them itself.
func (c *Core) captureOptions(opts capture.Options) capture.Options {
	skip := opts.Skip
	opts.Skip = func(r *http.Request) bool { return c.ownsPath(r.URL.Path) || skip != nil && skip(r) }
	if opts.OnError == nil {
		log := c.log.Named("capture")
		opts.OnError = func(err error) { log.Warn("captured exchanges not stored", zap.Error(err)) }
	}
	return opts
}

// ownsPath reports whether path is one of Handler's: everything under the base
// path, or at the root the API's and the portal's paths.
func (c *Core) ownsPath(path string) bool {
	if c.basePath != "" {
		return path == c.basePath || strings.HasPrefix(path, c.basePath+"/")
	}
	return strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, portal.PagePath) ||
		path == "/healthz" || path == "/readyz"
}

// Handler is the API, and the portal if Options.Portal is set, to mount at
// Options.BasePath (with a trailing slash on an http.ServeMux:
// mux.Handle("/logs/", core.Handler())). After Close it answers 503.
func (c *Core) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.gate.enter() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":false,"message":"reqlog is shut down"}` + "\n"))
			return
		}
		defer c.gate.leave()
		c.handler.ServeHTTP(w, r)
	})
}

// Capture is net/http middleware that records each exchange of next and
// stores it in the background as Options.Scope (capture.Recorder, with
// Options.Capture): the reply never waits for reqlog, and an exchange the
// queue has no room for is dropped and counted. After Close requests go
// through unrecorded, counted as dropped.
func (c *Core) Capture(next http.Handler) http.Handler { return c.recorder.Middleware(next) }

// CaptureStats counts Capture's exchanges: once Close has returned, every one
// captured was stored, dropped or failed (Captured = Submitted + Dropped +
// Failed).
func (c *Core) CaptureStats() capture.Stats { return c.recorder.Stats() }

// Submitter stores exchanges in this process as Options.Scope, validated and
// normalised exactly as the API does: the in-process twin of the Go client
// (httpclient.Client), for capture.Recorder or any code of the embedder's.
// After Close it fails with ErrClosed.
func (c *Core) Submitter() ports.ExchangeSubmitter { return gatedSubmitter{c: c} }

type gatedSubmitter struct {
	c       *Core
	bodyCut int // app.LocalSubmitter.BodyCut
}

// CuttingBodiesAt lets a capture recorder the embedder makes over
// Submitter have bodies cut after the rules, as Capture's are.
func (s gatedSubmitter) CuttingBodiesAt(limit int) ports.ExchangeSubmitter {
	s.bodyCut = limit
	return s
}

func (s gatedSubmitter) SubmitExchanges(ctx context.Context, exchanges []domain.Exchange) ([]domain.Identity, error) {
	if !s.c.gate.enter() {
		return nil, ErrClosed
	}
	defer s.c.gate.leave()
	local := s.c.submitter
	local.BodyCut = s.bodyCut
	return local.SubmitExchanges(ctx, exchanges)
}

// Close shuts the core down, in order: Handler and Submitter refuse new work
// and the work in flight ends; Capture stops recording and stores what it
// queued; the alert loops stop and the ingest queue is written; the metrics
// leave the embedder's registry; the alert store and the store close. Stop
// the embedder's server first (http.Server.Shutdown), so that its last
// captures are queued. If ctx ends first, what is left is cancelled (a
// capture still queued counts as failed, never silently lost) and Close goes
// on closing. A second Close returns ErrClosed.
func (c *Core) Close(ctx context.Context) error {
	err := ErrClosed
	c.closeOnce.Do(func() { err = c.close(ctx) })
	return err
}

func (c *Core) close(ctx context.Context) error {
	var errs []error
	select {
	case <-c.gate.close():
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("embedded: waiting for the API's requests in flight: %w", ctx.Err()))
	}
	if err := c.recorder.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("embedded: storing the captured exchanges: %w", err))
	}
	errs = append(errs, c.core.Stop(ctx))
	c.unregisterMetrics()
	if c.ownAlerts {
		errs = append(errs, closeStore(ctx, c.alertStore))
	}
	errs = append(errs, closeStore(ctx, c.store))
	return errors.Join(errs...)
}

// closeStore closes a store that can be closed.
func closeStore(ctx context.Context, store any) error {
	switch s := store.(type) {
	case interface{ Close() error }:
		return s.Close()
	case interface{ Close(context.Context) error }:
		return s.Close(ctx)
	}
	return nil
}

// gate lets work in until it is closed, and tells when the work let in has
// ended.
type gate struct {
	mu     sync.Mutex
	closed bool
	active int
	idle   chan struct{} // closed once closed with no work active
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.closed && g.active == 0 {
		close(g.idle)
	}
}

// close lets nothing in from now on; the channel is closed once the work in
// flight has ended.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed, g.idle = true, make(chan struct{})
		if g.active == 0 {
			close(g.idle)
		}
	}
	return g.idle
}
