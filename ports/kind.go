package ports

import (
	"context"
	"errors"
)

// ErrorKind is what a caller can do about an error: the one classification of
// errors that the group committer, the store metrics, the HTTP API and the HTTP
// client share, so they cannot disagree (gocloud's gcerrors.Code plays this part).
type ErrorKind uint8

// Kinds of errors, from KindOf.
const (
	// KindNone: no error.
	KindNone ErrorKind = iota
	// KindOther: anything below, a bug or a refusal of these very messages; a
	// retry of the same call fails the same way.
	KindOther
	// KindConflict: ErrConflict, an Idempotency-Key reused for another request.
	KindConflict
	// KindOverloaded: ErrOverloaded, load is being shed (HTTP 429).
	KindOverloaded
	// KindUnavailable: ErrUnavailable or a deadline; the store could not be
	// reached or did not answer in time (HTTP 503).
	KindUnavailable
	// KindCanceled: context.Canceled, the caller went away. It says nothing about
	// the store nor the messages, and no one waits for a retry.
	KindCanceled
)

// KindOf classifies err. A caller that went away is KindCanceled even when the
// error also wraps ErrUnavailable (as the group committer's does): the store did
// nothing wrong.
func KindOf(err error) ErrorKind {
	switch {
	case err == nil:
		return KindNone
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, ErrConflict):
		return KindConflict
	case errors.Is(err, ErrOverloaded):
		return KindOverloaded
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return KindUnavailable
	default:
		return KindOther
	}
}

// Retryable reports whether the same call may succeed later if made again:
// overloaded and unavailable. A conflict or another error would fail again; a
// caller that went away has no one to retry for.
func (k ErrorKind) Retryable() bool { return k == KindOverloaded || k == KindUnavailable }

// Transient reports whether the error says nothing about the data of the call
// (retryable, or the caller went away), so a batch that failed this way need not
// be retried item by item to find the culprit.
func (k ErrorKind) Transient() bool { return k.Retryable() || k == KindCanceled }

// String is the kind's name, as metrics label it.
func (k ErrorKind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindConflict:
		return "conflict"
	case KindOverloaded:
		return "overloaded"
	case KindUnavailable:
		return "unavailable"
	case KindCanceled:
		return "canceled"
	default:
		return "other"
	}
}
