package httpapi

import (
	"bytes"
	"errors"
	"net/http"
)

// readBody reads the request body, at most limit bytes: beyond that it answers
// 413, and 400 when the body cannot be read at all.
func (a *api) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	if !a.declaresAtMost(w, r, limit) {
		return nil, false
	}
	// A declared length sizes the buffer once; io.ReadAll would grow it step by
	// step, copying what it holds at every step.
	var buf bytes.Buffer
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
