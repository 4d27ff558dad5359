package elastic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// expiring is message created at createdAt that expires at expiresAt.
func expiring(t *testing.T, createdAt, expiresAt time.Time) domain.Message {
	t.Helper()
	m := message(t, createdAt)
	m.ExpiresAt = domain.Micro(expiresAt)
	return m
}

func mustPurge(t *testing.T, s ports.MessageStore, now time.Time, want int64) {
	t.Helper()
	n, err := s.PurgeExpired(t.Context(), now)
	if err != nil {
		t.Fatalf("PurgeExpired(%s): %v", domain.FormatTime(now), err)
	}
	if n != want {
		t.Errorf("PurgeExpired(%s) = %d, want %d", domain.FormatTime(now), n, want)
	}
}

func wantIndices(t *testing.T, c cluster, present, gone []string) {
	t.Helper()
	for _, index := range present {
		if !c.exists(index) {
			t.Errorf("index %s was deleted, want it kept", index)
		}
	}
	for _, index := range gone {
		if c.exists(index) {
			t.Errorf("index %s still exists, want it deleted", index)
		}
	}
}

func TestPurgeDeletesOnlyFullyExpiredDays(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	purgeAt := today.Add(10 * 24 * time.Hour)
	dayA, dayB, dayC := today.Add(-72*time.Hour), today.Add(-48*time.Hour), today
	expiredA := []domain.Message{
		expiring(t, dayA.Add(time.Hour), purgeAt.Add(-2*time.Hour)),
		expiring(t, dayA.Add(23*time.Hour), purgeAt), // expired exactly at the purge
	}
	mixedB := []domain.Message{
		expiring(t, dayB.Add(time.Hour), purgeAt.Add(-time.Hour)),
		expiring(t, dayB.Add(2*time.Hour), purgeAt.Add(time.Microsecond)),
	}
	keptC := expiring(t, dayC.Add(time.Minute), purgeAt.Add(48*time.Hour))
	all := append(append(append([]domain.Message{}, expiredA...), mixedB...), keptC)
	if err := s.Append(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	readAt := purgeAt.Add(-3 * time.Hour) // when every message is still readable
	waitReadable(t, s, readAt, all...)
	indexA, indexB, indexC := dayIndex(cfg.IndexPrefix, dayA), dayIndex(cfg.IndexPrefix, dayB), dayIndex(cfg.IndexPrefix, dayC)
	mustPurge(t, s, readAt, 0)
	wantIndices(t, c, []string{indexA, indexB, indexC}, nil)

	mustPurge(t, s, purgeAt, int64(len(expiredA)))
	wantIndices(t, c, []string{indexB, indexC}, []string{indexA})
	for _, m := range expiredA {
		if _, err := s.Get(t.Context(), scope, m.ID, readAt); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Get of purged %s: %v, want ErrNotFound", m.ID, err)
		}
	}
	page, err := s.List(t.Context(), domain.Query{Scope: scope, Limit: 10}, readAt)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(page.Messages); got != 3 {
		t.Errorf("List after the purge: %d messages, want the 3 of the kept days", got)
	}
	mustPurge(t, s, purgeAt, 0)

	mustPurge(t, s, purgeAt.Add(time.Microsecond), int64(len(mixedB)))
	wantIndices(t, c, []string{indexC}, []string{indexA, indexB})
}

// A purge must not delete an index whose messages all looked expired if one
// that is not got there meanwhile, nor leave the index unwritable.
func TestPurgeKeepsDayWithUnexpiredMessage(t *testing.T) {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	day := today.Add(-72 * time.Hour)
	// A purge time 100µs into a millisecond: aggregations see milliseconds.
	purgeAt := today.Add(10*24*time.Hour + 100*time.Microsecond)
	for _, tc := range []struct {
		name string
		// late is the unexpired message; it is appended after the expired one
		// has become searchable.
		late time.Time
		// searchable: whether late is refreshed before the purge.
		searchable bool
	}{
		{name: "written but not yet searchable", late: purgeAt.Add(time.Hour), searchable: false},
		{name: "expiring later in the same millisecond", late: purgeAt.Add(500 * time.Microsecond), searchable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			// No automatic refresh: the test decides what is searchable.
			s, cfg := newStore(t, func(cfg *elastic.Config) { cfg.RefreshInterval = time.Hour })
			refresh := func() {
				c.must(http.MethodPost, "/"+cfg.IndexPrefix+"-messages-*/_refresh", nil, nil)
			}
			expired := expiring(t, day.Add(time.Hour), purgeAt.Add(-time.Hour))
			late := expiring(t, day.Add(2*time.Hour), tc.late)
			if err := s.Append(t.Context(), []domain.Message{expired}); err != nil {
				t.Fatal(err)
			}
			refresh()
			if err := s.Append(t.Context(), []domain.Message{late}); err != nil {
				t.Fatal(err)
			}
			if tc.searchable {
				refresh()
			}

			mustPurge(t, s, purgeAt, 0)
			index := dayIndex(cfg.IndexPrefix, day)
			wantIndices(t, c, []string{index}, nil)
			more := expiring(t, day.Add(3*time.Hour), purgeAt.Add(time.Hour))
			if err := s.Append(t.Context(), []domain.Message{more}); err != nil {
				t.Fatalf("Append into the kept day after the purge: %v", err)
			}
			refresh()
			waitReadable(t, s, day.Add(4*time.Hour), expired, late, more)
		})
	}
}

// The purge of a class's bodies takes their words out of the index, and
// of the full-text field a document written before its index's layout was
// known carries: a q at a time before the bodies expired no longer finds
// them.
func TestPurgeRetentionTakesTheBodiesWordsOut(t *testing.T) {
	s := openStore(t.Context(), t, testConfig(t))
	created := time.Now().UTC().Add(-72 * time.Hour)
	m := message(t, created)
	m.RetentionRule, m.Request.Body = "payments", "wombat card"
	m.BodiesExpireAt = domain.Micro(created.Add(48 * time.Hour))
	if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	before := created.Add(time.Minute) // the bodies readable then
	q := domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Text: "wombat"}}
	waitFor(t, "the q before the purge", 30*time.Second, func() error {
		if page, err := s.List(t.Context(), q, before); err != nil || len(page.Messages) != 1 {
			return fmt.Errorf("%d found (%v), want 1", len(page.Messages), err)
		}
		return nil
	})
	current := func(_ context.Context, c domain.RetentionClass) (time.Duration, time.Duration, bool, error) {
		return 30 * 24 * time.Hour, 24 * time.Hour, c == m.RetentionClass(), nil
	}
	if n, err := s.PurgeRetention(t.Context(), time.Now(), current); err != nil || n != 0 {
		t.Fatalf("PurgeRetention = %d, %v; want nothing deleted", n, err)
	}
	if page, err := s.List(t.Context(), q, before); err != nil || len(page.Messages) != 0 {
		t.Errorf("after the purge a q of a word of the bodies finds %d (%v), want none", len(page.Messages), err)
	}
	if got, err := s.Get(t.Context(), scope, m.ID, before); err != nil || got.Request.Body != "" || got.Path != m.Path {
		t.Errorf("Get after the purge = body %q, path %q (%v); want the message without its bodies", got.Request.Body, got.Path, err)
	}
}

// A retention rule's messages of a day are an index of their own, beside
// the day's index of the policy's: Get finds them there, and the purge
// deletes that index whole once the class's keep has passed the day's end,
// leaving the day's other indices and the class's later days, even of a
// message past the keep in a day not ended then, and deleting by id a
// document of the class a store before the classes' indices wrote in the
// policy's.
func TestPurgeRetentionDropsAClassDayWhole(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	names := esindex.NewNames(cfg.IndexPrefix)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour).Add(-72 * time.Hour)
	ruled := func(rule string) func(*domain.Message) {
		return func(m *domain.Message) { m.RetentionRule = rule }
	}
	gone := conformance.NewMessage(t, scope, day.Add(time.Hour), ruled("short"))
	later := conformance.NewMessage(t, scope, now.Add(-time.Hour), ruled("short"))
	dayAfter := conformance.NewMessage(t, scope, day.Add(25*time.Hour), ruled("short"))
	longer := conformance.NewMessage(t, scope, day.Add(2*time.Hour), ruled("long"))
	policy := conformance.NewMessage(t, scope, day.Add(3*time.Hour))
	if err := s.Append(t.Context(), []domain.Message{gone, later, dayAfter, longer, policy}); err != nil {
		t.Fatal(err)
	}
	// A document of the class in the policy's index of its day.
	legacy := conformance.NewMessage(t, scope, day.Add(4*time.Hour), ruled("short"))
	lines := bytes.SplitN(esdoc.AppendCreate(nil, names.For(day), false, legacy), []byte("\n"), 3)
	c.must(http.MethodPut, "/"+names.For(day)+"/_doc/"+legacy.ID+"?refresh=true", json.RawMessage(lines[1]), nil)
	waitReadable(t, s, now, gone, later, dayAfter, longer, policy, legacy)

	goneIndex := names.Of(gone)
	if goneIndex == names.For(day) || goneIndex != names.ForClass(day, gone.RetentionClass()) {
		t.Fatalf("the class's message goes to %s, want its class's index of the day, not %s", goneIndex, names.For(day))
	}
	for m, index := range map[*domain.Message]string{&gone: goneIndex, &longer: names.Of(longer), &policy: names.For(day), &later: names.Of(later)} {
		if status, raw := c.do(http.MethodGet, "/"+index+"/_doc/"+m.ID, nil); status != http.StatusOK {
			t.Errorf("message %s is not in %s: %d %s", m.ID, index, status, raw)
		}
	}
	// The class's keep ends halfway through the day after: that day stays.
	keep := now.Sub(day.Add(36 * time.Hour))
	current := func(_ context.Context, class domain.RetentionClass) (time.Duration, time.Duration, bool, error) {
		if class == gone.RetentionClass() {
			return keep, keep, true, nil
		}
		return 30 * 24 * time.Hour, 30 * 24 * time.Hour, true, nil
	}
	if n, err := s.PurgeRetention(t.Context(), now, current); err != nil || n != 2 {
		t.Fatalf("PurgeRetention = %d, %v; want 2 (the class's day index of 1 and the document in the policy's)", n, err)
	}
	wantIndices(t, c, []string{names.For(day), names.Of(longer), names.Of(later), names.Of(dayAfter)}, []string{goneIndex})
	for _, m := range []domain.Message{gone, legacy} {
		if _, err := s.Get(t.Context(), scope, m.ID, now); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Get of purged %s: %v, want ErrNotFound", m.ID, err)
		}
	}
	waitReadable(t, s, now, later, dayAfter, longer, policy)
	if n, err := s.PurgeRetention(t.Context(), now, current); err != nil || n != 0 {
		t.Errorf("PurgeRetention again = %d, %v; want 0", n, err)
	}
}
