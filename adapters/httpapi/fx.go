package httpapi

import (
	"net/http"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/ports"
)

// HandlerModule provides the API's http.Handler. It needs app's use cases, an
// app.Config, a *zap.Logger, a ports.KeyStore and the ports.MessageStore (whose
// optional ports.HealthChecker backs /readyz).
var HandlerModule = fx.Module("httpapi.handler",
	fx.Provide(newHandler),
)

// Module is HandlerModule plus a *Server on REQLOG_ADDR, started and stopped with
// the application.
var Module = fx.Module("httpapi",
	HandlerModule,
	fx.Provide(newServer),
	fx.Invoke(func(*Server) {}),
)

type handlerParams struct {
	fx.In
	Ingester *app.Ingester
	Reader   *app.Reader
	Keys     ports.KeyStore
	Store    ports.MessageStore
	Config   app.Config
	Logger   *zap.Logger
}

func newHandler(p handlerParams) http.Handler {
	opts := Options{MaxBodyBytes: p.Config.MaxBodyBytes, Logger: p.Logger.Named("http")}
	if hc, ok := p.Store.(ports.HealthChecker); ok {
		opts.Readiness = hc.Ping
	}
	return New(p.Ingester, p.Reader, p.Keys, opts)
}

func newServer(lc fx.Lifecycle, sd fx.Shutdowner, cfg app.Config, handler http.Handler, log *zap.Logger) *Server {
	s := NewServer(cfg.Addr, handler, log.Named("http"), func(error) {
		_ = sd.Shutdown(fx.ExitCode(1))
	})
	lc.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
	return s
}
