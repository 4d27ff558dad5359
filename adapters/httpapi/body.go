package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
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

// readBody reads the request body into buf, at most limit bytes: beyond that it
// answers 413, and 400 when the body cannot be read at all. The body it returns
// is buf's bytes. Callers check the declared length first (declaresAtMost).
func (a *api) readBody(w http.ResponseWriter, r *http.Request, limit int64, buf *bytes.Buffer) ([]byte, bool) {
	// A declared length sizes the buffer once; io.ReadAll would grow it step by
	// step, copying what it holds at every step.
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.fail(w, r, err)
		} else {
			writeError(w, apiError{status: http.StatusBadRequest, message: "the request body could not be read"})
		}
		return nil, false
	}
	return body, true
}

// declaresAtMost answers 413, before anything is read, when the request declares a
// body longer than limit.
func (a *api) declaresAtMost(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength > limit {
		a.fail(w, r, &http.MaxBytesError{Limit: limit})
		return false
	}
	return true
}
