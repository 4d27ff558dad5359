package main

import (
	"net"
	"net/url"
	"sync/atomic"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapifx"
	"github.com/reqlog/reqlog/adapters/keyring/keyringfx"
	"github.com/reqlog/reqlog/adapters/otlp/otlpfx"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/portal/portalfx"
	"github.com/reqlog/reqlog/adapters/proxy/proxyfx"
	"github.com/reqlog/reqlog/adapters/webhook/webhookfx"
	"github.com/reqlog/reqlog/app/appfx"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// options is the whole service graph for cfg: each part's module with its own
// Config, and the store REQLOG_STORE names.
func options(cfg config, logger *zap.Logger) (fx.Option, error) {
	store, err := storeModule(cfg.Store, storeRegistry)
	if err != nil {
		return nil, err
	}
	traces := cfg.OTLP
	traces.MaxMessageBytes = cfg.HTTP.MaxBodyBytes // a span's message is held to what a POST of it may carry
	return fx.Options(
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.ZapLogger{Logger: logger.Named("fx")}
			l.UseLogLevel(zapcore.DebugLevel) // wiring details only when debugging
			return l
		}),
		// Every store's Config: the graph uses the chosen store's only.
		fx.Supply(logger, cfg.App, cfg.HTTP, cfg.Keyring, cfg.Portal, cfg.MongoDB, cfg.Elasticsearch, cfg.Proxy, traces, cfg.SQLite, cfg.Alerts, cfg.Webhook),
		store,
		appfx.Module,
		keyringfx.Module,
		portalfx.Module,
		webhookfx.Module,
		fx.Provide(newPortalLinks, func(l *portalLinks) ports.PortalLinker { return l }),
		httpapifx.Module,
		otlpfx.Module,  // POST /v1/traces
		proxyfx.Module, // runs only when cfg.Proxy is enabled
	), nil
}

// portalLinks gives alert events their portal links: on REQLOG_PUBLIC_URL, or
// else on the address the server listens on, known once it has started
// (listening).
type portalLinks struct {
	site *portal.Portal
	base atomic.Pointer[string]
}

func newPortalLinks(site *portal.Portal) *portalLinks { return &portalLinks{site: site} }

// listening records where the server listens.
func (l *portalLinks) listening(addr net.Addr) {
	base := "http://" + reachable(addr)
	l.base.Store(&base)
}

func (l *portalLinks) PortalLink(principal domain.Principal, view url.Values, expires time.Time) string {
	base := ""
	if b := l.base.Load(); b != nil {
		base = *b
	}
	return l.site.Link(base, principal, view, expires)
}
