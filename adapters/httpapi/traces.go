package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// TracesPath is the OTLP/HTTP path of trace exports.
const TracesPath = "/v1/traces"

// TraceReceiver takes OpenTelemetry trace exports (POST /v1/traces) from an
// authenticated principal, as adapters/otlp does. Its replies, errors
// included, are in its protocol's format, so the API's own refusals on that
// route (authentication, rate limit) are written by RefuseTraces, after the
// API has set their headers (WWW-Authenticate, Retry-After) on w.
type TraceReceiver interface {
	ServeTraces(w http.ResponseWriter, r *http.Request, principal domain.Principal)
	RefuseTraces(w http.ResponseWriter, r *http.Request, status int, message string)
}

// traces authenticates and rate-limits an export as every /v1 call, then hands
// it to the receiver. The key comes in Authorization, as exporters send it
// (OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<key>).
func (a *api) traces(w http.ResponseWriter, r *http.Request) {
	if refused := a.identify(r); refused != nil {
		if refused.err != nil {
			a.logFailure(r, refused.err, refused.status)
		}
		a.refuseTraces(w, r, refused.apiError)
		return
	}
	if refused := a.overRate(r); refused != nil {
		a.refuseTraces(w, r, *refused)
		return
	}
	a.traceReceiver.ServeTraces(w, r, principalOf(r.Context()))
}

func (a *api) refuseTraces(w http.ResponseWriter, r *http.Request, e apiError) {
	for name, values := range e.header {
		w.Header()[name] = values
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.retryAfter/time.Second)))
	}
	a.traceReceiver.RefuseTraces(w, r, e.status, e.message)
}
