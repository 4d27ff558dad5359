package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Server timeouts and limits: generous for a 5 MiB upload on a slow link, short
// enough that idle or stalled clients cannot hold connections for long.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
)

// Server serves a handler on an address; Start and Stop fit an fx lifecycle.
type Server struct {
	srv     *http.Server
	setting string // the setting that gave the address, for errors
	log     *zap.Logger
	onFail  func(error)

	mu   sync.Mutex
	addr net.Addr
	done chan struct{}
}

// NewServer returns a server for handler on addr (host:port; port 0 picks one).
// onFail, if not nil, is called when serving stops on its own with an error.
func NewServer(addr string, handler http.Handler, log *zap.Logger, onFail func(error)) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	errorLog, _ := zap.NewStdLogAt(log.Named("http"), zap.WarnLevel)
	return ServerFor(&http.Server{
		Addr:              addr,
		Handler:           replyWindow(handler, writeTimeout),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes,
		ErrorLog:          errorLog,
	}, "REQLOG_ADDR", log, onFail)
}

// ServerFor starts and stops srv, configured by the caller (address, handler,
// timeouts), as NewServer's; setting names where its address comes from, for
// errors.
func ServerFor(srv *http.Server, setting string, log *zap.Logger, onFail func(error)) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{srv: srv, setting: setting, log: log, onFail: onFail}
}

// Start listens synchronously, so a bad or busy address fails start-up, then
// serves in the background.
func (s *Server) Start(context.Context) error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s %q: %w", s.setting, s.srv.Addr, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.addr, s.done = ln.Addr(), done
	s.mu.Unlock()
	s.log.Info("listening", zap.String("addr", ln.Addr().String()))
	go func() {
		defer close(done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("server stopped", zap.Error(err))
			if s.onFail != nil {
				s.onFail(err)
			}
		}
	}()
	return nil
}

// Stop lets in-flight requests finish until ctx ends, then closes what is left.
func (s *Server) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("graceful shutdown: %w", err), s.srv.Close())
	}
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	return err
}

// Addr is the address the server listens on, once started (nil before).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// replyWindow gives each reply the whole write timeout from its first byte.
// net/http counts WriteTimeout from the end of the request's headers, so a call
// that computed for longer (a cold GET /v1/stats over a million messages) had
// its connection closed instead of its answer written; the timeout is there to
// bound a slow reader, not the work before the reply.
func replyWindow(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&windowedReply{ResponseWriter: w, timeout: timeout}, r)
	})
}

type windowedReply struct {
	http.ResponseWriter
	timeout time.Duration
	started bool
}

func (w *windowedReply) start() {
	if !w.started {
		w.started = true
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *windowedReply) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *windowedReply) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *windowedReply) Unwrap() http.ResponseWriter { return w.ResponseWriter }
