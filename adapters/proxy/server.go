package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/ports"
)

// idleTimeout closes keep-alive connections that send no next request. There is
// no whole-request read timeout nor any write timeout: uploads (at
// Config.BodyReadTimeout's pace), downloads and event streams take as long as
// they take, as they would without the proxy.
const idleTimeout = 120 * time.Second

// Server is the proxy listening on Config.Addr; Start and Stop fit an fx
// lifecycle.
type Server struct {
	*httpapi.Server
	rec  *capture.Recorder
	gate *gate
}

// NewServer returns the proxy of cfg (which must be valid and enabled), recording
// through submitter. onFail, if not nil, hears that serving stopped on its own.
func NewServer(cfg Config, submitter ports.ExchangeSubmitter, log *zap.Logger, onFail func(error)) (*Server, error) {
	upstream, err := parseUpstream(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy: upstream %q %w", cfg.Upstream, err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	opts := cfg.recorderOptions()
	failures := sampled(log)
	opts.OnError = func(err error) {
		if line := failures.Check(zap.WarnLevel, "exchanges not stored"); line != nil {
			line.Write(zap.Error(err))
		}
	}
	rec := capture.New(submitter, opts)
	cfg = cfg.withDefaults()
	transport := NewTransport()
	transport.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout
	forward := NewReverseProxy(upstream, cfg.TrustedProxies, transport, log)
	gate := newGate(cfg.MaxInFlight, cfg.BodyReadTimeout)
	errorLog, _ := zap.NewStdLogAt(log, zap.WarnLevel)
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           gate.handler(Handler(forward, rec)),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          errorLog,
	}
	return &Server{Server: httpapi.ServerFor(srv, "REQLOG_PROXY_ADDR", log, onFail), rec: rec, gate: gate}, nil
}

// Stats are the recorder's counts.
func (s *Server) Stats() capture.Stats { return s.rec.Stats() }

// Refused counts the requests refused with 503 for Config.MaxInFlight.
func (s *Server) Refused() uint64 { return s.gate.refused.Load() }

// Stop lets requests in flight finish until ctx ends, then stores what the
// recorder holds, within the same ctx. Upgraded connections (WebSockets) are the
// upstream's and the client's, and are left to end on their own.
func (s *Server) Stop(ctx context.Context) error {
	err := s.Server.Stop(ctx)
	if closeErr := s.rec.Close(ctx); closeErr != nil {
		err = errors.Join(err, fmt.Errorf("proxy: store the recorded exchanges: %w", closeErr))
	}
	return err
}
