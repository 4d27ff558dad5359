package memory

import (
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
