package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Purging the last message of a scope or application drops its index, so a
// long-running development store does not accumulate empty trees.
func TestPurgeDropsEmptyIndexes(t *testing.T) {
	s := New()
	now := time.Now()
	var msgs []domain.Message
	for i, name := range []string{"a", "b", "b"} {
		msgs = append(msgs, stored(t, name, domain.Micro(now.Add(-time.Duration(i)*time.Second)), ""))
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeExpired(t.Context(), msgs[1].ExpiresAt); err != nil || n != 2 {
		t.Fatalf("first purge = %d, %v; want 2, nil", n, err)
	}
	idx := s.scopes[msgs[0].Scope()]
	if idx == nil || len(idx.byName) != 1 || idx.byName["a"] == nil {
		t.Fatalf("after purging application b: scope index %+v, want only application a", idx)
	}
	if n, err := s.PurgeExpired(t.Context(), msgs[0].ExpiresAt); err != nil || n != 1 {
		t.Fatalf("second purge = %d, %v; want 1, nil", n, err)
	}
	if len(s.scopes) != 0 || len(s.byID) != 0 || len(s.byRef) != 0 || s.expires.Len() != 0 {
		t.Errorf("after purging everything: %d scopes, %d ids, %d references, %d expiries; want none",
			len(s.scopes), len(s.byID), len(s.byRef), s.expires.Len())
	}
}

// stored is a message of application name in acme:live created at created,
// expiring an hour later, with body as its response body.
func stored(t *testing.T, name string, created time.Time, body string) domain.Message {
	t.Helper()
	id, err := domain.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return domain.Message{ID: id.ID, Reference: id.Reference, Account: "acme", Domain: domain.DomainLive, Name: name,
		Path: "/v1/orders", StatusCode: 200, Response: domain.Content{Body: body},
		CreatedAt: created, UpdatedAt: created, VisibleAt: created, ExpiresAt: created.Add(time.Hour)}
}

// appendingContext appends a message to its store the nth time its Err is
// asked, while the walk that asks waits: a walk that held the store's lock
// across its steps would never see that append finish.
type appendingContext struct {
	context.Context
	t        *testing.T
	s        *Store
	nth      int
	looks    int
	appended chan error
}

func (c *appendingContext) Err() error {
	if c.looks++; c.looks == c.nth {
		m := stored(c.t, "shop", domain.Micro(time.Now()), "")
		go func() { c.appended <- c.s.Append(context.Background(), []domain.Message{m}) }()
		select {
		case err := <-c.appended:
			if err != nil {
				c.t.Error(err)
			}
		case <-time.After(10 * time.Second):
			c.t.Error("an Append waited for a walk's whole length: the walk holds the lock across its steps")
			return context.Canceled
		}
	}
	return c.Context.Err()
}

// filled is a store of n messages of application shop a millisecond apart,
// the newest created at now, each with body as its response body.
func filled(t *testing.T, n int, now time.Time, body string) (*Store, domain.Scope) {
	t.Helper()
	s := New()
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = stored(t, "shop", now.Add(-time.Duration(i)*time.Millisecond), body)
	}
	if err := s.Append(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	return s, msgs[0].Scope()
}

// walk is a read of scope that walks every message: a search that finds
// nothing, or the statistics of the hour around now.
type walk struct {
	name string
	run  func(ctx context.Context, s *Store) error
}

func walksOf(scope domain.Scope, now time.Time) []walk {
	return []walk{
		{"search", func(ctx context.Context, s *Store) error {
			_, err := s.List(ctx, domain.Query{Scope: scope, Limit: 20, Filter: domain.Filter{Text: "absent"}}, now)
			return err
		}},
		{"statistics", func(ctx context.Context, s *Store) error {
			_, err := s.Stats(ctx, stats.Query{Scope: scope, From: now.Add(-time.Hour), To: now.Add(time.Hour),
				Interval: stats.Intervals[3]}, now)
			return err
		}},
	}
}

// A walk lets writers in between its steps: an Append made while a search
// and statistics walk many messages finishes before they do.
func TestWalksLetWritersInBetweenSteps(t *testing.T) {
	now := domain.Micro(time.Now())
	s, scope := filled(t, 4*walkStep, now, "")
	for _, walk := range walksOf(scope, now) {
		before := len(s.byID)
		ctx := &appendingContext{Context: t.Context(), t: t, s: s, nth: 2, appended: make(chan error, 1)}
		if err := walk.run(ctx, s); err != nil {
			t.Fatalf("%s: %v", walk.name, err)
		}
		if ctx.looks < 2 || len(s.byID) != before+1 {
			t.Errorf("%s: looked at its context %d times and %d messages were appended meanwhile; want at least 2 and 1",
				walk.name, ctx.looks, len(s.byID)-before)
		}
	}
}

// cancelledOnSecondLook is a context whose Err is nil the first time it is
// asked and Canceled from then on: the client leaves while a walk runs.
type cancelledOnSecondLook struct {
	context.Context
	looks int
}

func (c *cancelledOnSecondLook) Err() error {
	if c.looks++; c.looks > 1 {
		return context.Canceled
	}
	return nil
}

// A search over a few large messages notices that its client left by the
// bytes it read, long before it has read walkStep messages.
func TestSearchOverLargeMessagesStopsWhenItsClientLeaves(t *testing.T) {
	now := domain.Micro(time.Now())
	s, scope := filled(t, 40, now, strings.Repeat("x", 4<<20)) // one string, shared by every message
	if err := walksOf(scope, now)[0].run(&cancelledOnSecondLook{Context: t.Context()}, s); !errors.Is(err, context.Canceled) {
		t.Errorf("a search over 40 messages of 4 MiB after its client left: %v, want context.Canceled", err)
	}
}

// A long search or statistics walk stops once its client has left, instead of
// reading every message for nobody.
func TestLongWalkStopsWhenItsContextEnds(t *testing.T) {
	now := domain.Micro(time.Now())
	s, scope := filled(t, 4*walkStep, now, "")
	for _, walk := range walksOf(scope, now) {
		if err := walk.run(&cancelledOnSecondLook{Context: t.Context()}, s); !errors.Is(err, context.Canceled) {
			t.Errorf("%s after its client left: %v, want context.Canceled", walk.name, err)
		}
	}
}
