package app

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
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

// Ingester is the submit use case, the one straight line from a submission's
// drafts to the store: Admit (permission, a down store, load), then on the
// Admission: Decode (the drafts made, on a decoder, then validated, normalised,
// masked and redacted, then put through the account's rule set: the one place
// every capture path's exchanges are scrubbed, dropped or sampled), Store (past the breaker, the Idempotency-Key's earlier
// request looked up, then Append through the queue or to the store) and
// Release. The Admission is the one object that holds the submission's place
// and gives it back.
type Ingester struct {
	store     ports.MessageWriter // written to when queue is nil
	queue     *GroupCommitter     // nil: each submission writes on its own, unbounded
	breaker   *Breaker            // nil: none
	lookup    ports.MessageLookup
	policy    domain.Policy
	validator domain.Validator // policy's, built once
	clock     ports.Clock
	admission *admission
	rules     *RuleBook // nil: no rule sets
}

// IngestPorts are the ingest use case's collaborators, passed explicitly.
type IngestPorts struct {
	// Store is written to when Queue is nil; one of them is required.
	Store ports.MessageWriter
	// Queue, if set, is written through instead: it coalesces concurrent
	// submissions into store batches and bounds what waits for the store. An
	// admitted submission reserves room in it, so its bound is the one byte
	// budget of ingest (AdmissionOptions.MaxBytes then counts nothing). It must
	// stamp each batch as it writes it (a StoredTimeStamper), the only time a
	// message is stamped; without a queue the Ingester stamps just before Append.
	Queue *GroupCommitter
	// Breaker, if set, keeps submissions off a store found down, but one at a
	// time that probes it (lookup and write).
	Breaker *Breaker
	// Lookup finds what an Idempotency-Key stored before; required, since
	// without it a reused key would store nothing and answer 200.
	Lookup ports.MessageLookup
	// Clock stamps the messages; required.
	Clock ports.Clock
	// Rules, if set, holds the accounts' rule sets that every message goes
	// through before it is stored.
	Rules *RuleBook
}

// MaxBatch is the most items a submission may hold: a decoder keeps that many.
func (in *Ingester) MaxBatch() int { return in.policy.MaxBatch }

// NewIngesterWith returns the submit use case on p under policy, admitting
// submissions within admission; a missing collaborator is an error.
func NewIngesterWith(p IngestPorts, policy domain.Policy, admission AdmissionOptions) (*Ingester, error) {
	switch {
	case p.Store == nil && p.Queue == nil:
		return nil, errors.New("the ingest use case needs a store or a queue to write to")
	case p.Lookup == nil:
		return nil, errors.New("the ingest use case needs a ports.MessageLookup to check Idempotency-Keys")
	case p.Clock == nil:
		return nil, errors.New("the ingest use case needs a clock")
	case p.Queue != nil && !p.Queue.Stamps():
		// Messages are stamped once, when written: a queue that does not stamp
		// would store them without their stored and visible times.
		return nil, errors.New("the ingest use case needs a queue that stamps each batch (GroupCommitOptions.Stamper)")
	}
	in := &Ingester{store: p.Store, queue: p.Queue, breaker: p.Breaker, lookup: p.Lookup, policy: policy, validator: policy.Validator(),
		clock: p.Clock, rules: p.Rules}
	in.LimitDecoding(admission)
	return in, nil
}

// NewIngester returns the submit use case writing to store, and checking
// Idempotency-Keys in it, with each submission written on its own and
// DefaultAdmissionOptions.
func NewIngester(store ports.MessageStore, policy domain.Policy, clock ports.Clock) *Ingester {
	in, err := NewIngesterWith(IngestPorts{Store: store, Lookup: store, Clock: clock}, policy, DefaultAdmissionOptions())
	if err != nil {
		panic("app: " + err.Error()) // a nil store or clock: a programming error
	}
	return in
}

// LimitDecoding replaces the admission options; call it before the first submission.
func (in *Ingester) LimitDecoding(o AdmissionOptions) *Ingester {
	if in.queue != nil {
		o.MaxBytes = math.MaxInt64 // the queue's reservations count the bodies
	}
	in.admission = newAdmission(o)
	return in
}

// IdempotencyKey is a valid Idempotency-Key, or none (the zero value). Only
// ParseIdempotencyKey makes one, so a key is checked once, where it comes in.
type IdempotencyKey struct{ key string }

// ParseIdempotencyKey reads the values of the Idempotency-Key header: none is
// no key; one must be 1 to 255 visible ASCII characters; anything else is a
// *domain.ValidationError naming the Idempotency-Key header.
func ParseIdempotencyKey(values ...string) (IdempotencyKey, error) {
	switch {
	case len(values) == 0:
		return IdempotencyKey{}, nil
	case len(values) == 1 && ValidateIdempotencyKey(values[0]) == nil:
		return IdempotencyKey{values[0]}, nil
	default:
		return IdempotencyKey{}, ValidateIdempotencyKey("") // the same error for every invalid key
	}
}

// String is the key, "" for none.
func (k IdempotencyKey) String() string { return k.key }

// Admission is a submission let in by Ingester.Admit, and the one object that
// holds its place: it counts against the admission bounds until its body is
// decoded, and holds room in the queue until its messages are queued, or until
// Release. Use it from one goroutine.
type Admission struct {
	in          *Ingester
	principal   domain.Principal
	source      rules.Source // what captured the exchanges, for the rules' scopes
	bodyCut     int          // bytes of each body kept after the rules; 0: all
	key         IdempotencyKey
	ticket      *ticket      // its place among the admitted submissions
	reservation *Reservation // nil without a queue
	msgs        []domain.Message
	result      SubmitResult
}

// Admit decides, before its body is read, whether a submission whose body has at
// most bodyBytes may go ahead: it refuses read-only principals (ports.ErrForbidden);
// wrapping ports.ErrUnavailable, a store found down while another request probes
// it (Breaker.Refusing); and wrapping ports.ErrOverloaded, a full queue or a full
// waiting room. An admitted submission holds room in the queue (GroupCommitter.Reserve),
// so it is not refused for load later. Call Release unless Submit or Store is
// called; deferring it is safe, as a second Release does nothing.
func (in *Ingester) Admit(principal domain.Principal, key IdempotencyKey, bodyBytes int64) (*Admission, error) {
	if principal.ReadOnly {
		return nil, fmt.Errorf("this credential may only read messages: %w", ports.ErrForbidden)
	}
	if in.breaker != nil {
		if err := in.breaker.Refusing(); err != nil {
			return nil, err
		}
	}
	ticket, err := in.admission.admit(bodyBytes)
	if err != nil {
		return nil, err
	}
	admitted := &Admission{in: in, principal: principal, source: rules.SourceAPI, key: key, ticket: ticket}
	if in.queue != nil {
		if admitted.reservation, err = in.queue.Reserve(bodyBytes); err != nil {
			ticket.leave()
			if ports.KindOf(err) == ports.KindOverloaded {
				in.admission.refused()
			}
			return nil, err
		}
	}
	return admitted, nil
}

// CapturedBy says what captured the submission's exchanges (rules.SourceAPI
// unless said otherwise), for the rules scoped to sources; call it before
// Decode.
func (a *Admission) CapturedBy(src rules.Source) { a.source = src }

// CutBodiesAt has each body held to limit bytes after the rules ran on it
// whole (domain.CutBody), for a capture that sent more than it keeps (0:
// keep all); call it before Decode.
func (a *Admission) CutBodiesAt(limit int) { a.bodyCut = limit }

// Release counts the submission out and gives its room in the queue back; calling
// it again, or after Submit or Store, does nothing.
func (a *Admission) Release() {
	a.ticket.leave()
	a.reservation.Cancel()
	a.msgs = nil
}

// Submit validates drafts and stores every message, or nothing: Decode, then
// Store. Errors: *domain.ValidationError, domain.ErrTooLarge, ports.ErrConflict
// (a reused Idempotency-Key), ports.ErrUnavailable and ports.ErrOverloaded
// (wrapped).
func (a *Admission) Submit(ctx context.Context, drafts domain.Drafts) (SubmitResult, error) {
	defer a.Release() // also if validation panics and the caller recovers
	if err := a.Decode(ctx, drafts.TextBytes(), func() (domain.Drafts, error) { return drafts, nil }); err != nil {
		return SubmitResult{}, err
	}
	return a.Store(ctx)
}

// Decode waits for a decoder, calls decode for the drafts of a submission of
// bodyBytes bytes (the HTTP API decodes the body's JSON there, so that the bound
// on decoders covers it), and turns them into the messages to store: validated,
// normalised, masked and redacted. With an Idempotency-Key the identities are
// derived from it, so a retried request stores nothing twice. It gives the
// decoder back before returning, and keeps nothing of the drafts, so the caller
// may reuse their memory at once while the messages wait for Store. After an
// error the submission is released.
func (a *Admission) Decode(ctx context.Context, bodyBytes int64, decode func() (domain.Drafts, error)) error {
	a.ticket.bodyRead(bodyBytes)
	a.reservation.Shrink(bodyBytes)
	var err error
	a.msgs, a.result, err = a.in.decode(ctx, a, decode)
	a.ticket.leave()
	if err != nil {
		a.Release()
	}
	return err
}

// Store stores every decoded message, or nothing, and releases the submission;
// call it once, after Decode. Errors: ports.ErrConflict (a reused
// Idempotency-Key), ports.ErrUnavailable and ports.ErrOverloaded (wrapped).
func (a *Admission) Store(ctx context.Context) (SubmitResult, error) {
	defer a.Release()
	// One pass for the lookup and the write: both call the store, so while it
	// is down they are the probe, or wait for none.
	var pass *Pass
	if a.in.breaker != nil {
		var err error
		if pass, err = a.in.breaker.Enter(); err != nil {
			return SubmitResult{}, err
		}
	}
	defer pass.Abandon()
	err := a.store(ctx)
	pass.Done(err)
	if err != nil {
		return SubmitResult{}, err
	}
	return a.result, nil
}

// store checks a reused Idempotency-Key, then appends through the queue or to
// the store.
func (a *Admission) store(ctx context.Context) error {
	if len(a.msgs) == 0 {
		return nil
	}
	if a.key != (IdempotencyKey{}) {
		missing, replayed, err := a.in.checkReplay(ctx, a.principal.Scope, a.msgs)
		if err != nil {
			return err
		}
		for i, id := range a.result.Identities {
			if tallied, ok := replayed[id.ID]; ok { // as the first request stored it, whatever the rules say now
				a.result.Identities[i].Dropped = tallied
			}
		}
		if a.msgs = missing; len(missing) == 0 {
			return nil
		}
	}
	var err error
	if a.reservation != nil {
		err = a.reservation.Append(ctx, a.msgs) // the queue stamps them as it writes them
	} else {
		a.in.policy.StampStored(a.msgs, a.in.clock.Now())
		err = a.in.store.Append(ctx, a.msgs)
	}
	if err != nil {
		return fmt.Errorf("store %d messages: %w", len(a.msgs), err)
	}
	return nil
}

// Submit is Admit followed by Admission.Submit, for callers that hold the
// drafts already; idempotencyKey "" is none.
func (in *Ingester) Submit(ctx context.Context, principal domain.Principal, drafts domain.Drafts, idempotencyKey string) (SubmitResult, error) {
	return in.SubmitFrom(ctx, rules.SourceAPI, principal, drafts, idempotencyKey)
}

// SubmitFrom is Submit of exchanges captured by src.
func (in *Ingester) SubmitFrom(ctx context.Context, src rules.Source, principal domain.Principal, drafts domain.Drafts, idempotencyKey string) (SubmitResult, error) {
	return in.SubmitCaptured(ctx, src, 0, principal, drafts, idempotencyKey)
}

// SubmitCaptured is SubmitFrom with each body held to bodyCut bytes after the
// rules (Admission.CutBodiesAt; 0: keep all).
func (in *Ingester) SubmitCaptured(ctx context.Context, src rules.Source, bodyCut int, principal domain.Principal, drafts domain.Drafts, idempotencyKey string) (SubmitResult, error) {
	var key IdempotencyKey
	if idempotencyKey != "" {
		var err error
		if key, err = ParseIdempotencyKey(idempotencyKey); err != nil {
			return SubmitResult{}, err
		}
	}
	admitted, err := in.Admit(principal, key, drafts.TextBytes())
	if err != nil {
		return SubmitResult{}, err
	}
	admitted.CapturedBy(src)
	admitted.CutBodiesAt(bodyCut)
	return admitted.Submit(ctx, drafts)
}

// checkReplay refuses msgs, derived from an Idempotency-Key, when one of their
// ids is stored with another submission: the key was used before for a different
// request, and storing nothing while answering 200 would drop this one silently.
// The same submissions are a retry: it returns those of msgs not stored yet,
// the only ones to append (a message stored before may be in another
// partition now: a retention rule changed its class since). A message stored
// with the digest of its submission (RulesRecord.Submitted) is compared by
// it: a new rule set or a re-scrub may have changed it since, and its retry
// is still the same request. replayed holds the ids stored before, true for
// those an ingest rule dropped then (tallies: Append would keep the tally,
// so the retry is answered as dropped too, whatever the rules say now).
func (in *Ingester) checkReplay(ctx context.Context, scope domain.Scope, msgs []domain.Message) (missing []domain.Message, replayed map[string]bool, err error) {
	index := make(map[string]int, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		index[m.ID], ids[i] = i, m.ID
	}
	earlier, err := in.lookup.Lookup(ctx, scope, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("look up earlier requests with this Idempotency-Key: %w", err)
	}
	replayed = make(map[string]bool, len(earlier))
	for _, e := range earlier {
		i, ok := index[e.ID]
		if !ok {
			continue
		}
		if !sameRequest(e, msgs[i]) {
			return nil, nil, fmt.Errorf("item %d differs from the request first sent with this Idempotency-Key: %w", i, ports.ErrConflict)
		}
		replayed[e.ID] = false
	}
	if err := in.lookUpTallies(ctx, scope, msgs, index, replayed); err != nil {
		return nil, nil, err
	}
	if len(replayed) == 0 {
		return msgs, replayed, nil
	}
	missing = make([]domain.Message, 0, len(msgs)-len(replayed))
	for _, m := range msgs {
		if _, ok := replayed[m.ID]; !ok {
			missing = append(missing, m)
		}
	}
	return missing, replayed, nil
}

// lookUpTallies adds to replayed, as true, those of msgs (index: their items
// by id) not in it that the store holds as tallies, when it can tell
// (ports.TallyLookup). A tally stored with the digest of its submission is
// compared by it, as a message is; one without (SQLite keeps none) is
// matched by its id, derived from the key and the item.
func (in *Ingester) lookUpTallies(ctx context.Context, scope domain.Scope, msgs []domain.Message, index map[string]int, replayed map[string]bool) error {
	tl, ok := in.lookup.(ports.TallyLookup)
	if !ok || len(replayed) == len(msgs) {
		return nil
	}
	ids := make([]string, 0, len(msgs)-len(replayed))
	for _, m := range msgs {
		if _, found := replayed[m.ID]; !found {
			ids = append(ids, m.ID)
		}
	}
	tallies, err := tl.LookupTallies(ctx, scope, ids)
	if err != nil {
		return fmt.Errorf("look up earlier requests with this Idempotency-Key: %w", err)
	}
	for _, tally := range tallies {
		i, ok := index[tally.ID]
		if !ok {
			continue
		}
		if tally.Submitted != "" && tally.Submitted != msgs[i].Rules.Submitted {
			return fmt.Errorf("item %d differs from the request first sent with this Idempotency-Key: %w", i, ports.ErrConflict)
		}
		replayed[tally.ID] = true
	}
	return nil
}

// decode makes the drafts and turns them into the messages to store and the
// reply, on a decoder.
func (in *Ingester) decode(ctx context.Context, a *Admission, decode func() (domain.Drafts, error)) ([]domain.Message, SubmitResult, error) {
	principal, key := a.principal, a.key
	release, err := in.admission.decoder(ctx)
	if err != nil {
		return nil, SubmitResult{}, err
	}
	defer release()
	drafts, err := decode()
	if err != nil {
		return nil, SubmitResult{}, err
	}
	now := in.clock.Now()
	batch, err := in.validator.ValidateSubmissions(drafts, now)
	if err != nil {
		return nil, SubmitResult{}, err
	}
	msgs := make([]domain.Message, len(batch.Submissions))
	ids := make([]domain.Identity, len(batch.Submissions))
	for i, s := range batch.Submissions {
		if ids[i], err = identity(principal.Scope, key, i); err != nil {
			return nil, SubmitResult{}, err
		}
		msgs[i] = in.policy.NewUnstoredMessage(principal.Scope, s, ids[i]) // stamped when written
	}
	var submitted map[string]string // by id: the digests of the messages before the rules
	if key != (IdempotencyKey{}) {
		submitted = make(map[string]string, len(msgs))
		for _, m := range msgs {
			submitted[m.ID] = domain.SubmissionDigest(principal.Scope, key.key, m)
		}
	}
	if in.rules != nil {
		if msgs, err = in.applyRules(ctx, principal.Account, a.source, msgs, ids); err != nil {
			return nil, SubmitResult{}, err
		}
	}
	for i := range msgs {
		// A tally's too: its retry may find the message a first request stored
		// before an ingest rule dropped such exchanges (checkReplay).
		msgs[i].Rules.Submitted = submitted[msgs[i].ID]
	}
	if a.bodyCut > 0 {
		for i := range msgs {
			for _, c := range []*domain.Content{&msgs[i].Request, &msgs[i].Response} {
				c.Body = domain.CutBody(c.Body, a.bodyCut, c.Size)
			}
		}
	}
	return msgs, SubmitResult{Identities: ids, Multiple: batch.Multiple}, nil
}

// applyRules puts msgs through the account's rule set, in place, and returns
// those to store, each with its record of the version, its source and the
// rules' changes (a re-scrub reads it): a dropped one is marked in ids and
// becomes a tally (rules.Outcome.Stored), written in the same Append as the
// messages kept, so that the statistics count every exchange received and a
// crash never leaves one acknowledged uncounted. An erased subject's exchange
// its erasure drops (rules.ForgetDrop) is neither stored nor counted. A
// rule's retention shortens a message's, never lengthens it past the
// policy's, which reads keep to.
func (in *Ingester) applyRules(ctx context.Context, account string, src rules.Source, msgs []domain.Message, ids []domain.Identity) ([]domain.Message, error) {
	active, err := in.rules.For(ctx, account)
	if err != nil {
		return nil, err
	}
	if active.compiled == nil {
		for i := range msgs {
			msgs[i].Rules = domain.RulesRecord{Source: string(src)}
		}
		return msgs, nil
	}
	outcomes := make([]rules.Outcome, len(msgs))
	forget := in.rules.forget.For(account)
	kept := msgs[:0]
	for i := range msgs {
		m := &msgs[i]
		policyExpiry := m.ExpiresAt
		outcomes[i] = active.compiled.ApplyForgetting(m, src, forget)
		ids[i].Dropped = !outcomes[i].Stored
		if outcomes[i].Forgotten == rules.ForgetDrop {
			continue
		}
		m.Subjects = outcomes[i].Subjects // the store's subject index
		if m.ExpiresAt.After(policyExpiry) {
			m.ExpiresAt = policyExpiry
		}
		m.RetentionRule, m.BodiesExpireAt = outcomes[i].RetentionRule, outcomes[i].BodiesExpireAt
		if m.BodiesExpireAt.After(m.ExpiresAt) {
			m.BodiesExpireAt = time.Time{} // the policy's retention is shorter: they go with the message
		}
		if outcomes[i].Stored {
			m.Rules = domain.RulesRecord{Version: active.Version.Number, Source: string(src), Changes: outcomes[i].Changes}
		}
		kept = append(kept, *m)
	}
	clear(msgs[len(kept):]) // what was dropped is not kept alive
	in.rules.observe(active, outcomes)
	return kept, nil
}

// sameRequest reports whether now, derived from an Idempotency-Key, retries
// the request that stored earlier.
func sameRequest(earlier, now domain.Message) bool {
	if earlier.Rules.Submitted != "" {
		return earlier.ID == now.ID && earlier.Rules.Submitted == now.Rules.Submitted
	}
	return domain.SameSubmission(earlier, now)
}

func identity(scope domain.Scope, key IdempotencyKey, index int) (domain.Identity, error) {
	if key != (IdempotencyKey{}) {
		return domain.DerivedIdentity(scope, key.key, index), nil
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
