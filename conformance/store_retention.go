package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// testRetentionClasses: a store that keeps retention classes apart
// (ports.RetentionPurger) leaves out of reads the bodies past their
// BodiesExpireAt, and applies each class's current retention at the purge,
// an account's rule alone, its bodies apart; a store that keeps rollups
// past its messages (ports.RollupKeeper) counts the purged ones from them.
func testRetentionClasses(t *testing.T, s ports.MessageStore) {
	rp, ok := s.(ports.RetentionPurger)
	if !ok {
		t.Skip("the store keeps no retention classes apart (ports.RetentionPurger)")
	}
	f := newFixtures(t)
	ruled := func(rule string) func(*domain.Message) {
		return func(m *domain.Message) { m.RetentionRule = rule }
	}
	// Three days back, so that a store dropping a class's whole day may.
	created := f.anchor.Truncate(24 * time.Hour).Add(-3*24*time.Hour + time.Hour)
	shortened := f.message(scopeLive, created, ruled("short")) // stamped 30 days; its rule now keeps 1
	recent := f.message(scopeLive, f.ago(time.Hour), ruled("short"))
	bodiesGo := f.message(scopeLive, created.Add(time.Minute), ruled("bodies"))
	policy := f.message(scopeLive, created.Add(2*time.Minute))
	otherAccount := f.message(scopeOtherLive, created, ruled("short"))
	bodiesPast := f.message(scopeLive, f.ago(2*time.Hour), func(m *domain.Message) { m.BodiesExpireAt = f.ago(time.Hour) })
	all := []domain.Message{shortened, recent, bodiesGo, policy, otherAccount, bodiesPast}
	mustAppend(t, s, all)
	waitForStored(t, s, f.now(), all)

	withoutBodies := func(m domain.Message) domain.Message {
		m.Request.Body, m.Response.Body = "", ""
		return m
	}
	assertGet(t, s, withoutBodies(bodiesPast), f.now())

	current := func(_ context.Context, c domain.RetentionClass) (keep, bodies time.Duration, ok bool, err error) {
		switch c {
		case domain.RetentionClass{Account: scopeLive.Account, Rule: "short"}:
			return 24 * time.Hour, 24 * time.Hour, true, nil
		case domain.RetentionClass{Account: scopeLive.Account, Rule: "bodies"}:
			return fixtureRetention, 24 * time.Hour, true, nil
		}
		return fixtureRetention, fixtureRetention, true, nil
	}
	n, err := rp.PurgeRetention(t.Context(), f.now(), current)
	if err != nil || (n != 1 && n != -1) {
		t.Fatalf("PurgeRetention = %d, %v; want 1 (or -1), nil", n, err)
	}
	assertNotFound(t, s, scopeLive, shortened.ID, f.now())
	for _, m := range []domain.Message{recent, policy, otherAccount} {
		assertGet(t, s, m, f.now())
	}
	assertGet(t, s, withoutBodies(bodiesGo), f.now())
	assertGet(t, s, withoutBodies(bodiesPast), f.now())
	if _, keeps := s.(ports.RollupKeeper); keeps {
		// The statistics count the class's purged message from the rollups
		// kept before it went.
		q := statsQuery(scopeLive, created, created.Add(time.Hour), "1h", domain.Filter{})
		q.RollupsOnlyBefore = q.To
		assertStats(t, asIfReadable([]domain.Message{shortened, bodiesGo, policy}), q, f.now(), getStats(t, s, q, f.now()))
	}
	if t.Failed() {
		return
	}
	if n, err := rp.PurgeRetention(t.Context(), f.now(), current); err != nil || n > 0 {
		t.Errorf("PurgeRetention again = %d, %v; want 0 (or -1), nil", n, err)
	}
}

// testExpiredBodiesNotSearched: once a message's bodies have expired
// (BodiesExpireAt), before any purge takes them out, a q of a word that was
// only in them finds it neither in a list nor in the statistics, and no
// read returns them.
func testExpiredBodiesNotSearched(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	const word = "zebrafish"
	inBodies := func(m *domain.Message) {
		m.Request.Body = `{"note": "` + word + ` ahead"}`
		m.Response.Body = "a " + word
	}
	gone := f.message(scopeLive, f.ago(2*time.Hour), inBodies, func(m *domain.Message) { m.BodiesExpireAt = f.ago(time.Hour) })
	kept := f.message(scopeLive, f.ago(2*time.Hour).Add(time.Minute), inBodies, func(m *domain.Message) { m.BodiesExpireAt = f.now().Add(time.Hour) })
	inPath := f.message(scopeLive, f.ago(2*time.Hour).Add(2*time.Minute), func(m *domain.Message) {
		m.Path = "/v1/" + word
		m.BodiesExpireAt = f.ago(time.Hour)
	})
	all := []domain.Message{gone, kept, inPath}
	mustAppend(t, s, all)
	waitForStored(t, s, f.now(), all)

	filter := domain.Filter{Text: word}
	got := listAll(t, s, scopeLive, filter, domain.MaxLimit, f.now())
	ids := make([]string, len(got))
	for i, m := range got {
		ids[i] = m.ID
	}
	if want := []string{inPath.ID, kept.ID}; !slices.Equal(ids, want) {
		t.Errorf("List(q=%s) = %v, want %v: the message whose bodies expired held the word in them alone", word, ids, want)
	}
	q := statsQuery(scopeLive, f.ago(3*time.Hour), f.now(), "1h", filter)
	withoutBodies := gone
	withoutBodies.Request.Body, withoutBodies.Response.Body = "", ""
	assertStats(t, []domain.Message{withoutBodies, kept, inPath}, q, f.now(), getStats(t, s, q, f.now()))
	assertGet(t, s, withoutBodies, f.now())
	assertGet(t, s, kept, f.now())
}
