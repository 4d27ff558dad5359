package elastic_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// dayIndex is the index of the UTC day of t under cfg's prefix, spelt out here
// rather than taken from the adapter.
func dayIndex(prefix string, t time.Time) string {
	return prefix + "-messages-" + t.UTC().Format("2006.01.02")
}

// A mapping conflict rejects one item of a bulk request: the batch fails and
// says which message, the others are stored, and the failure is not transient.
func TestAppendReportsRejectedItem(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	now := time.Now()
	good := message(t, now)
	bad := message(t, now.Add(-48*time.Hour))
	// The template makes the index strict; the request makes "method" a number,
	// which no message's method is.
	c.must(http.MethodPut, "/"+dayIndex(cfg.IndexPrefix, bad.CreatedAt), map[string]any{
		"mappings": map[string]any{"properties": map[string]any{"method": map[string]any{"type": "integer"}}},
	}, nil)

	err := s.Append(t.Context(), []domain.Message{good, bad})
	if err == nil {
		t.Fatal("Append of a batch with a rejected item: nil error, want one")
	}
	if errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append: %v wraps ErrUnavailable, but retrying cannot help", err)
	}
	// The report names the failed message, and only that one.
	if !strings.Contains(err.Error(), bad.ID) || strings.Contains(err.Error(), good.ID) {
		t.Errorf("Append error %q should name %s and not %s", err, bad.ID, good.ID)
	}
	waitReadable(t, s, now.Add(time.Second), good)
	assertAbsent(t, s, cfg.IndexPrefix, bad, now.Add(time.Second))
}

// A write-blocked index refuses writes for now: the batch fails with
// ErrUnavailable, and the same batch succeeds once the block is lifted.
func TestAppendIntoBlockedIndexIsUnavailable(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	now := time.Now()
	first := message(t, now.Add(-24*time.Hour))
	if err := s.Append(t.Context(), []domain.Message{first}); err != nil {
		t.Fatal(err)
	}
	index := dayIndex(cfg.IndexPrefix, first.CreatedAt)
	c.must(http.MethodPut, "/"+index+"/_block/write", nil, nil)

	blocked := message(t, first.CreatedAt.Add(time.Millisecond))
	batch := []domain.Message{first, blocked}
	err := s.Append(t.Context(), batch)
	wantUnavailable(t, "Append into a write-blocked index", err)
	if err != nil && !strings.Contains(err.Error(), blocked.ID) {
		t.Errorf("Append error %q should name %s", err, blocked.ID)
	}

	c.must(http.MethodPut, "/"+index+"/_settings", map[string]any{"index.blocks.write": nil}, nil)
	if err := s.Append(t.Context(), batch); err != nil {
		t.Fatalf("Append after the block was lifted: %v", err)
	}
	waitReadable(t, s, now, first, blocked)
}

// A message that exists already (409 in the bulk reply) counts as stored.
func TestAppendExistingIsSuccess(t *testing.T) {
	s, _ := newStore(t)
	now := time.Now()
	stored := message(t, now)
	if err := s.Append(t.Context(), []domain.Message{stored}); err != nil {
		t.Fatal(err)
	}
	retry := stored.Clone()
	retry.Path = "/changed"
	added := message(t, now.Add(-time.Hour))
	if err := s.Append(t.Context(), []domain.Message{retry, added, retry}); err != nil {
		t.Fatalf("Append of a batch with an existing id: %v", err)
	}
	waitReadable(t, s, now.Add(time.Second), stored, added)
	got, err := s.Get(t.Context(), scope, stored.ID, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != stored.Path {
		t.Errorf("the re-appended message has path %q, want the first write's %q", got.Path, stored.Path)
	}
}

func TestAppendRefusesUnstorableMessages(t *testing.T) {
	s, cfg := newStore(t)
	now := time.Now()
	for _, tc := range []struct {
		name string
		edit func(*domain.Message)
	}{
		{"no id", func(m *domain.Message) { m.ID = "" }},
		{"created before 1970", func(m *domain.Message) { m.CreatedAt = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"zero visible time", func(m *domain.Message) { m.VisibleAt = time.Time{} }},
		{"expiry after 2262", func(m *domain.Message) { m.ExpiresAt = time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good, bad := message(t, now), message(t, now)
			tc.edit(&bad)
			err := s.Append(t.Context(), []domain.Message{good, bad})
			if err == nil || errors.Is(err, ports.ErrUnavailable) {
				t.Fatalf("Append: %v, want a permanent error", err)
			}
			// Refused before sending: nothing of the batch is stored.
			assertAbsent(t, s, cfg.IndexPrefix, good, now.Add(time.Second))
		})
	}
}

// assertAbsent refreshes the store's indices, so that every acknowledged
// write is searchable, and fails unless Get reports m not found at now.
func assertAbsent(t *testing.T, s ports.MessageStore, prefix string, m domain.Message, now time.Time) {
	t.Helper()
	newCluster(t).must(http.MethodPost, "/"+prefix+"-messages-*/_refresh?allow_no_indices=true", nil, nil)
	if _, err := s.Get(t.Context(), m.Scope(), m.ID, now); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get(%s): %v, want ErrNotFound", m.ID, err)
	}
}
