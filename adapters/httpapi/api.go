// Package httpapi serves reqlog's HTTP API (shared/spec/CONTRACT.md) on gorilla/mux:
// POST and GET /v1/messages, GET /v1/messages/{idOrReference}, /healthz and /readyz.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Options tune the API; the zero value works.
type Options struct {
	// MaxBodyBytes limits a POST body (0: app.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives the access log and errors (nil: no logging).
	Logger *zap.Logger
	// Readiness reports whether the store answers, for /readyz (nil: always ready).
	Readiness func(context.Context) error
}

// readinessTimeout bounds one /readyz probe of the store.
const readinessTimeout = 2 * time.Second

const authChallenge = `Bearer realm="reqlog"`

type api struct {
	ingest    *app.Ingester
	reader    *app.Reader
	keys      ports.KeyStore
	maxBody   int64
	log       *zap.Logger
	readiness func(context.Context) error
}

// New returns the API's handler: routes, authentication, request ids, access log
// and panic recovery.
func New(ingest *app.Ingester, reader *app.Reader, keys ports.KeyStore, opts Options) http.Handler {
	a := &api{ingest: ingest, reader: reader, keys: keys, maxBody: opts.MaxBodyBytes,
		log: opts.Logger, readiness: opts.Readiness}
	if a.maxBody <= 0 {
		a.maxBody = app.DefaultMaxBodyBytes
	}
	if a.log == nil {
		a.log = zap.NewNop()
	}

	// SkipClean: a path such as /v1//messages gets a JSON 404, not a redirect.
	r := mux.NewRouter().SkipClean(true)
	r.Use(recordRoute)
	r.HandleFunc("/healthz", a.healthz).Methods(http.MethodGet)
	r.HandleFunc("/readyz", a.readyz).Methods(http.MethodGet)
	// No subrouter: mux loses method mismatches inside subrouters (404 for 405).
	r.Handle("/v1/messages", a.authenticate(a.submit)).Methods(http.MethodPost)
	r.Handle("/v1/messages", a.authenticate(a.list)).Methods(http.MethodGet)
	r.Handle("/v1/messages/{idOrReference}", a.authenticate(a.get)).Methods(http.MethodGet)
	r.NotFoundHandler = http.HandlerFunc(notFound)
	r.MethodNotAllowedHandler = methodNotAllowed(r)

	return withRequestID(a.accessLog(a.recoverPanics(r)))
}

func (a *api) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgHealthy})
}

func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if a.readiness != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
		defer cancel()
		if err := a.readiness(ctx); err != nil {
			a.log.Warn("not ready", zap.Error(err), zap.String("request_id", requestID(r.Context())))
			writeError(w, apiError{status: http.StatusServiceUnavailable, message: msgNotReady, retryAfter: retryUnavailable})
			return
		}
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgReady})
}

// submit checks, in order: permission, content type, body size, then the body.
func (a *api) submit(w http.ResponseWriter, r *http.Request) {
	principal := principalOf(r.Context())
	if err := a.ingest.Authorize(principal); err != nil {
		a.fail(w, r, err)
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		w.Header().Set("Accept-Post", "application/json")
		writeError(w, apiError{status: http.StatusUnsupportedMediaType,
			message: "the request body must be JSON: send Content-Type: application/json"})
		return
	}
	idempotencyKey, err := idempotencyKeyOf(r.Header)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if r.ContentLength > a.maxBody {
		a.fail(w, r, &http.MaxBytesError{Limit: a.maxBody})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.fail(w, r, err)
		} else {
			writeError(w, apiError{status: http.StatusBadRequest, message: "the request body could not be read"})
		}
		return
	}
	result, err := a.ingest.Submit(r.Context(), principal, body, idempotencyKey)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ids := make([]identityJSON, len(result.Identities))
	for i, id := range result.Identities {
		ids[i] = toIdentityJSON(id)
	}
	var data any = ids
	if !result.Multiple && len(ids) == 1 {
		data = ids[0]
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgIngested, Data: data})
}

// isJSON accepts application/json with any parameters (charset=utf-8).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return mt == "application/json"
}

// idempotencyKeyOf returns the Idempotency-Key header, "" when absent; a header
// that is present must be valid.
func idempotencyKeyOf(h http.Header) (string, error) {
	values, present := h[http.CanonicalHeaderKey("Idempotency-Key")]
	if !present {
		return "", nil
	}
	if len(values) != 1 {
		return "", app.ValidateIdempotencyKey("") // the same error as any invalid key
	}
	return values[0], app.ValidateIdempotencyKey(values[0])
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, apiError{status: http.StatusBadRequest, message: "the query string is malformed"})
		return
	}
	q, err := domain.ParseQuery(values)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.reader.List(r.Context(), principalOf(r.Context()), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := listReply{Status: true, Message: msgListed, Messages: make([]messageJSON, len(page.Messages)),
		Pagination: paginationJSON{Limit: q.Limit, HasMore: page.HasMore}}
	for i, m := range page.Messages {
		body.Messages[i] = toMessageJSON(m)
	}
	if next := page.Next(); next != nil {
		cursor := next.Encode()
		body.Pagination.NextCursor = &cursor
	}
	writeJSON(w, http.StatusOK, body)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	m, err := a.reader.Get(r.Context(), principalOf(r.Context()), mux.Vars(r)["idOrReference"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply{Status: true, Message: msgFetched, Data: toMessageJSON(m)})
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeError(w, apiError{status: http.StatusNotFound, message: msgNoEndpoint})
}

// methodNotAllowed answers 405 with the methods the path does accept, found by
// asking the router itself.
func methodNotAllowed(router *mux.Router) http.Handler {
	var methods []string
	_ = router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		ms, _ := route.GetMethods()
		for _, m := range ms {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range methods {
			probe := r.Clone(r.Context())
			probe.Method = m
			var match mux.RouteMatch
			if router.Match(probe, &match) && match.MatchErr == nil {
				allowed = append(allowed, m)
			}
		}
		slices.Sort(allowed)
		writeError(w, apiError{status: http.StatusMethodNotAllowed,
			message: "method " + r.Method + " is not allowed here",
			header:  http.Header{"Allow": {strings.Join(allowed, ", ")}}})
	})
}

// writeJSON writes body as the reply. Encoding happens first, so a failure cannot
// leave half a reply.
func writeJSON(w http.ResponseWriter, status int, body any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"status":false,"message":"internal error"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
