package app

import (
	"context"
	"errors"
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
	store     ports.MessageWriter
	lookup    ports.MessageLookup // nil: an Idempotency-Key is not checked against earlier uses
	policy    domain.Policy
	parser    domain.Parser // policy's, built once
	clock     ports.Clock
	admission *admission
}

// NewIngester returns the submit use case writing to store under policy, admitting
// submissions with DefaultAdmissionOptions. When store is also a
// ports.MessageLookup, a request whose Idempotency-Key already stored a different
// request is refused (see CheckReplaysIn).
func NewIngester(store ports.MessageWriter, policy domain.Policy, clock ports.Clock) *Ingester {
	lookup, _ := store.(ports.MessageLookup)
	return &Ingester{store: store, lookup: lookup, policy: policy, parser: policy.Parser(), clock: clock,
		admission: newAdmission(DefaultAdmissionOptions())}
}

// CheckReplaysIn sets where a request with an Idempotency-Key is compared with
// the earlier requests under that key, for a store written through a wrapper
// such as a GroupCommitter: a retry must carry the same submissions, or it gets
// an error wrapping ports.ErrConflict and nothing is stored.
func (in *Ingester) CheckReplaysIn(lookup ports.MessageLookup) *Ingester {
	in.lookup = lookup
	return in
}

// LimitDecoding replaces the admission options; call it before the first submission.
func (in *Ingester) LimitDecoding(o AdmissionOptions) *Ingester {
	in.admission = newAdmission(o)
	return in
}

// Authorize reports ports.ErrForbidden for principals that may not submit.
func (in *Ingester) Authorize(principal domain.Principal) error {
	if principal.ReadOnly {
		return fmt.Errorf("this credential may only read messages: %w", ports.ErrForbidden)
	}
	return nil
}

// Admission is a submission let in by Ingester.Admit: it counts against the
// admission bounds until its body is decoded, and holds room in the store's
// queue until its messages are queued, or until Release.
type Admission struct {
	in          *Ingester
	principal   domain.Principal
	ticket      *ticket      // its place among the admitted submissions
	reservation *Reservation // nil: the store has no bounded queue
}

// reserver is a writer with a bounded queue, such as a GroupCommitter.
type reserver interface {
	Reserve(bodyBytes int64) (*Reservation, error)
}

// Admit decides, before its body is read, whether a submission whose body has at
// most bodyBytes may go ahead: it refuses read-only principals (ports.ErrForbidden);
// wrapping ports.ErrOverloaded, a full store queue or a full waiting room; and,
// wrapping ports.ErrUnavailable, a store found down while another request probes
// it. An admitted submission holds room in the store's queue (GroupCommitter.Reserve),
// so it is not refused for load later. Call Release unless Submit or Store is
// called; deferring it is safe, as a second Release does nothing.
func (in *Ingester) Admit(principal domain.Principal, bodyBytes int64) (*Admission, error) {
	if err := in.Authorize(principal); err != nil {
		return nil, err
	}
	ticket, err := in.admission.admit(bodyBytes)
	if err != nil {
		return nil, err
	}
	admitted := &Admission{in: in, principal: principal, ticket: ticket}
	if r, ok := in.store.(reserver); ok {
		if admitted.reservation, err = r.Reserve(bodyBytes); err != nil {
			ticket.leave()
			if errors.Is(err, ports.ErrOverloaded) {
				in.admission.refused()
			}
			return nil, err
		}
	}
	return admitted, nil
}

// Release counts the submission out and gives its room in the queue back; calling
// it again, or after Submit or Store, does nothing.
func (a *Admission) Release() {
	a.ticket.leave()
	a.reservation.Cancel()
}

// Submit validates body (one submission, an array or an envelope) and stores every
// message, or nothing: Decode, then Store. Errors: *domain.ValidationError,
// domain.ErrTooLarge, ports.ErrConflict (a reused Idempotency-Key),
// ports.ErrUnavailable and ports.ErrOverloaded (wrapped).
func (a *Admission) Submit(ctx context.Context, body []byte, idempotencyKey string) (SubmitResult, error) {
	defer a.Release() // also if decoding panics and the caller recovers
	decoded, err := a.Decode(ctx, body, idempotencyKey)
	if err != nil {
		return SubmitResult{}, err
	}
	return decoded.Store(ctx)
}

// Decoded is an admitted submission whose body was decoded: its messages wait
// for Store.
type Decoded struct {
	admitted       *Admission
	msgs           []domain.Message
	result         SubmitResult
	idempotencyKey string
}

// Decode validates body and turns it into the messages to store. With an
// idempotencyKey the identities are derived from it, so a retried request stores
// nothing twice. It waits for a decoder and gives it back before returning. It
// keeps nothing of body, so the caller may reuse its memory at once, while the
// messages wait for the store. After an error the submission is released.
func (a *Admission) Decode(ctx context.Context, body []byte, idempotencyKey string) (*Decoded, error) {
	a.ticket.bodyRead(int64(len(body)))
	if a.reservation != nil {
		a.reservation.Shrink(int64(len(body)))
	}
	msgs, result, err := a.in.decode(ctx, a.principal, body, idempotencyKey)
	a.ticket.leave()
	if err != nil {
		a.Release()
		return nil, err
	}
	return &Decoded{admitted: a, msgs: msgs, result: result, idempotencyKey: idempotencyKey}, nil
}

// Store stores every message, or nothing, and releases the submission; call it
// once. Errors: ports.ErrConflict (a reused Idempotency-Key), ports.ErrUnavailable
// and ports.ErrOverloaded (wrapped).
func (d *Decoded) Store(ctx context.Context) (SubmitResult, error) {
	a := d.admitted
	defer a.Release()
	in := a.in
	if d.idempotencyKey != "" {
		if a.reservation != nil {
			if err := a.reservation.Probe(); err != nil { // the lookup calls the store
				return SubmitResult{}, err
			}
		}
		if err := in.checkReplay(ctx, a.principal.Scope, d.msgs); err != nil {
			return SubmitResult{}, err
		}
	}
	var err error
	if a.reservation != nil {
		err = a.reservation.Append(ctx, d.msgs)
	} else {
		err = in.store.Append(ctx, d.msgs)
	}
	if err != nil {
		return SubmitResult{}, fmt.Errorf("store %d messages: %w", len(d.msgs), err)
	}
	return d.result, nil
}

// Submit is Admit followed by Admission.Submit, for callers that hold the body
// already.
func (in *Ingester) Submit(ctx context.Context, principal domain.Principal, body []byte, idempotencyKey string) (SubmitResult, error) {
	admitted, err := in.Admit(principal, int64(len(body)))
	if err != nil {
		return SubmitResult{}, err
	}
	return admitted.Submit(ctx, body, idempotencyKey)
}

// checkReplay refuses msgs, derived from an Idempotency-Key, when one of their
// ids is stored with another submission: the key was used before for a different
// request, and storing nothing while answering 200 would drop this one silently.
// The same submissions are a retry; Append then stores what is missing, if any.
func (in *Ingester) checkReplay(ctx context.Context, scope domain.Scope, msgs []domain.Message) error {
	if in.lookup == nil {
		return nil
	}
	index := make(map[string]int, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		index[m.ID], ids[i] = i, m.ID
	}
	stored, err := in.lookup.Lookup(ctx, scope, ids)
	if err != nil {
		return fmt.Errorf("look up earlier requests with this Idempotency-Key: %w", err)
	}
	for _, earlier := range stored {
		if i, ok := index[earlier.ID]; ok && !domain.SameSubmission(earlier, msgs[i]) {
			return fmt.Errorf("item %d differs from the request first sent with this Idempotency-Key: %w", i, ports.ErrConflict)
		}
	}
	return nil
}

// decode turns body into the messages to store and the reply, on a decoder.
func (in *Ingester) decode(ctx context.Context, principal domain.Principal, body []byte, idempotencyKey string) ([]domain.Message, SubmitResult, error) {
	if idempotencyKey != "" {
		if err := ValidateIdempotencyKey(idempotencyKey); err != nil {
			return nil, SubmitResult{}, err
		}
	}
	release, err := in.admission.decoder(ctx)
	if err != nil {
		return nil, SubmitResult{}, err
	}
	defer release()
	now := in.clock.Now()
	batch, err := in.parser.ParseSubmissions(body, now)
	if err != nil {
		return nil, SubmitResult{}, err
	}
	msgs := make([]domain.Message, len(batch.Submissions))
	ids := make([]domain.Identity, len(batch.Submissions))
	for i, s := range batch.Submissions {
		if ids[i], err = identity(principal.Scope, idempotencyKey, i); err != nil {
			return nil, SubmitResult{}, err
		}
		msgs[i] = in.policy.NewMessage(principal.Scope, s, ids[i], now)
	}
	return msgs, SubmitResult{Identities: ids, Multiple: batch.Multiple}, nil
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
