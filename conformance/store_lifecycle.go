package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// readableAt is one read time of a boundary test and what it must show.
type readableAt struct {
	label string
	now   time.Time
	want  []domain.Message // newest first
}

// assertReadableAt checks List (plain and filtered by name, which a store may
// serve from another index) and Get at each read time. hidden are the fixtures
// that some read times must not show.
func assertReadableAt(t *testing.T, s ports.MessageStore, hidden []domain.Message, reads []readableAt) {
	t.Helper()
	for _, r := range reads {
		for _, filter := range []domain.Filter{{}, {Name: "shop"}} {
			got := listAll(t, s, scopeLive, filter, domain.MaxLimit, r.now)
			assertMessages(t, fmt.Sprintf("List with %s %s (%s)", describeFilter(filter), r.label, domain.FormatTime(r.now)), r.want, got)
		}
		for _, m := range hidden {
			if slices.ContainsFunc(r.want, func(w domain.Message) bool { return w.ID == m.ID }) {
				assertGet(t, s, m, r.now)
				continue
			}
			assertNotFound(t, s, scopeLive, m.ID, r.now)
			assertNotFound(t, s, scopeLive, m.Reference, r.now)
		}
	}
}

func testVisibleAt(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	control := f.message(scopeLive, f.ago(2*time.Hour))
	subject := f.message(scopeLive, f.ago(time.Hour), func(m *domain.Message) {
		m.VisibleAt = m.UpdatedAt.Add(20*time.Minute + 17*time.Microsecond)
	})
	visible := subject.VisibleAt
	mustAppend(t, s, []domain.Message{control, subject})
	waitForStored(t, s, visible, []domain.Message{control, subject})

	assertReadableAt(t, s, []domain.Message{subject}, []readableAt{
		{"one microsecond before VisibleAt", visible.Add(-time.Microsecond), []domain.Message{control}},
		{"long before VisibleAt", subject.CreatedAt, []domain.Message{control}},
		{"exactly at VisibleAt", visible, []domain.Message{subject, control}},
		{"after VisibleAt", visible.Add(time.Microsecond), []domain.Message{subject, control}},
	})
}

func testExpiresAt(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	subject := f.message(scopeLive, f.ago(2*time.Hour))
	control := f.message(scopeLive, f.ago(time.Hour)) // expires an hour later
	expires := subject.ExpiresAt
	mustAppend(t, s, []domain.Message{subject, control})
	waitForStored(t, s, expires.Add(-time.Microsecond), []domain.Message{subject, control})

	assertReadableAt(t, s, []domain.Message{subject}, []readableAt{
		{"one microsecond before ExpiresAt", expires.Add(-time.Microsecond), []domain.Message{control, subject}},
		{"exactly at ExpiresAt", expires, []domain.Message{control}},
		{"after ExpiresAt", expires.Add(time.Minute), []domain.Message{control}},
	})
}

// assertPurged checks that after a purge the store holds exactly kept, read at a
// time when the purged messages would still be readable had they been kept.
func assertPurged(t *testing.T, s ports.MessageStore, now time.Time, kept, purged []domain.Message) {
	t.Helper()
	scopes := map[domain.Scope]bool{}
	for _, m := range slices.Concat(kept, purged) {
		scopes[m.Scope()] = true
	}
	for scope := range scopes {
		for _, filter := range []domain.Filter{{}, {Name: "shop"}} {
			q := domain.Query{Scope: scope, Filter: filter, Limit: domain.MaxLimit}
			want := expectedPage(kept, q, now)
			err := eventually(t.Context(), s, func() error {
				got, err := walk(t.Context(), s, q, now, nil)
				if err != nil {
					return err
				}
				if !slices.Equal(idsOf(want), idsOf(got)) {
					return fmt.Errorf("not the kept messages:\n%s", describeIDDiff(want, got))
				}
				return nil
			})
			if err != nil {
				t.Errorf("List of %+v with %s after the purge, read at %s: %v", scope, describeFilter(filter), domain.FormatTime(now), err)
			}
		}
	}
	for _, m := range purged {
		assertNotFound(t, s, m.Scope(), m.ID, now)
		assertNotFound(t, s, m.Scope(), m.Reference, now)
	}
	for _, m := range kept {
		assertGet(t, s, m, now)
	}
}

func assertPurgeCount(t *testing.T, s ports.MessageStore, now time.Time, want int) {
	t.Helper()
	n, err := s.PurgeExpired(t.Context(), now)
	if err != nil {
		t.Fatalf("PurgeExpired(%s): %v", domain.FormatTime(now), err)
	}
	if n != int64(want) && n != -1 {
		t.Errorf("PurgeExpired(%s) = %d, want %d (or -1 if the store cannot tell)", domain.FormatTime(now), n, want)
	}
}

func testPurgeExpired(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	// Expired and kept messages live on different UTC days of CreatedAt, so that
	// a store deleting whole days can delete all expired ones.
	today := f.anchor.Truncate(24 * time.Hour)
	var expired, kept []domain.Message
	for i := range 6 {
		scope := []domain.Scope{scopeLive, scopeTest}[i%2]
		expired = append(expired, f.message(scope, today.Add(-42*time.Hour+time.Duration(i)*37*time.Millisecond)))
		kept = append(kept, f.message(scope, f.anchor.Add(-time.Duration(i)*time.Millisecond)))
	}
	kept = append(kept, f.message(scopeLive, today.Add(-time.Hour))) // yesterday, not expired
	// Every message created two days ago has expired then, none created since.
	purgeAt := today.Add(-12*time.Hour + fixtureRetention)
	mustAppend(t, s, slices.Concat(expired, kept))
	waitForStored(t, s, f.now(), slices.Concat(expired, kept))

	assertPurgeCount(t, s, purgeAt, len(expired))
	assertPurged(t, s, f.now(), kept, expired)
	assertPurgeCount(t, s, purgeAt, 0)
}

func testPurgeBoundary(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	atNow := f.message(scopeLive, f.ago(2*time.Hour))
	purgeAt := atNow.ExpiresAt
	justAfter := f.message(scopeLive, atNow.CreatedAt.Add(time.Microsecond))
	longBefore := f.message(scopeLive, atNow.CreatedAt.Add(-time.Minute))
	mustAppend(t, s, []domain.Message{atNow, justAfter, longBefore})
	waitForStored(t, s, f.now(), []domain.Message{atNow, justAfter, longBefore})

	assertPurgeCount(t, s, purgeAt, 2)
	assertPurged(t, s, f.now(), []domain.Message{justAfter}, []domain.Message{atNow, longBefore})
}
