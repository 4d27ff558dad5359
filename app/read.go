package app

import (
	"context"
	"fmt"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Reader is the fetch use case.
type Reader struct {
	store  ports.MessageReader
	policy domain.Policy
	clock  ports.Clock
}

// NewReader returns the fetch use case reading from store under policy.
func NewReader(store ports.MessageReader, policy domain.Policy, clock ports.Clock) *Reader {
	return &Reader{store: store, policy: policy, clock: clock}
}

// List returns one page of the principal's readable messages. The scope always
// comes from the principal; messages older than the current retention are hidden
// even if the store still holds them; a principal bound to one application sees
// only that application.
func (r *Reader) List(ctx context.Context, principal domain.Principal, q domain.Query) (domain.Page, error) {
	now := r.clock.Now()
	q.Scope = principal.Scope
	if oldest := r.policy.OldestReadable(now); q.Filter.From.Before(oldest) {
		q.Filter.From = oldest
	}
	if !narrowToPrincipal(&q.Filter, principal) {
		return domain.Page{Messages: []domain.Message{}}, nil
	}
	if !q.Filter.To.IsZero() && !q.Filter.From.Before(q.Filter.To) {
		return domain.Page{Messages: []domain.Message{}}, nil
	}
	q.Limit = min(max(q.Limit, 0), domain.MaxLimit)
	if q.Limit == 0 {
		q.Limit = domain.DefaultLimit
	}
	page, err := r.store.List(ctx, q, now)
	if err != nil {
		return domain.Page{}, fmt.Errorf("list messages: %w", err)
	}
	return page, nil
}

// Get returns the principal's readable message with this id (any case) or reference,
// or an error wrapping ports.ErrNotFound.
func (r *Reader) Get(ctx context.Context, principal domain.Principal, idOrReference string) (domain.Message, error) {
	key, ok := domain.CanonicalID(idOrReference)
	if !ok && !domain.IsReference(idOrReference) {
		return domain.Message{}, fmt.Errorf("message %q: %w", idOrReference, ports.ErrNotFound)
	}
	if !ok {
		key = idOrReference
	}
	now := r.clock.Now()
	m, err := r.store.Get(ctx, principal.Scope, key, now)
	if err != nil {
		return domain.Message{}, fmt.Errorf("get message: %w", err)
	}
	if m.CreatedAt.Before(r.policy.OldestReadable(now)) || (principal.Name != "" && m.Name != principal.Name) {
		return domain.Message{}, fmt.Errorf("message %q: %w", idOrReference, ports.ErrNotFound)
	}
	return m, nil
}
