package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/reqlog/reqlog/domain"
)

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-Id"

const maxRequestIDLen = 128

type ctxKey int

const stateKey ctxKey = iota

// requestState is filled in as the request passes the router, for the access log
// that wraps it.
type requestState struct {
	id        string
	route     string
	principal *domain.Principal
}

func stateOf(ctx context.Context) *requestState {
	if s, ok := ctx.Value(stateKey).(*requestState); ok {
		return s
	}
	return &requestState{}
}

func requestID(ctx context.Context) string { return stateOf(ctx).id }

func principalOf(ctx context.Context) domain.Principal {
	if p := stateOf(ctx).principal; p != nil {
		return *p
	}
	return domain.Principal{}
}

// Header values every reply carries, shared: set as they are, not copied per
// request (net/http only reads them; Set replaces, Add copies).
var (
	noStore  = []string{"no-store"}
	noSniff  = []string{"nosniff"}
	jsonType = []string{"application/json; charset=utf-8"}
)

// withRequestID adopts a well-formed incoming X-Request-Id or makes one, echoes it
// and sets the headers every reply carries.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = rand.Text()
		}
		h := w.Header()
		h.Set(RequestIDHeader, id)
		h["Cache-Control"], h["X-Content-Type-Options"] = noStore, noSniff
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey, &requestState{id: id})))
	})
}

// validRequestID accepts ids that are safe to echo and log.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:/+=@", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// recordRoute notes the matched route template (never the path, which may hold
// ids) for the access log.
func recordRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if route := mux.CurrentRoute(r); route != nil {
			if tpl, err := route.GetPathTemplate(); err == nil {
				stateOf(r.Context()).route = tpl
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate resolves the Authorization header to a principal before any body is
// read.
func (a *api) authenticate(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused := a.identify(r); refused != nil {
			a.refuse(w, r, *refused)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// identify notes the principal of r's Authorization header in its state, or
// returns the refusal.
func (a *api) identify(r *http.Request) *refusal {
	if len(r.Header.Values("Authorization")) > 1 {
		// Which one counts is ambiguous (a proxy may pick another than we
		// would): refuse before any key is looked up, limited or logged.
		return &refusal{apiError: unauthorized("send exactly one Authorization header")}
	}
	key, ok := credential(r.Header.Get("Authorization"))
	if !ok {
		return &refusal{apiError: unauthorized("an API key is required: send Authorization: Bearer <key>")}
	}
	principal, err := a.keys.Authenticate(r.Context(), key)
	if err != nil {
		return &refusal{apiError: errorFor(err), err: err}
	}
	stateOf(r.Context()).principal = &principal
	return nil
}

// refusal is an error reply, and the error it comes from when there is one (to
// be logged if it is the service's fault).
type refusal struct {
	apiError
	err error
}

func (a *api) refuse(w http.ResponseWriter, r *http.Request, f refusal) {
	if f.err != nil {
		a.fail(w, r, f.err)
		return
	}
	writeError(w, f.apiError)
}

// credential reads "Bearer <key>" (any case) or a bare key; false when there is no
// key at all.
func credential(header string) (string, bool) {
	v := strings.TrimSpace(header)
	const scheme = "bearer"
	if len(v) >= len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) {
		rest := v[len(scheme):]
		if rest == "" {
			return "", false
		}
		if rest[0] == ' ' || rest[0] == '\t' {
			v = strings.TrimSpace(rest)
		}
	}
	return v, v != ""
}

// statusRecorder remembers what was written, for the access log and for panic
// recovery.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Successful submissions are most of the traffic at full load, and their access
// lines, each encoded and written under a lock, cost a twentieth of the CPU. They
// are sampled as zap's production logger samples: each second the first
// accessLogFirst, then one in accessLogThereafter. /metrics counts every request
// anyway. Every other line, errors included, is always written.
const (
	accessLogFirst      = 100
	accessLogThereafter = 100
)

// sampled is log with its "request" lines sampled (zapcore's sampler counts per
// level and message, so the lines logged through it and nothing else).
func sampled(log *zap.Logger) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, accessLogFirst, accessLogThereafter)
	}))
}

// accessLog logs one line per request, a sample of those of successful
// submissions: never the Authorization header, the key, the query string or a
// body, which may all hold secrets.
func (a *api) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		state := stateOf(r.Context())
		log := a.log
		if rec.status < http.StatusBadRequest && state.route == submitRoute && r.Method == http.MethodPost {
			log = a.successLog
		}
		// Check first: a sampled-out line costs no fields.
		line := log.Check(zap.InfoLevel, "request")
		if line == nil {
			return
		}
		route := state.route
		if route == "" {
			route = "unmatched"
		}
		fields := []zap.Field{
			zap.String("method", knownMethod(r.Method)), // a client-chosen token may be 1 MiB long
			zap.String("route", route),
			zap.Int("status", rec.status),
			zap.Int64("bytes", rec.bytes),
			zap.Duration("duration", time.Since(started)),
			zap.String("request_id", state.id),
		}
		if p := state.principal; p != nil {
			fields = append(fields, zap.String("account", p.Account), zap.String("domain", p.Domain))
		}
		line.Write(fields...)
	})
}

// recoverPanics turns a panic into a logged 500 so one bad request cannot stop the
// server.
func (a *api) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, _ := w.(*statusRecorder)
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { //nolint:errorlint // a sentinel value, compared as net/http does
				panic(p)
			}
			a.log.Error("panic while serving a request",
				zap.String("panic", fmt.Sprint(p)),
				zap.String("request_id", requestID(r.Context())),
				zap.ByteString("stack", debug.Stack()))
			if rec != nil && rec.status != 0 {
				panic(http.ErrAbortHandler) // too late for a reply: cut the connection instead
			}
			writeError(w, apiError{status: http.StatusInternalServerError, message: "internal error"})
		}()
		next.ServeHTTP(w, r)
	})
}
