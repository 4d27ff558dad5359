// Package memory is a message store held in the process's memory: a development
// store whose messages are durable for the life of the process only. It keeps the
// same rules as the real stores (scopes, visibility, retention, ordering, filters,
// keyset pagination) and is the reference the conformance suite is checked on.
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.HealthChecker = (*Store)(nil)
)

// btreeDegree suits in-memory trees of small pointer items (google/btree's advice).
const btreeDegree = 32

// newestFirst orders an index the way List pages: domain.Precedes is the one
// definition of the order.
func newestFirst(a, b *domain.Message) bool { return domain.Precedes(*a, *b) }

// expiresFirst orders the retention index; the id makes keys unique.
func expiresFirst(a, b *domain.Message) bool {
	if !a.ExpiresAt.Equal(b.ExpiresAt) {
		return a.ExpiresAt.Before(b.ExpiresAt)
	}
	return a.ID < b.ID
}

// scopeIndex holds one tenant's messages in List order, once in all, once per
// application name, because portals list a single application, and once per
// status class (byClass[4] holds the 4xx), so that a filter on a rare status does
// not walk the whole scope.
type scopeIndex struct {
	all     *btree.BTreeG[*domain.Message]
	byName  map[string]*btree.BTreeG[*domain.Message]
	byClass [6]*btree.BTreeG[*domain.Message]
}

// statusClass is the byClass slot of a status code (100 to 599).
func statusClass(code int) int { return min(max(code/100, 0), 5) }

// Store is the in-memory ports.MessageStore: messages last as long as the process.
// It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	byID    map[string]*domain.Message
	byRef   map[string]*domain.Message
	scopes  map[domain.Scope]*scopeIndex
	expires *btree.BTreeG[*domain.Message]
}

// New returns an empty store.
func New() *Store {
	return &Store{
		byID:    map[string]*domain.Message{},
		byRef:   map[string]*domain.Message{},
		scopes:  map[domain.Scope]*scopeIndex{},
		expires: btree.NewG(btreeDegree, expiresFirst),
	}
}

// Append stores copies of msgs. An id already stored keeps its message. The batch
// is checked first, so a refused batch stores nothing.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: append: %w", err)
	}
	for i, m := range msgs {
		if m.ID == "" {
			return fmt.Errorf("memory: append: message %d has no id", i)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if _, stored := s.byID[m.ID]; stored {
			continue
		}
		s.insert(m.Clone())
	}
	return nil
}

func (s *Store) insert(m domain.Message) {
	stored := &m
	s.byID[m.ID] = stored
	if _, taken := s.byRef[m.Reference]; !taken && m.Reference != "" {
		s.byRef[m.Reference] = stored
	}
	idx := s.scopes[m.Scope()]
	if idx == nil {
		idx = &scopeIndex{all: btree.NewG(btreeDegree, newestFirst), byName: map[string]*btree.BTreeG[*domain.Message]{}}
		for i := range idx.byClass {
			idx.byClass[i] = btree.NewG(btreeDegree, newestFirst)
		}
		s.scopes[m.Scope()] = idx
	}
	idx.all.ReplaceOrInsert(stored)
	idx.byClass[statusClass(m.StatusCode)].ReplaceOrInsert(stored)
	named := idx.byName[m.Name]
	if named == nil {
		named = btree.NewG(btreeDegree, newestFirst)
		idx.byName[m.Name] = named
	}
	named.ReplaceOrInsert(stored)
	s.expires.ReplaceOrInsert(stored)
}

// List walks the scope's index from the page's start, skipping what is not
// readable at now or does not match, and reads one message past the page to
// know whether more follow.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if err := ctx.Err(); err != nil {
		return domain.Page{}, fmt.Errorf("memory: list: %w", err)
	}
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("memory: list: limit must be at least 1, got %d", q.Limit)
	}
	found := s.scan(q, now)
	// Stored messages are never modified, so they are copied outside the lock.
	return domain.PageOf(q.Limit, found, (*domain.Message).Clone), nil
}

// Lookup returns scope's stored messages with any of ids, readable or not.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: lookup: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found []domain.Message
	for _, id := range ids {
		if m, ok := s.byID[id]; ok && m.Scope() == scope {
			found = append(found, m.Clone())
		}
	}
	return found, nil
}

// scan returns up to q.Limit+1 messages of q's page, as stored.
func (s *Store) scan(q domain.Query, now time.Time) []*domain.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	index := s.index(q)
	if index == nil {
		return nil
	}
	found := make([]*domain.Message, 0, min(q.Limit+1, index.Len()))
	walk(index, q, now, func(m *domain.Message) bool {
		found = append(found, m)
		return len(found) <= q.Limit
	})
	return found
}

// walk calls visit, newest first, with each message of index on q's page or
// after it that is readable at now and passes q.Filter, until visit returns false.
func walk(index *btree.BTreeG[*domain.Message], q domain.Query, now time.Time, visit func(*domain.Message) bool) {
	from, matches := q.Filter.From, q.Filter.Matcher()
	collect := func(m *domain.Message) bool {
		if !from.IsZero() && m.CreatedAt.Before(from) {
			return false // everything further on is older still
		}
		if (q.After == nil || q.After.Admits(*m)) && m.Readable(now) && matches(*m) {
			return visit(m)
		}
		return true
	}
	if start := pageStart(q); start != nil {
		index.AscendGreaterOrEqual(start, collect)
	} else {
		index.Ascend(collect)
	}
}

// Stats walks the narrowest index over the range, counting each match as it
// goes: nothing of the store is copied.
func (s *Store) Stats(ctx context.Context, q domain.StatsQuery, now time.Time) (domain.Stats, error) {
	if err := ctx.Err(); err != nil {
		return domain.Stats{}, fmt.Errorf("memory: stats: %w", err)
	}
	builder := domain.NewStatsBuilder(q)
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := domain.Query{Scope: q.Scope, Filter: q.Filter}
	if index := s.index(list); index != nil {
		walk(index, list, now, func(m *domain.Message) bool {
			builder.Add(domain.SampleOf(*m))
			return true
		})
	}
	return builder.Stats(), nil
}

// index is the narrowest index that holds every candidate of q, or nil.
func (s *Store) index(q domain.Query) *btree.BTreeG[*domain.Message] {
	idx := s.scopes[q.Scope]
	switch {
	case idx == nil:
		return nil
	case q.Filter.Name != "":
		return idx.byName[q.Filter.Name]
	case q.Filter.StatusMin > 0 && statusClass(q.Filter.StatusMin) == statusClass(q.Filter.StatusMax):
		return idx.byClass[statusClass(q.Filter.StatusMin)]
	default:
		return idx.all
	}
}

// pageStart is the position to seek to, nil for the newest message: the cursor,
// or the filter's upper time bound if that lies further on. Neither position need
// hold a message.
func pageStart(q domain.Query) *domain.Message {
	var start *domain.Message
	if q.After != nil {
		start = &domain.Message{CreatedAt: q.After.CreatedAt, ID: q.After.ID}
	}
	if !q.Filter.To.IsZero() {
		// An empty id sorts after every id at the same time, so the seek lands on
		// the first message created strictly before To.
		to := &domain.Message{CreatedAt: q.Filter.To}
		if start == nil || newestFirst(start, to) {
			start = to
		}
	}
	return start
}

// Get finds a message by id, then by reference, in scope and readable at now.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, fmt.Errorf("memory: get: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.byID[idOrReference]
	if m == nil {
		m = s.byRef[idOrReference]
	}
	if m == nil || m.Scope() != scope || !m.Readable(now) {
		return domain.Message{}, fmt.Errorf("memory: message %q: %w", idOrReference, ports.ErrNotFound)
	}
	return m.Clone(), nil
}

// PurgeExpired deletes, oldest expiry first, every message whose ExpiresAt is at
// or before now.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: purge: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var expired []*domain.Message
	s.expires.Ascend(func(m *domain.Message) bool {
		if m.ExpiresAt.After(now) {
			return false
		}
		expired = append(expired, m)
		return true
	})
	for _, m := range expired {
		s.remove(m)
	}
	return int64(len(expired)), nil
}

func (s *Store) remove(m *domain.Message) {
	delete(s.byID, m.ID)
	if s.byRef[m.Reference] == m {
		delete(s.byRef, m.Reference)
	}
	s.expires.Delete(m)
	idx := s.scopes[m.Scope()]
	idx.all.Delete(m)
	idx.byClass[statusClass(m.StatusCode)].Delete(m)
	named := idx.byName[m.Name]
	named.Delete(m)
	if named.Len() == 0 {
		delete(idx.byName, m.Name)
	}
	if idx.all.Len() == 0 {
		delete(s.scopes, m.Scope())
	}
}

// ReadLag is zero: a message is readable as soon as Append returns.
func (s *Store) ReadLag() time.Duration { return 0 }

// Ping always succeeds: there is no backend to lose.
func (s *Store) Ping(context.Context) error { return nil }
