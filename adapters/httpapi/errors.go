package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// How long clients are told to wait before retrying a 503 or a 429.
const (
	retryUnavailable = 5 * time.Second
	retryOverloaded  = 1 * time.Second
)

// apiError is an error reply: the status, the text for a person and, for bad
// input, the fields at fault.
type apiError struct {
	status     int
	message    string
	fields     []domain.FieldError
	retryAfter time.Duration
	header     http.Header // extra response headers, e.g. Allow
}

// errorFor maps a use-case error to its reply: bad input by its own type, the
// rest by its ports.ErrorKind. Anything unexpected is a 500; the caller logs it.
func errorFor(err error) apiError {
	var invalid *domain.ValidationError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &invalid):
		return apiError{status: http.StatusBadRequest, message: invalid.Message, fields: invalid.Fields}
	case errors.As(err, &tooBig):
		return apiError{status: http.StatusRequestEntityTooLarge,
			message: fmt.Sprintf("the request body is larger than the limit of %d bytes", tooBig.Limit)}
	case errors.Is(err, domain.ErrTooLarge):
		return apiError{status: http.StatusRequestEntityTooLarge, message: err.Error()}
	case errors.Is(err, portal.ErrSessionExpired):
		return unauthorized("the portal session has expired: open a new portal link")
	case errors.Is(err, portal.ErrSessionInvalid):
		return unauthorized("the portal session token is not valid")
	case errors.Is(err, ports.ErrUnauthenticated):
		return unauthorized("the API key is not valid")
	case errors.Is(err, ports.ErrForbidden):
		return apiError{status: http.StatusForbidden, message: "this API key may not submit messages"}
	case errors.Is(err, ports.ErrNotFound):
		return apiError{status: http.StatusNotFound, message: "message not found"}
	}
	switch ports.KindOf(err) {
	case ports.KindConflict:
		return apiError{status: http.StatusBadRequest,
			message: "this Idempotency-Key was already used for a different request; nothing was stored. " +
				"Retry with the same body, or send new data with a new key",
			fields: []domain.FieldError{{Field: "Idempotency-Key", Message: "was already used for a different request"}}}
	case ports.KindOverloaded:
		return apiError{status: http.StatusTooManyRequests, message: "too many requests; retry later",
			retryAfter: retryOverloaded}
	case ports.KindUnavailable, ports.KindCanceled:
		// Canceled while the client is still there (fail answers a client that
		// left with statusClientClosedRequest): the server gave up its own work,
		// stopping; whoever reads this may retry.
		message := "the store is unavailable; retry later"
		if faults := ports.Faults(err); len(faults) > 0 {
			message = "the store is unavailable: " + strings.Join(faults, "; ") + "; an operator must act (retry later)"
		}
		return apiError{status: http.StatusServiceUnavailable, message: message, retryAfter: retryUnavailable}
	default:
		return apiError{status: http.StatusInternalServerError, message: "internal error"}
	}
}

// unauthorized is a 401 with the challenge RFC 9110 §15.5.2 requires.
func unauthorized(message string) apiError {
	return apiError{status: http.StatusUnauthorized, message: message,
		header: http.Header{"Www-Authenticate": {authChallenge}}}
}

// statusClientClosedRequest is nginx's code for a request whose client went
// away before its reply. No client reads it: it is what the access log and
// reqlog_http_requests_total record, so a client that gave up is never a 5xx.
const statusClientClosedRequest = 499

// clientLeft reports whether err ended the request because its client went
// away: the request's own context was canceled (the connection closed, the
// HTTP/2 stream was reset) and err says so. It then notes the request as
// statusClientClosedRequest and logs it at debug.
func (a *api) clientLeft(w http.ResponseWriter, r *http.Request, err error) bool {
	if ports.KindOf(err) != ports.KindCanceled || !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	a.log.Debug("the client went away before its reply", zap.Error(err), zap.String("request_id", requestID(r.Context())))
	w.WriteHeader(statusClientClosedRequest) // to a closed connection: only the recorders see it
	return true
}

// fail writes err's reply; 5xx errors are logged with the request id. A client
// that went away gets no reply (clientLeft).
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	if a.clientLeft(w, r, err) {
		return
	}
	e := errorFor(err)
	a.logFailure(r, err, e.status)
	writeError(w, e)
}

// logFailure logs err when its reply, status, is the service's fault (5xx).
func (a *api) logFailure(r *http.Request, err error, status int) {
	if status >= http.StatusInternalServerError {
		level := zap.WarnLevel
		if status == http.StatusInternalServerError {
			level = zap.ErrorLevel
		}
		a.log.Log(level, "request failed", zap.Error(err), zap.String("request_id", requestID(r.Context())))
	}
}

func writeError(w http.ResponseWriter, e apiError) {
	for name, values := range e.header {
		w.Header()[name] = values
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.retryAfter/time.Second)))
	}
	body := errorReply{Status: false, Message: e.message}
	for _, f := range e.fields {
		body.Errors = append(body.Errors, fieldErrorJSON{Field: f.Field, Message: f.Message})
	}
	writeJSON(w, e.status, body)
}
