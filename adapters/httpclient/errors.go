package httpclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// FieldError names one field at fault in a rejected request ("[3].method").
type FieldError = domain.FieldError

// APIError is an error reply of the service.
//
// errors.Is matches the sentinel of its status: 401 ports.ErrUnauthenticated,
// 403 ports.ErrForbidden, 404 ports.ErrNotFound, 412 ports.ErrStale (a rule
// set's stale version), 413 domain.ErrTooLarge, 429 ports.ErrOverloaded and
// 503 ports.ErrUnavailable. For a 400, errors.As also finds a *domain.ValidationError
// carrying Message and Fields, as the in-process ingest path returns.
type APIError struct {
	StatusCode int
	// Message is the service's explanation for a person.
	Message string
	// Fields lists the fields at fault, for bad input.
	Fields []FieldError
	// RetryAfter is how long the service asked the client to wait (429, 503).
	RetryAfter time.Duration
	// RequestID is the service's X-Request-Id for this reply, for support.
	RequestID string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "reqlog: %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for i, f := range e.Fields {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + f.Field + " " + f.Message)
	}
	return b.String()
}

// statusSentinels maps reply codes to the errors callers test with errors.Is.
var statusSentinels = map[int]error{
	http.StatusUnauthorized:          ports.ErrUnauthenticated,
	http.StatusForbidden:             ports.ErrForbidden,
	http.StatusNotFound:              ports.ErrNotFound,
	http.StatusPreconditionFailed:    ports.ErrStale,
	http.StatusRequestEntityTooLarge: domain.ErrTooLarge,
	http.StatusTooManyRequests:       ports.ErrOverloaded,
	http.StatusServiceUnavailable:    ports.ErrUnavailable,
}

// Is reports whether target is the sentinel of e's status code.
func (e *APIError) Is(target error) bool {
	sentinel, ok := statusSentinels[e.StatusCode]
	return ok && sentinel == target //nolint:errorlint // comparing sentinels themselves
}

// As gives a 400 as a *domain.ValidationError.
func (e *APIError) As(target any) bool {
	if v, ok := target.(**domain.ValidationError); ok && e.StatusCode == http.StatusBadRequest {
		*v = &domain.ValidationError{Message: e.Message, Fields: append([]FieldError(nil), e.Fields...)}
		return true
	}
	return false
}

// errorReply is the contract's error body; the text may come as "messages".
type errorReply struct {
	replyText
	Errors []FieldError `json:"errors"`
}

// newAPIError reads an error reply. A body that is not the contract's JSON (a
// proxy's HTML page) still gives an error with the status and a short excerpt.
func newAPIError(resp *http.Response, body []byte) *APIError {
	e := &APIError{
		StatusCode: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, time.Now()),
		RequestID:  resp.Header.Get("X-Request-Id"),
	}
	var reply errorReply
	if json.Unmarshal(body, &reply) == nil {
		e.Message, e.Fields = reply.text(), reply.Errors
		return e
	}
	const excerpt = 200
	text := strings.TrimSpace(string(body))
	if len(text) > excerpt {
		text = strings.ToValidUTF8(text[:excerpt], "") + "…"
	}
	e.Message = text
	return e
}

// replyText reads the reply text under "message", or under "messages" as the spec's
// illustrated submit reply has it; in a listing "messages" is the array and is
// ignored here.
type replyText struct {
	Status   *bool           `json:"status"`
	Message  string          `json:"message"`
	Messages json.RawMessage `json:"messages"`
}

func (r replyText) text() string {
	if r.Message != "" {
		return r.Message
	}
	var s string
	if json.Unmarshal(r.Messages, &s) == nil {
		return s
	}
	return ""
}

// check turns a 2xx reply with "status": false into an error.
func (r replyText) check(resp string) error {
	if r.Status != nil && !*r.Status {
		return fmt.Errorf("httpclient: %s: the service answered status false: %s", resp, r.text())
	}
	return nil
}
