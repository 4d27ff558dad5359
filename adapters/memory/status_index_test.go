package memory

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// A status filter within one class reads that class's index only, so a rare
// status costs no walk through the whole scope; purging keeps the index in step.
func TestStatusFilterUsesTheClassIndex(t *testing.T) {
	s := New()
	now := time.Now()
	var msgs []domain.Message
	for i, code := range []int{200, 200, 201, 404, 503} {
		id, err := domain.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		created := domain.Micro(now.Add(-time.Duration(i) * time.Second))
		msgs = append(msgs, domain.Message{ID: id.ID, Reference: id.Reference, Account: "acme", Domain: domain.DomainLive,
			Name: "shop", StatusCode: code, CreatedAt: created, VisibleAt: created, ExpiresAt: created.Add(time.Hour)})
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	scope := msgs[0].Scope()
	for _, tc := range []struct {
		min, max, candidates int
	}{
		{400, 499, 1}, {404, 404, 1}, {500, 599, 1}, {200, 299, 3}, {300, 399, 0},
		{400, 599, 5}, {400, 0, 5}, // across classes or unbounded: the whole scope
	} {
		q := domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{StatusMin: tc.min, StatusMax: tc.max}}
		if got := s.index(q).Len(); got != tc.candidates {
			t.Errorf("status %d..%d: %d candidates, want %d", tc.min, tc.max, got, tc.candidates)
		}
		page, err := s.List(t.Context(), q, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			if !q.Filter.Matches(m) {
				t.Errorf("status %d..%d: listed status %d", tc.min, tc.max, m.StatusCode)
			}
		}
	}
	if _, err := s.PurgeExpired(t.Context(), msgs[3].ExpiresAt); err != nil {
		t.Fatal(err)
	}
	q := domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{StatusMin: 400, StatusMax: 499}}
	if got := s.index(q).Len(); got != 0 {
		t.Errorf("after purging the 404 and the 503: %d candidates in the 4xx index", got)
	}
}
