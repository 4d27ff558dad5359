package memory

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Ids other than canonical UUIDs, which tests and other callers may use, sort
// by their text among canonical ones, cursors included.
func TestOddIDsKeepTheOrder(t *testing.T) {
	s := New()
	created := domain.Micro(time.Now())
	ids := []string{"b", "0190c3a4-0000-7000-8000-000000000000", "a", "zzz",
		"ffffffff-ffff-ffff-ffff-ffffffffffff", "0190C3A4-0000-7000-8000-000000000000", ""}
	var msgs []domain.Message
	for i, id := range ids[:len(ids)-1] {
		msgs = append(msgs, domain.Message{ID: id, Reference: fmt.Sprintf("ref-%d", i), Account: "acme",
			Domain: domain.DomainLive, Name: "shop", CreatedAt: created, VisibleAt: created, ExpiresAt: created.Add(time.Hour)})
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ids[:len(ids)-1])
	slices.Sort(want)
	slices.Reverse(want)
	scope := msgs[0].Scope()
	var got []string
	q := domain.Query{Scope: scope, Limit: 2}
	for {
		page, err := s.List(t.Context(), q, created)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			got = append(got, m.ID)
		}
		if q.After = page.Next(); q.After == nil {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
	for i, m := range msgs {
		if got, err := s.Get(t.Context(), scope, fmt.Sprintf("ref-%d", i), created); err != nil || got.ID != m.ID {
			t.Errorf("Get(ref-%d) = %q, %v; want %q", i, got.ID, err, m.ID)
		}
	}
}

// Searches and statistics walk in steps while writers add messages and purges
// delete them between those steps: every page still holds whole messages in
// order, and the race detector sees every read of a message stay off writes.
func TestWalksDuringWritesAndPurges(t *testing.T) {
	s := New()
	start := domain.Micro(time.Now())
	body := strings.Repeat("y", 20_000) + " needle"
	const writers, batches, perBatch = 2, 40, 50
	var wg, writing sync.WaitGroup
	var written atomic.Int64
	for w := range writers {
		writing.Add(1)
		wg.Go(func() {
			defer writing.Done()
			for b := range batches {
				msgs := make([]domain.Message, perBatch)
				for i := range msgs {
					id, err := domain.NewIdentity()
					if err != nil {
						t.Error(err)
						return
					}
					created := start.Add(time.Duration(b*perBatch+i) * time.Millisecond)
					retention := time.Second // most expire soon; every seventh lasts
					if i%7 == 0 {
						retention = time.Hour
					}
					msgs[i] = domain.Message{ID: id.ID, Reference: id.Reference, Account: "acme", Domain: domain.DomainLive,
						Name: fmt.Sprintf("app-%d", w), Path: "/v1/x", StatusCode: 200, Response: domain.Content{Body: body},
						CreatedAt: created, VisibleAt: created, ExpiresAt: created.Add(retention)}
				}
				if err := s.Append(t.Context(), msgs); err != nil {
					t.Error(err)
					return
				}
				written.Add(perBatch)
			}
		})
	}
	done := make(chan struct{})
	go func() { writing.Wait(); close(done) }()
	finished := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	wg.Go(func() {
		// Each purge expires what the writers wrote up to now but every seventh.
		for !finished() {
			frontier := time.Duration(written.Load()/writers) * time.Millisecond
			if _, err := s.PurgeExpired(t.Context(), start.Add(time.Second+frontier)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	for range 2 {
		wg.Go(func() {
			for !finished() {
				page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 20, Filter: domain.Filter{Text: "NEEDLE"}}, start.Add(time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				for i, m := range page.Messages {
					if !strings.HasSuffix(m.Response.Body, " needle") {
						t.Errorf("message %s read back with a body of %d bytes not ending in the needle", m.ID, len(m.Response.Body))
						return
					}
					if i > 0 && !domain.Precedes(page.Messages[i-1], m) {
						t.Errorf("a page out of order: %s then %s", page.Messages[i-1].ID, m.ID)
						return
					}
				}
				if _, err := s.Stats(t.Context(), stats.Query{Scope: scope, From: start.Add(-time.Minute), To: start.Add(time.Hour),
					Interval: stats.Intervals[3], Filter: domain.Filter{From: start.Add(-time.Minute), To: start.Add(time.Hour)}}, start.Add(time.Second)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := s.PurgeExpired(t.Context(), start.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if len(s.byID) != 0 || len(s.byRef) != 0 || len(s.scopes) != 0 || s.expires.Len() != 0 {
		t.Errorf("after purging everything: %d ids, %d references, %d scopes, %d expiries", len(s.byID), len(s.byRef),
			len(s.scopes), s.expires.Len())
	}
}
