package app

import (
	"context"
	"fmt"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// maxIdempotencyKeyLen bounds the Idempotency-Key header.
const maxIdempotencyKeyLen = 255

// SubmitResult is what a submitter gets back.
type SubmitResult struct {
	// Identities of the stored messages, in input order.
	Identities []domain.Identity
	// Multiple is true when the body was an array or an envelope, so the reply
	// lists identities even for one item.
	Multiple bool
}

// Ingester is the submit use case.
type Ingester struct {
	store  ports.MessageWriter
	policy domain.Policy
	clock  ports.Clock
}

// NewIngester returns the submit use case writing to store under policy.
func NewIngester(store ports.MessageWriter, policy domain.Policy, clock ports.Clock) *Ingester {
	return &Ingester{store: store, policy: policy, clock: clock}
}

// Authorize reports ports.ErrForbidden for principals that may not submit, so callers can
// refuse before reading a body.
func (in *Ingester) Authorize(principal domain.Principal) error {
	if principal.ReadOnly {
		return fmt.Errorf("this credential may only read messages: %w", ports.ErrForbidden)
	}
	return nil
}

// Submit validates body (one submission, an array or an envelope) and stores every
// message, or nothing. With an idempotencyKey the identities are derived from it, so
// a retried request stores nothing twice. Errors: ports.ErrForbidden,
// *domain.ValidationError, domain.ErrTooLarge, ports.ErrUnavailable and
// ports.ErrOverloaded (wrapped); a full queue refuses before the body is decoded.
func (in *Ingester) Submit(ctx context.Context, principal domain.Principal, body []byte, idempotencyKey string) (SubmitResult, error) {
	if err := in.Authorize(principal); err != nil {
		return SubmitResult{}, err
	}
	if idempotencyKey != "" {
		if err := ValidateIdempotencyKey(idempotencyKey); err != nil {
			return SubmitResult{}, err
		}
	}
	if err := shedLoad(in.store); err != nil {
		return SubmitResult{}, err
	}
	now := in.clock.Now()
	batch, err := in.policy.ParseSubmissions(body, now)
	if err != nil {
		return SubmitResult{}, err
	}
	msgs := make([]domain.Message, len(batch.Submissions))
	ids := make([]domain.Identity, len(batch.Submissions))
	for i, s := range batch.Submissions {
		if ids[i], err = identity(principal.Scope, idempotencyKey, i); err != nil {
			return SubmitResult{}, err
		}
		msgs[i] = in.policy.NewMessage(principal.Scope, s, ids[i], now)
	}
	if err := in.store.Append(ctx, msgs); err != nil {
		return SubmitResult{}, fmt.Errorf("store %d messages: %w", len(msgs), err)
	}
	return SubmitResult{Identities: ids, Multiple: batch.Multiple}, nil
}

func identity(scope domain.Scope, idempotencyKey string, index int) (domain.Identity, error) {
	if idempotencyKey != "" {
		return domain.DerivedIdentity(scope, idempotencyKey, index), nil
	}
	return domain.NewIdentity()
}

// ValidateIdempotencyKey accepts 1 to 255 visible ASCII characters; anything else is
// a *domain.ValidationError naming the Idempotency-Key header.
func ValidateIdempotencyKey(key string) error {
	ok := key != "" && len(key) <= maxIdempotencyKeyLen
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] > ' ' && key[i] <= '~'
	}
	if ok {
		return nil
	}
	return &domain.ValidationError{
		Message: "the Idempotency-Key header is invalid",
		Fields: []domain.FieldError{{
			Field:   "Idempotency-Key",
			Message: fmt.Sprintf("must be 1 to %d visible ASCII characters", maxIdempotencyKeyLen),
		}},
	}
}
