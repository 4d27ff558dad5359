package app

import (
	"context"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// reads is what the three read use cases (Reader, Statistics, Exporter) share:
// the store, the policy, the clock, and the fair admission of the reads that
// walk many messages. One reads serves all three, so they share its walks.
type reads struct {
	store  ports.MessageReader
	policy domain.Policy
	clock  ports.Clock
	walks  *walkAdmission
	// tombstones, when not nil, are the subjects of pending erasures, which
	// every read of their account leaves out.
	tombstones *tombstones
}

// leaveOutPending leaves out of f what account's pending erasures erase
// (domain.Filter.Hidden); an account without one reads f as it is.
func (r *reads) leaveOutPending(ctx context.Context, account string, f *domain.Filter) error {
	hidden, err := r.tombstones.of(ctx, account)
	f.Hidden = hidden
	return err
}

// scoped is the prologue of every read: f as principal may read it at now. An
// application principal sees only its application, and nothing older than
// retention is read even if the store still holds it. False means nothing can
// match (another application, or an empty range), so no store call is needed.
func (r *reads) scoped(principal domain.Principal, f domain.Filter, now time.Time) (domain.Filter, bool) {
	return r.scopedFrom(principal, f, r.policy.OldestReadable(now))
}

// scopedFrom is scoped with the oldest created_at read.
func (r *reads) scopedFrom(principal domain.Principal, f domain.Filter, oldest time.Time) (domain.Filter, bool) {
	if principal.Name != "" {
		if f.Name != "" && f.Name != principal.Name {
			return f, false
		}
		f.Name = principal.Name
	}
	if f.From.Before(oldest) {
		f.From = oldest
	}
	return f, f.To.IsZero() || f.From.Before(f.To)
}

// statsScoped is scoped for the statistics of q: a query the rollups answer
// alone (a scope or one application over a range) reaches back to the
// rollup retention when rollups outlive messages, and what was created
// before the messages' retention, rounded up to a minute, is counted from
// the rollups alone (stats.Query.RollupsOnlyBefore). Any other query reads
// messages, back to their retention.
func (r *reads) statsScoped(principal domain.Principal, q stats.Query, now time.Time) (stats.Query, bool) {
	if !r.policy.KeepsRollups() || !q.RollupsAnswer() {
		var ok bool
		q.Filter, ok = r.scoped(principal, q.Filter, now)
		return q, ok
	}
	var ok bool
	if q.Filter, ok = r.scopedFrom(principal, q.Filter, r.policy.OldestRollup(now)); !ok {
		return q, false
	}
	if edge := stats.AlignUp(r.policy.OldestReadable(now), time.Minute); q.Filter.From.Before(edge) {
		q.RollupsOnlyBefore = edge
	}
	return q, true
}

// list is one page of q for principal, as a walk when its filter may read many
// messages to fill it (walksMany).
func (r *reads) list(ctx context.Context, principal domain.Principal, q domain.Query, now time.Time) (domain.Page, error) {
	if err := r.leaveOutPending(ctx, principal.Account, &q.Filter); err != nil {
		return domain.Page{}, err
	}
	if walksMany(q.Filter) {
		release, err := r.walks.admit(ctx, principal.Account)
		if err != nil {
			return domain.Page{}, err
		}
		defer release()
	}
	return r.store.List(ctx, q, now)
}

// walksMany reports whether a page of f may read many messages to fill itself:
// the q search reads every text until the page is full, and the filters on
// method, address, path, status and duration are not what every store orders
// messages by (a status no message has reads the whole scope). Without them a
// page reads about as many messages as it returns.
func walksMany(f domain.Filter) bool {
	return f.Text != "" || f.Method != "" || f.IPAddress != "" || f.Path != "" || f.PathPrefix != "" ||
		f.StatusMin != 0 || f.StatusMax != 0 || f.HasDurationBounds() || f.Hidden != nil
}

// Reader is the fetch use case: pages of messages, and one message by id.
type Reader struct{ reads *reads }

// NewReader returns the fetch use case reading from store under policy, with
// DefaultWalkLimits. Its Statistics and Exporter share its store and walks.
func NewReader(store ports.MessageReader, policy domain.Policy, clock ports.Clock) *Reader {
	return NewReaderWith(store, policy, clock, DefaultWalkLimits())
}

// NewReaderWith is NewReader with the given bounds on walks.
func NewReaderWith(store ports.MessageReader, policy domain.Policy, clock ports.Clock, limits WalkLimits) *Reader {
	return &Reader{reads: &reads{store: store, policy: policy, clock: clock, walks: newWalkAdmission(limits)}}
}

// List returns one page of the principal's readable messages. The scope always
// comes from the principal (reads.scoped says what else it narrows).
func (r *Reader) List(ctx context.Context, principal domain.Principal, q domain.Query) (domain.Page, error) {
	now := r.reads.clock.Now()
	q.Scope = principal.Scope
	var ok bool
	if q.Filter, ok = r.reads.scoped(principal, q.Filter, now); !ok {
		return domain.Page{Messages: []domain.Message{}}, nil
	}
	q.Limit = min(max(q.Limit, 0), domain.MaxLimit)
	if q.Limit == 0 {
		q.Limit = domain.DefaultLimit
	}
	page, err := r.reads.list(ctx, principal, q, now)
	if err != nil {
		return domain.Page{}, fmt.Errorf("list messages: %w", err)
	}
	return page, nil
}

// getErased is Get with the messages of pending erasures: a subject's
// messages are listed from it (Erasures.SubjectMessages).
func (r *Reader) getErased(ctx context.Context, principal domain.Principal, idOrReference string) (domain.Message, error) {
	key, ok := domain.CanonicalID(idOrReference)
	if !ok && !domain.IsReference(idOrReference) {
		return domain.Message{}, fmt.Errorf("message %q: %w", idOrReference, ports.ErrNotFound)
	}
	if !ok {
		key = idOrReference
	}
	now := r.reads.clock.Now()
	m, err := r.reads.store.Get(ctx, principal.Scope, key, now)
	if err != nil {
		return domain.Message{}, fmt.Errorf("get message: %w", err)
	}
	if m.CreatedAt.Before(r.reads.policy.OldestReadable(now)) || (principal.Name != "" && m.Name != principal.Name) {
		return domain.Message{}, fmt.Errorf("message %q: %w", idOrReference, ports.ErrNotFound)
	}
	return m, nil
}

// Get returns the principal's readable message with this id (any case) or reference,
// or an error wrapping ports.ErrNotFound, also for a message of a pending
// erasure's subjects.
func (r *Reader) Get(ctx context.Context, principal domain.Principal, idOrReference string) (domain.Message, error) {
	m, err := r.getErased(ctx, principal, idOrReference)
	if err != nil {
		return domain.Message{}, err
	}
	if hidden, err := r.reads.tombstones.hides(ctx, principal.Account, m.ID); err != nil {
		return domain.Message{}, fmt.Errorf("get message: %w", err)
	} else if hidden {
		return domain.Message{}, fmt.Errorf("message %q: %w", idOrReference, ports.ErrNotFound)
	}
	return m, nil
}

// Statistics returns the statistics use case over the reader's store, policy,
// clock and walks.
func (r *Reader) Statistics() *Statistics { return &Statistics{reads: r.reads} }

// Exporter returns the export use case over the reader's store, policy, clock
// and walks.
func (r *Reader) Exporter() *Exporter { return &Exporter{reads: r.reads} }
