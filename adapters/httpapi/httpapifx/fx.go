// Package httpapifx wires the HTTP API into an fx graph (cmd/reqlogd's): a
// program that embeds reqlog without fx (adapters/embedded) calls httpapi.New
// and does not import it.
package httpapifx

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/ports"
)

// HandlerModule provides the API's http.Handler. It needs app's use cases, an
// httpapi.Config, a *zap.Logger, a ports.KeyStore and the ports.MessageStore (whose
// optional ports.HealthChecker backs /readyz). It also provides the service's
// *prometheus.Registry, which /metrics serves and where other modules register
// their collectors, and the app.Metrics the use cases report to. With a
// *portal.Portal in the graph it serves the customer portal too.
var HandlerModule = fx.Module("httpapi.handler",
	fx.Provide(
		newHandler,
		prometheus.NewRegistry,
		httpapi.NewMetrics,
		func(m *httpapi.Metrics) app.Metrics { return m },
	),
)

// Module is HandlerModule plus an *httpapi.Server on REQLOG_ADDR, started and
// stopped with the application.
var Module = fx.Module("httpapi",
	HandlerModule,
	fx.Provide(newServer),
	fx.Invoke(func(*httpapi.Server) {}),
)

type handlerParams struct {
	fx.In
	Ingester *app.Ingester
	Reader   *app.Reader
	Keys     ports.KeyStore
	Store    ports.MessageStore
	Config   httpapi.Config
	Logger   *zap.Logger
	Metrics  *httpapi.Metrics
	Portal   *portal.Portal `optional:"true"`
	// Made from the Reader when the graph lacks them.
	Statistics *app.Statistics `optional:"true"`
	Exporter   *app.Exporter   `optional:"true"`
	// Traces serves POST /v1/traces when the graph has one (adapters/otlp).
	Traces httpapi.TraceReceiver `optional:"true"`
	// Alerting: nil unless the store keeps rules (appfx.Module).
	Alerts *app.Alerts `optional:"true"`
	// Rule sets (appfx.Module).
	Rules    *app.RuleSets `optional:"true"`
	Rescrubs *app.Rescrubs `optional:"true"`
	// Erasures (appfx.Module).
	Erasures *app.Erasures `optional:"true"`
}

func newHandler(p handlerParams) http.Handler {
	opts := httpapi.Options{MaxBodyBytes: p.Config.MaxBodyBytes, Logger: p.Logger.Named("http"), Metrics: p.Metrics, Portal: p.Portal,
		Statistics: p.Statistics, Exporter: p.Exporter, Traces: p.Traces, Exports: p.Config.Exports, Alerts: p.Alerts, Rules: p.Rules,
		Rescrubs: p.Rescrubs, Erasures: p.Erasures}
	if hc, ok := p.Store.(ports.HealthChecker); ok {
		opts.Readiness = hc.Ping
	}
	if p.Config.RateLimit > 0 {
		opts.RateLimiter = httpapi.NewRateLimiter(p.Config.RateLimit, p.Config.RateBurst, nil)
	}
	return httpapi.New(p.Ingester, p.Reader, p.Keys, opts)
}

func newServer(lc fx.Lifecycle, sd fx.Shutdowner, cfg httpapi.Config, handler http.Handler, log *zap.Logger) *httpapi.Server {
	s := httpapi.NewServer(cfg.Addr, handler, log.Named("http"), func(error) {
		_ = sd.Shutdown(fx.ExitCode(1))
	})
	lc.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
	return s
}
