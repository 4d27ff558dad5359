package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// RunRewriteTests checks newStore's stores against the ports.MessageRewriter
// contract, which a re-scrub of stored messages needs: the scan reads a
// scope's messages of a range and applications oldest first, in pages that
// neither skip nor repeat one; a rewrite replaces the scrubbable fields and
// the rules record and nothing else, after which no read (Get, List, q,
// statistics) finds the old content; a rewrite of a message not stored
// stores nothing. Each subtest gets a fresh store, which must implement
// ports.MessageRewriter.
func RunRewriteTests(t *testing.T, newStore StoreMaker) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s ports.MessageStore, rw ports.MessageRewriter)
	}{
		{"ScanOldestFirstInPages", testRewriteScan},
		{"RewriteReplacesScrubbedFields", testRewriteReplaces},
		{"RewriteOfAnUnstoredMessageStoresNothing", testRewriteUnstored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := freshStore(t, newStore)
			rw, ok := s.(ports.MessageRewriter)
			if !ok {
				t.Fatalf("%T is not a ports.MessageRewriter", s)
			}
			tc.run(t, s, rw)
		})
	}
}

// scanAll reads every page of q (q.Limit a page), failing on a page over
// the limit.
func scanAll(t *testing.T, rw ports.MessageRewriter, q ports.RewriteScan) []domain.Message {
	t.Helper()
	var all []domain.Message
	for range maxPages {
		page, err := rw.ScanForRewrite(t.Context(), q)
		if err != nil {
			t.Fatalf("ScanForRewrite(%+v): %v", q.Scope, err)
		}
		if len(page) > q.Limit {
			t.Fatalf("ScanForRewrite returned %d messages, more than its limit %d", len(page), q.Limit)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		last := page[len(page)-1]
		q.After = &domain.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	t.Fatalf("ScanForRewrite did not end after %d pages", maxPages)
	return nil
}

func testRewriteScan(t *testing.T, s ports.MessageStore, rw ports.MessageRewriter) {
	f := newFixtures(t)
	from, to := f.ago(50*time.Hour), f.ago(time.Hour)
	// Three days of both applications, two messages at one instant, one not
	// yet visible, and messages outside the range and of other scopes.
	msgs := f.series(scopeLive, 14, f.ago(2*time.Hour), 3*time.Hour+17*time.Second, func(m *domain.Message) {
		if m.CreatedAt.Second()%2 == 0 {
			m.Name = "pay"
		}
	})
	msgs = append(msgs,
		f.message(scopeLive, msgs[3].CreatedAt),
		f.message(scopeLive, f.ago(4*time.Hour), func(m *domain.Message) { m.VisibleAt = f.now().Add(time.Hour) }),
		f.message(scopeLive, from.Add(-time.Microsecond)),
		f.message(scopeLive, to),
		f.message(scopeTest, f.ago(5*time.Hour)),
		f.message(scopeOtherLive, f.ago(5*time.Hour)),
	)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs[:len(msgs)-5])
	for _, names := range [][]string{nil, {"pay"}, {"shop", "pay"}, {"none"}} {
		var want []domain.Message
		for _, m := range msgs {
			if m.Scope() == scopeLive && !m.CreatedAt.Before(from) && m.CreatedAt.Before(to) &&
				(len(names) == 0 || slices.Contains(names, m.Name)) {
				want = append(want, m)
			}
		}
		slices.SortFunc(want, func(a, b domain.Message) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, limit := range []int{1, 4, 1000} {
			got := scanAll(t, rw, ports.RewriteScan{Scope: scopeLive, From: from, To: to, Names: names, Limit: limit})
			assertMessages(t, fmt.Sprintf("scan of %q by %d", names, limit), want, got)
		}
	}
}

func testRewriteReplaces(t *testing.T, s ports.MessageStore, rw ports.MessageRewriter) {
	f := newFixtures(t)
	const canary = "canary7f3e9"
	stored := f.message(scopeLive, f.ago(2*time.Hour), func(m *domain.Message) {
		m.Path = "/v1/users/" + canary + "?token=" + canary
		m.IPAddress = "198.51.100.23"
		m.Request.Header = domain.Header{"X-Partner": {canary, "kept"}, "Accept": {"*/*"}}
		m.Request.Body = `{"email":"` + canary + `@example.com","plan":"pro"}`
		m.Request.ContentType, m.Request.Size = "application/json", 44
		m.Response.Body = "hello " + canary
		m.Rules = domain.RulesRecord{Version: 1, Source: "api"}
	})
	other := f.message(scopeLive, f.ago(3*time.Hour), func(m *domain.Message) { m.Path = "/v1/others" })
	mustAppend(t, s, []domain.Message{stored, other})
	waitForStored(t, s, f.now(), []domain.Message{stored, other})

	scrubbed := stored.Clone()
	scrubbed.Path = "/v1/users/***?token=***"
	scrubbed.IPAddress = ""
	scrubbed.Request.Header = domain.Header{"X-Partner": {"hash:0011", "kept"}, "Accept": {"*/*"}}
	scrubbed.Request.Body = `{"email":"***","plan":"pro"}`
	scrubbed.Response.Body = "hello ***"
	scrubbed.Rules = domain.RulesRecord{Version: 1, Source: "api", Rescrubbed: 2,
		Changes: []domain.RuleChange{{Rule: "users", Field: "path"}, {Rule: "mails", Field: "request.body.email"}}}
	// What a rewrite must not change, changed in what it is given.
	given := scrubbed.Clone()
	given.Name, given.StatusCode, given.ExpiresAt = "other", 500, given.ExpiresAt.Add(time.Hour)
	if err := rw.RewriteMessages(t.Context(), []domain.Message{given}); err != nil {
		t.Fatalf("RewriteMessages: %v", err)
	}
	given.Request.Body = "changed after the call"
	if err := eventually(t.Context(), s, func() error {
		if diff := messageDiff(scrubbed, mustGet(t, s, scrubbed)); len(diff) > 0 {
			return fmt.Errorf("after the rewrite: %s", strings.Join(diff, "; "))
		}
		if found := searchIDs(t, s, canary, f.now()); len(found) > 0 {
			return fmt.Errorf("q=%s still finds %v", canary, found)
		}
		if found := searchIDs(t, s, "hello", f.now()); !slices.Equal(found, []string{stored.ID}) {
			return fmt.Errorf("q=hello finds %v, want the rewritten message", found)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	assertMessages(t, "List after the rewrite", []domain.Message{scrubbed, other},
		listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()))
	q := statsQuery(scopeLive, f.ago(24*time.Hour), f.anchor, "1h", domain.Filter{})
	assertStats(t, []domain.Message{scrubbed, other}, q, f.now(), getStats(t, s, q, f.now()))
	q = statsQuery(scopeLive, f.ago(24*time.Hour), f.anchor, "1h", domain.Filter{Text: canary})
	if got := getStats(t, s, q, f.now()); got.Total.Count != 0 {
		t.Errorf("statistics of q=%s count %d messages after the rewrite, want 0", canary, got.Total.Count)
	}
	if err := rw.ExpungeRewritten(t.Context(), f.ago(24*time.Hour), f.anchor); err != nil {
		t.Errorf("ExpungeRewritten: %v", err)
	}
	assertGet(t, s, scrubbed, f.now())
}

func testRewriteUnstored(t *testing.T, s ports.MessageStore, rw ports.MessageRewriter) {
	f := newFixtures(t)
	stored := f.message(scopeLive, f.ago(2*time.Hour))
	mustAppend(t, s, []domain.Message{stored})
	waitForStored(t, s, f.now(), []domain.Message{stored})
	absent := f.message(scopeLive, f.ago(2*time.Hour))
	if err := rw.RewriteMessages(t.Context(), []domain.Message{absent}); err != nil {
		t.Fatalf("RewriteMessages of a message not stored: %v", err)
	}
	if found, err := s.Lookup(t.Context(), scopeLive, []string{absent.ID}); err != nil || len(found) != 0 {
		t.Errorf("Lookup after rewriting a message not stored = %d messages, %v; want none", len(found), err)
	}
	assertHolds(t, s, "after rewriting another message", f.now(), []domain.Message{stored})
}

func mustGet(t *testing.T, s ports.MessageStore, m domain.Message) domain.Message {
	t.Helper()
	got, err := s.Get(t.Context(), m.Scope(), m.ID, m.VisibleAt.Add(time.Hour))
	if err != nil {
		t.Fatalf("Get(%s): %v", m.ID, err)
	}
	return got
}

// searchIDs are the ids of the messages of scopeLive a q of text finds.
func searchIDs(t *testing.T, s ports.MessageStore, text string, now time.Time) []string {
	t.Helper()
	return idsOf(listAll(t, s, scopeLive, domain.Filter{Text: text}, domain.MaxLimit, now))
}
