// Package proxyfx wires the capturing proxy into an fx graph
// (cmd/reqlogd's); a program without fx calls proxy.NewServer.
package proxyfx

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the *proxy.Server, started and stopped with the application,
// when its proxy.Config is enabled (nil when not). It needs a proxy.Config, a
// *zap.Logger and a
// *prometheus.Registry, where it counts exchanges by outcome; storing locally
// (no ReqlogURL) it needs the *app.Ingester and the ports.KeyStore that resolves
// APIKey to the account and domain to store as.
var Module = fx.Module("proxy",
	fx.Provide(newServer),
	fx.Invoke(func(*proxy.Server) {}),
)

type params struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Config     proxy.Config
	Logger     *zap.Logger
	Registry   *prometheus.Registry
	Ingester   *app.Ingester  `optional:"true"`
	Keys       ports.KeyStore `optional:"true"`
}

func newServer(p params) (*proxy.Server, error) {
	if !p.Config.Enabled() {
		return nil, nil
	}
	submitter, err := submitterFor(p)
	if err != nil {
		return nil, err
	}
	log := p.Logger.Named("proxy")
	s, err := proxy.NewServer(p.Config, submitter, log, func(error) { _ = p.Shutdowner.Shutdown(fx.ExitCode(1)) })
	if err != nil {
		return nil, err
	}
	if err := registerMetrics(p.Registry, s); err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
	return s, nil
}

// submitterFor is a client of the remote reqlogd, or the ingest use case of this
// process as APIKey's principal.
func submitterFor(p params) (ports.ExchangeSubmitter, error) {
	if p.Config.ReqlogURL != "" {
		return httpclient.New(p.Config.ReqlogURL, p.Config.APIKey, httpclient.WithUserAgent("reqlog-proxy/1"), httpclient.WithSource(rules.SourceProxy))
	}
	if p.Config.APIKey == "" {
		return nil, errors.New("proxy: REQLOG_PROXY_API_KEY is required: the key whose account and domain the proxied exchanges are stored as")
	}
	if p.Ingester == nil || p.Keys == nil {
		return nil, errors.New("proxy: storing locally needs the ingest use case and the key store in the graph")
	}
	principal, err := p.Keys.Authenticate(context.Background(), p.Config.APIKey)
	if err != nil {
		return nil, fmt.Errorf("proxy: REQLOG_PROXY_API_KEY: %w", err)
	}
	if principal.ReadOnly {
		return nil, errors.New("proxy: REQLOG_PROXY_API_KEY may only read messages; use an API key")
	}
	return app.LocalSubmitter{Ingester: p.Ingester, Principal: principal, Source: rules.SourceProxy}, nil
}

// registerMetrics counts the proxy's exchanges by outcome, read from the
// recorder when scraped.
func registerMetrics(reg *prometheus.Registry, s *proxy.Server) error {
	const name, help = "reqlog_proxy_exchanges_total", "Exchanges through the proxy, by outcome: captured (recorded, then stored, dropped because the queue was full, or failed), abandoned (the client went away mid-body: not recorded), refused (503: REQLOG_PROXY_MAX_IN_FLIGHT requests already forwarded; not recorded)."
	outcomes := map[string]func() uint64{
		"captured":  func() uint64 { return s.Stats().Captured },
		"stored":    func() uint64 { return s.Stats().Submitted },
		"dropped":   func() uint64 { return s.Stats().Dropped },
		"failed":    func() uint64 { return s.Stats().Failed },
		"abandoned": func() uint64 { return s.Stats().Abandoned },
		"refused":   s.Refused,
	}
	var errs []error
	for outcome, count := range outcomes {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"outcome": outcome}},
			func() float64 { return float64(count()) })
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
