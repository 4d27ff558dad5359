package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// sliceStore is a complete, if naive, custom store adapter: every message in one
// slice, every rule taken from the domain (readability, filters, order, cursor).
// It shows the least an adapter must do to pass the suites.
type sliceStore struct {
	mu   sync.RWMutex
	msgs []domain.Message
}

var _ ports.MessageStore = (*sliceStore)(nil)

func (s *sliceStore) Append(_ context.Context, msgs []domain.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if !slices.ContainsFunc(s.msgs, func(stored domain.Message) bool { return stored.ID == m.ID }) {
			s.msgs = append(s.msgs, m.Clone()) // idempotent per id; no caller references kept
		}
	}
	return nil
}

func (s *sliceStore) List(_ context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var hits []domain.Message
	for _, m := range s.msgs {
		m = m.WithoutExpiredBodies(now) // a read never finds bodies past their retention
		if !m.Tally && m.Scope() == q.Scope && m.Readable(now) && q.Filter.Matches(m) && (q.After == nil || q.After.Admits(m)) {
			hits = append(hits, m.Clone())
		}
	}
	slices.SortFunc(hits, func(a, b domain.Message) int {
		if domain.Precedes(a, b) {
			return -1
		}
		return 1
	})
	return domain.PageOf(q.Limit, hits, func(m domain.Message) domain.Message { return m }), nil
}

func (s *sliceStore) Lookup(_ context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found []domain.Message
	for _, m := range s.msgs {
		if !m.Tally && m.Scope() == scope && slices.Contains(ids, m.ID) {
			found = append(found, m.Clone())
		}
	}
	return found, nil
}

func (s *sliceStore) LookupTallies(_ context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found []ports.StoredTally
	for _, m := range s.msgs {
		if m.Tally && m.Scope() == scope && slices.Contains(ids, m.ID) {
			found = append(found, ports.StoredTally{ID: m.ID, Submitted: m.Rules.Submitted})
		}
	}
	return found, nil
}

func (s *sliceStore) Get(_ context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.msgs {
		if !m.Tally && (m.ID == idOrReference || m.Reference == idOrReference) && m.Scope() == scope && m.Readable(now) {
			return m.WithoutExpiredBodies(now).Clone(), nil
		}
	}
	return domain.Message{}, fmt.Errorf("message %q: %w", idOrReference, ports.ErrNotFound)
}

func (s *sliceStore) PurgeExpired(_ context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := len(s.msgs)
	s.msgs = slices.DeleteFunc(s.msgs, func(m domain.Message) bool { return !now.Before(m.ExpiresAt) })
	return int64(before - len(s.msgs)), nil
}

// Stats counts every readable match, tallies too, with the domain's exact
// reference builder; the reads above pass tallies by.
func (s *sliceStore) Stats(_ context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := stats.NewBuilder(q)
	for _, m := range s.msgs {
		if m.Scope() == q.Scope && m.Readable(now) && q.Filter.Matches(m.WithoutExpiredBodies(now)) {
			b.Add(stats.SampleOf(m))
		}
	}
	return b.Stats(), nil
}

func (s *sliceStore) ReadLag() time.Duration { return 0 }

// newSliceStore gives every subtest a fresh, empty store, as the suites require.
func newSliceStore(context.Context, *testing.T) (ports.MessageStore, error) {
	return &sliceStore{}, nil
}

// The custom adapter above, run through both suites: this is all a contributor's
// adapter test needs (plus provisioning its real server, see mongotest/elastictest).
func TestCustomAdapterPassesTheSuites(t *testing.T) {
	conformance.RunStoreTests(t, newSliceStore)
	conformance.RunAPITests(t, newSliceStore, httpapitest.Serve)
}

// Run the suites against your own ports.MessageStore from its test file;
// sliceStore above is a complete custom adapter, and
// TestCustomAdapterPassesTheSuites runs it for real.
func ExampleRunStoreTests() {
	newStore := func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		return &sliceStore{}, nil // a fresh, empty store for every subtest
	}
	_ = func(t *testing.T) { // your adapter's TestConformance
		conformance.RunStoreTests(t, newStore)
		conformance.RunAPITests(t, newStore, httpapitest.Serve)
	}
}
