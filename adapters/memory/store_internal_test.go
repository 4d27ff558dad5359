package memory

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/reqlog/reqlog/domain"
)

// Purging the last message of a scope or application drops its index, so a
// long-running development store does not accumulate empty trees.
func TestPurgeDropsEmptyIndexes(t *testing.T) {
	s := New()
	now := time.Now()
	var msgs []domain.Message
	for i, name := range []string{"a", "b", "b"} {
		id, err := domain.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		created := domain.Micro(now.Add(-time.Duration(i) * time.Second))
		msgs = append(msgs, domain.Message{ID: id.ID, Reference: id.Reference, Account: "acme", Domain: domain.DomainLive,
			Name: name, CreatedAt: created, VisibleAt: created, ExpiresAt: created.Add(time.Hour)})
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeExpired(t.Context(), msgs[1].ExpiresAt); err != nil || n != 2 {
		t.Fatalf("first purge = %d, %v; want 2, nil", n, err)
	}
	idx := s.scopes[msgs[0].Scope()]
	if a, _ := s.names.lookup("a"); idx == nil || len(idx.byName) != 1 || idx.byName[a] == nil {
		t.Fatalf("after purging application b: scope index %+v, want only application a", idx)
	}
	if n, err := s.PurgeExpired(t.Context(), msgs[0].ExpiresAt); err != nil || n != 1 {
		t.Fatalf("second purge = %d, %v; want 1, nil", n, err)
	}
	if len(s.scopes) != 0 || s.ids.len() != 0 || s.refs.len() != 0 || s.expires.Len() != 0 || s.arena.mapped != 0 {
		t.Errorf("after purging everything: %d scopes, %d ids, %d references, %d expiries, %d bytes mapped; want none",
			len(s.scopes), s.ids.len(), s.refs.len(), s.expires.Len(), s.arena.mapped)
	}
}

// A slot fills one cache line exactly (see slot).
func TestSlotIsOneCacheLine(t *testing.T) {
	if size := unsafe.Sizeof(slot{}); size != 64 {
		t.Errorf("a slot is %d bytes, want 64", size)
	}
}

// Statistics and searches past GOMAXPROCS at once wait for a turn, and one
// whose context ends while it waits returns the context's error.
func TestWholeWalksWaitTheirTurn(t *testing.T) {
	s := New()
	var releases []func()
	for range cap(s.wholeWalks) {
		release, err := s.admitWholeWalk(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	q := domain.StatsQuery{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive},
		From: time.Unix(0, 0), To: time.Unix(3600, 0), Interval: domain.Intervals[0]}
	if _, err := s.Stats(ctx, q, time.Now()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stats while every turn is taken: %v, want the context's deadline", err)
	}
	list := domain.Query{Scope: q.Scope, Limit: 1, Filter: domain.Filter{Text: "x"}}
	if _, err := s.List(ctx, list, time.Now()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a search while every turn is taken: %v, want the context's deadline", err)
	}
	if _, err := s.List(t.Context(), domain.Query{Scope: q.Scope, Limit: 1}, time.Now()); err != nil {
		t.Errorf("a listing without q waits for no turn: %v", err)
	}
	releases[0]()
	if _, err := s.Stats(t.Context(), q, time.Now()); err != nil {
		t.Errorf("Stats once a turn is free: %v", err)
	}
	for _, release := range releases[1:] {
		release()
	}
}
