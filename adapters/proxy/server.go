package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/ports"
)

// readHeaderTimeout and idleTimeout bound clients that send nothing. There is no
// read or write timeout: uploads, downloads and event streams take as long as
// they take, as they would without the proxy.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
)

// Server is the proxy listening on Config.Addr; Start and Stop fit an fx
// lifecycle.
type Server struct {
	srv    *http.Server
	rec    *capture.Recorder
	log    *zap.Logger
	onFail func(error)

	mu   sync.Mutex
	addr net.Addr
	done chan struct{}
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
	forward := NewReverseProxy(upstream, cfg.TrustedProxies, NewTransport(), log)
	errorLog, _ := zap.NewStdLogAt(log, zap.WarnLevel)
	return &Server{
		srv: &http.Server{
			Addr:              cfg.Addr,
			Handler:           Handler(forward, rec),
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          errorLog,
		},
		rec:    rec,
		log:    log,
		onFail: onFail,
	}, nil
}

// Stats are the recorder's counts.
func (s *Server) Stats() capture.Stats { return s.rec.Stats() }

// Start listens synchronously, so a bad or busy address fails start-up, then
// serves in the background.
func (s *Server) Start(context.Context) error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return fmt.Errorf("listen on REQLOG_PROXY_ADDR %q: %w", s.srv.Addr, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.addr, s.done = ln.Addr(), done
	s.mu.Unlock()
	s.log.Info("proxy listening", zap.String("addr", ln.Addr().String()))
	go func() {
		defer close(done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("proxy stopped", zap.Error(err))
			if s.onFail != nil {
				s.onFail(err)
			}
		}
	}()
	return nil
}

// Stop lets requests in flight finish until ctx ends, then stores what the
// recorder holds, within the same ctx. Upgraded connections (WebSockets) are the
// upstream's and the client's, and are left to end on their own.
func (s *Server) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("proxy: graceful shutdown: %w", err), s.srv.Close())
	}
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	if closeErr := s.rec.Close(ctx); closeErr != nil {
		err = errors.Join(err, fmt.Errorf("proxy: store the recorded exchanges: %w", closeErr))
	}
	return err
}

// Addr is the address the proxy listens on, once started (nil before).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}
