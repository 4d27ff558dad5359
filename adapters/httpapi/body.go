package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// submitBuffers holds the buffers POST bodies are read into. Admission.Decode
// keeps nothing of a body once it returns (messages copy what they hold), so the
// buffer serves a later request instead of becoming garbage: a fifth of what
// ingest allocated, and the garbage collector's cycles grew with it.
var submitBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer kept for reuse; rarer, larger bodies get
// their own, so the pool does not pin the body limit per request in flight.
const maxPooledBody = 1 << 20

// pooledBuffer returns an empty buffer from submitBuffers and a function that
// gives it back, to call once nothing refers to its bytes.
func pooledBuffer() (*bytes.Buffer, func()) {
	buf := submitBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	return buf, func() {
		if buf.Cap() <= maxPooledBody {
			submitBuffers.Put(buf)
		}
	}
}

// readBody reads the request body into buf, at most limit bytes. The body it
// returns is buf's bytes. Callers check the declared length first
// (declaresAtMost) and answer an error with refuseBody.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, buf *bytes.Buffer) ([]byte, error) {
	// A declared length sizes the buffer once; io.ReadAll would grow it step by
	// step, copying what it holds at every step.
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// refuseBody answers a body readBody could not read: 413 beyond the limit, no
// reply to a client that hung up mid-body (net/http cancels the request's context
// when its connection fails, and clientLeft counts it as such), 400 otherwise.
func (a *api) refuseBody(w http.ResponseWriter, r *http.Request, limit int64, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		a.refuseTooLarge(w, r, limit)
		return
	}
	if gone := r.Context().Err(); gone != nil && a.clientLeft(w, r, fmt.Errorf("read the request body: %w: %w", err, gone)) {
		return
	}
	writeError(w, apiError{status: http.StatusBadRequest, message: "the request body could not be read"})
}

// declaresAtMost answers 413, before anything is read, when the request declares a
// body longer than limit.
func (a *api) declaresAtMost(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength > limit {
		a.refuseTooLarge(w, r, limit)
		return false
	}
	return true
}

// Bounds of what is read and dropped after a 413.
const (
	// drainSlack: a declared body at most this much longer than the limit is
	// read to its end; a longer one is cut off at once (the client may see a
	// reset), as reading it would cost more than the refusal is worth.
	drainSlack = 8 << 20
)

// drainTimeout bounds the time spent reading it (a variable for tests).
var drainTimeout = 10 * time.Second

// refuseTooLarge answers 413 at once, then reads and drops the rest of a
// declared body, within drainSlack and drainTimeout, before the connection
// closes. A client that writes its whole body before reading (Python's urllib,
// many simple SDKs) then reads the 413: closing a connection with unread bytes
// resets it, and the reset takes the reply with it. net/http itself drops only
// 256 KiB (what it does for a chunked body here too). A client that sent
// "Expect: 100-continue" waits for the reply before sending, and is not drained.
func (a *api) refuseTooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	w.Header().Set("Connection", "close")
	drain := r.ContentLength > 0 && r.ContentLength <= limit+drainSlack &&
		!strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	rc := http.NewResponseController(w)
	if drain {
		// Otherwise net/http would drop (and then refuse to give) the body as
		// soon as the reply starts.
		drain = rc.EnableFullDuplex() == nil
	}
	a.fail(w, r, &http.MaxBytesError{Limit: limit})
	if !drain {
		return
	}
	_ = rc.Flush() // the reply waits in the socket for the client to read it
	_ = rc.SetReadDeadline(time.Now().Add(drainTimeout))
	_, _ = io.CopyN(io.Discard, r.Body, r.ContentLength)
}
