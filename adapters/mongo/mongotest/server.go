package mongotest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// Server is an embedded FerretDB (SQLite handler) speaking the MongoDB wire
// protocol on a fixed 127.0.0.1 port, with its state in a directory.
//
// Clients connect to a small TCP proxy owned by the Server, not to FerretDB
// directly. That lets [Server.Stop] behave like a crashed server: all client
// connections are cut at once and the port refuses connections until
// [Server.Start] brings the server back on the same port, with the same
// state directory (data written before Stop is still there).
//
// All methods are safe for concurrent use.
type Server struct {
	dir     string
	pragmas []string // SQLite pragmas FerretDB sets on its connections
	logger  *slog.Logger

	mu     sync.Mutex
	addr   string        // public 127.0.0.1:port, fixed after the first start
	proxy  *proxy        // nil while stopped
	cancel func()        // stops FerretDB
	done   chan struct{} // closed when FerretDB.Run has returned; nil if never started
}

// newFerretDBMu serialises ferretdb.New, which writes package-level
// version information without locking.
var newFerretDBMu sync.Mutex

// StartServer starts an embedded FerretDB that keeps its state in dir
// (which must exist) and listens on a free 127.0.0.1 port.
// Logs go to stderr at the level named by $REQLOG_TEST_FERRETDB_LOG
// (debug, info, warn, error; default error).
// The caller must [Server.Stop] it.
func StartServer(ctx context.Context, dir string) (*Server, error) {
	return StartServerOn(ctx, dir, "127.0.0.1:0")
}

// StartServerOn is StartServer listening on addr (host:port; port 0 picks one).
func StartServerOn(ctx context.Context, dir, addr string) (*Server, error) {
	// FerretDB takes the directory as a file: URI, which must hold an absolute path.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("mongotest: state directory: %w", err)
	}
	s := &Server{dir: dir, addr: addr, logger: ferretLogger()}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// StartServerWithPragmas is StartServer with FerretDB's SQLite connections
// set to pragmas ("secure_delete(1)"), passed in its SQLite URL as _pragma.
func StartServerWithPragmas(ctx context.Context, dir string, pragmas ...string) (*Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("mongotest: state directory: %w", err)
	}
	s := &Server{dir: dir, pragmas: pragmas, addr: "127.0.0.1:0", logger: ferretLogger()}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// NewServer starts a dedicated embedded FerretDB for one test, independent
// of the shared one started by [Main] (and of $REQLOG_TEST_MONGODB_URI), so
// that the test may [Server.Stop] and [Server.Start] it at will.
// Its state lives in t.TempDir(); a t.Cleanup stops it.
// If it cannot start, t is skipped (failed under REQLOG_REQUIRE_BACKENDS=1).
func NewServer(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, err := StartServer(ctx, t.TempDir())
	if err != nil {
		skipOrFail(t, fmt.Sprintf("mongotest: cannot start embedded FerretDB: %v", err))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("mongotest: stopping embedded FerretDB: %v", err)
		}
	})
	return s
}

// URI returns the mongodb:// URI of the server. It does not change across
// Stop/Start.
func (s *Server) URI() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "mongodb://" + s.addr + "/"
}

// Dir returns the directory holding the server's SQLite files.
func (s *Server) Dir() string { return s.dir }

// Running reports whether the server is started.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proxy != nil
}

// Start starts a stopped server again on the same port and state directory.
// Starting a running server is an error. ctx bounds waiting for a previous
// Stop to finish and for the port to become free again.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.proxy != nil {
		return errors.New("mongotest: server already running")
	}
	if s.done != nil { // wait for the previous run to finish closing the SQLite files
		select {
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("mongotest: previous FerretDB still stopping: %w", context.Cause(ctx))
		}
	}

	// Public listener first, so a port that is no longer free is detected
	// before FerretDB opens the state directory.
	ln, err := listenRetry(ctx, s.addr)
	if err != nil {
		return fmt.Errorf("mongotest: listen on %s: %w", s.addr, err)
	}

	newFerretDBMu.Lock()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    s.logger,
		Handler:   "sqlite",
		SQLiteURL: (&url.URL{Scheme: "file", Path: strings.TrimSuffix(s.dir, "/") + "/", RawQuery: url.Values{"_pragma": s.pragmas}.Encode()}).String(),
	})
	newFerretDBMu.Unlock()
	if err != nil {
		ln.Close()
		return fmt.Errorf("mongotest: starting embedded FerretDB: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(runCtx) // always nil; returns once listener, connections and SQLite are closed
	}()

	// MongoDBURI is mongodb://127.0.0.1:port/; it is valid as soon as New returned.
	u, err := url.Parse(f.MongoDBURI())
	if err != nil {
		cancel()
		<-done
		ln.Close()
		return fmt.Errorf("mongotest: FerretDB URI: %w", err)
	}

	s.addr = ln.Addr().String()
	s.proxy = newProxy(ln, u.Host)
	s.cancel = cancel
	s.done = done
	return nil
}

// Stop stops the server abruptly, as a crash would: the port is closed and
// every client connection is cut at once; then FerretDB shuts down and
// closes its SQLite files (committed writes are kept). Stopping a stopped
// server does nothing. If ctx ends before FerretDB has finished, Stop
// returns an error and a later Start waits for the shutdown to complete.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.proxy == nil {
		return nil
	}
	s.proxy.close()
	s.proxy = nil
	s.cancel()

	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mongotest: FerretDB did not stop: %w", context.Cause(ctx))
	}
}

// DropConnections cuts every current client connection without stopping
// the server, like a network blip; new connections are accepted as usual.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proxy != nil {
		s.proxy.dropConns()
	}
}

// listenRetry listens on addr, retrying while the port is still in use
// (a just-closed listener on the same port) until ctx ends.
func listenRetry(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	for {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return ln, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ferretLogger returns FerretDB's logger: stderr, quiet unless asked.
func ferretLogger() *slog.Logger {
	level := slog.LevelError
	if v := os.Getenv(EnvFerretDBLog); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			fmt.Fprintf(os.Stderr, "mongotest: ignoring %s=%q: %v\n", EnvFerretDBLog, v, err)
			level = slog.LevelError
		}
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).
		With("component", "ferretdb")
}

// proxy forwards TCP connections from ln to target and can cut them all.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newProxy(ln net.Listener, target string) *proxy {
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.serve()
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. EMFILE; the listener is still usable
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *proxy) handle(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)

	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)

	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Either side ending ends the whole connection, as on a real server.
		client.Close()
		server.Close()
	}
	go pipe(server, client)
	go pipe(client, server)
	wg.Wait()
}

// track registers c; it closes c and reports false if the proxy is closed.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *proxy) dropConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, like a crashed peer
		}
		c.Close()
	}
}

// close stops accepting, cuts all connections and waits for the
// forwarding goroutines to end.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.dropConns()
	p.wg.Wait()
}
