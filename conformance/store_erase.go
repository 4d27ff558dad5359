package conformance

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// RunEraseTests checks newStore's stores against the ports.Eraser contract:
// the subject index written with each message finds an account's messages
// by subject hash (domain, creation bound, cursor and limit), Hide takes
// them out of every read at once while the index still finds them, and
// Delete removes them, leaving every other message as it was. Each subtest
// gets a fresh store, which must implement ports.Eraser.
func RunEraseTests(t *testing.T, newStore StoreMaker) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s ports.MessageStore, e ports.Eraser)
	}{
		{"SubjectIndexFindsAnAccountsMessages", testSubjectIndex},
		{"SubjectIndexPagesNewestFirst", testSubjectPaging},
		{"MessageSubjectsFindsOneMessage", testMessageSubjects},
		{"RefsNameTheirPartition", testRefPartitions},
		{"IndexSubjectsAddsToTheIndex", testIndexSubjects},
		{"ReadsNeverReturnSubjects", testSubjectsNotRead},
		{"HideTakesMessagesOutOfEveryRead", testHide},
		{"HiddenSubjectsAreLeftOutOfReads", testHiddenSubjects},
		{"DeleteRemovesMessagesAndTheirIndex", testDelete},
		{"AnotherAccountErasesNothing", testEraseOtherAccount},
		{"TalliesOfASubjectAreErasedWithIt", testEraseTallies},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := freshStore(t, newStore)
			e, ok := s.(ports.Eraser)
			if !ok {
				t.Fatalf("%T does not implement ports.Eraser", s)
			}
			tc.run(t, s, e)
		})
	}
}

// Subject hashes of the fixtures: what rules.SubjectHash gives, 32 hex digits.
const (
	subjectAna = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	subjectBob = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"
	subjectEve = "0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e"
)

// subjectsFixture is messages of ana (live and test), of ana and bob, of bob
// alone, of none, and of ana in another account, each a minute older than
// the one before, with a canary word in ana's bodies.
type subjectsFixture struct {
	ana, bob, none, other []domain.Message
	all                   []domain.Message
}

func newSubjectsFixture(t *testing.T, s ports.MessageStore) (fixtures, subjectsFixture) {
	f := newFixtures(t)
	var x subjectsFixture
	at := f.ago(time.Hour)
	next := func(scope domain.Scope, subjects ...string) domain.Message {
		at = at.Add(-time.Minute)
		return f.message(scope, at, func(m *domain.Message) {
			m.Subjects = subjects
			if slices.Contains(subjects, subjectAna) {
				m.Request.Body = `{"note":"canary","email":"ana.canary@example.com"}`
			}
		})
	}
	x.ana = []domain.Message{next(scopeLive, subjectAna), next(scopeTest, subjectAna), next(scopeLive, subjectBob, subjectAna)}
	x.bob = []domain.Message{x.ana[2], next(scopeLive, subjectBob)}
	x.none = []domain.Message{next(scopeLive), next(scopeTest)}
	x.other = []domain.Message{next(scopeOtherLive, subjectAna)}
	for _, group := range [][]domain.Message{x.ana, x.bob[1:], x.none, x.other} {
		x.all = append(x.all, group...)
	}
	mustAppend(t, s, x.all)
	waitForStored(t, s, f.now(), x.all)
	return f, x
}

// findSubjects is SubjectMessages, failing the test on an error.
func findSubjects(t *testing.T, e ports.Eraser, q ports.SubjectQuery) []ports.SubjectRef {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 1000
	}
	refs, err := e.SubjectMessages(t.Context(), q)
	if err != nil {
		t.Fatalf("SubjectMessages(%+v): %v", q, err)
	}
	return refs
}

// assertRefs fails unless refs are want's, in List order.
func assertRefs(t *testing.T, what string, want []domain.Message, refs []ports.SubjectRef) {
	t.Helper()
	want = cloneAll(want)
	sortNewestFirst(want)
	got := make([]string, len(refs))
	for i, r := range refs {
		got[i] = r.ID
	}
	if !slices.Equal(idsOf(want), got) {
		t.Errorf("%s: SubjectMessages = %s, want %s", what, abbreviate(got), abbreviate(idsOf(want)))
		return
	}
	for i, r := range refs {
		if r.Domain != want[i].Domain || !r.CreatedAt.Equal(want[i].CreatedAt) {
			t.Errorf("%s: ref %d = %+v, want domain %s, created %s", what, i, r, want[i].Domain, domain.FormatTime(want[i].CreatedAt))
		}
	}
}

// refsOf are msgs' refs.
func refsOf(msgs []domain.Message) []ports.SubjectRef {
	refs := make([]ports.SubjectRef, len(msgs))
	for i, m := range msgs {
		refs[i] = ports.SubjectRef{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt}
	}
	return refs
}

func testSubjectIndex(t *testing.T, _ ports.MessageStore, e ports.Eraser) {
	_, x := newSubjectsFixture(t, e.(ports.MessageStore))
	acme := scopeLive.Account
	assertRefs(t, "ana", x.ana, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna}}))
	assertRefs(t, "bob", x.bob, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectBob}}))
	// A message of both is found once.
	both := append(cloneAll(x.ana), x.bob[1])
	assertRefs(t, "ana or bob", both, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectBob, subjectAna}}))
	assertRefs(t, "eve", nil, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectEve}}))
	assertRefs(t, "ana in the live domain", []domain.Message{x.ana[0], x.ana[2]},
		findSubjects(t, e, ports.SubjectQuery{Account: acme, Domain: domain.DomainLive, Hashes: []string{subjectAna}}))
	assertRefs(t, "ana in another account", x.other,
		findSubjects(t, e, ports.SubjectQuery{Account: scopeOtherLive.Account, Hashes: []string{subjectAna}}))
	assertRefs(t, "ana created up to her second message", x.ana[1:],
		findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna}, CreatedBefore: x.ana[1].CreatedAt}))
}

func testMessageSubjects(t *testing.T, _ ports.MessageStore, e ports.Eraser) {
	_, x := newSubjectsFixture(t, e.(ports.MessageStore))
	acme := scopeLive.Account
	for _, tc := range []struct {
		m    domain.Message
		want []string
	}{{x.ana[1], []string{subjectAna}}, {x.bob[0], []string{subjectAna, subjectBob}}, {x.none[1], nil}} {
		ref, hashes, err := e.MessageSubjects(t.Context(), acme, tc.m.ID)
		if err != nil {
			t.Errorf("MessageSubjects(%s): %v", tc.m.ID, err)
			continue
		}
		slices.Sort(hashes)
		if !slices.Equal(hashes, tc.want) {
			t.Errorf("MessageSubjects(%s) hashes = %v, want %v", tc.m.ID, hashes, tc.want)
		}
		if ref.ID != tc.m.ID || ref.Domain != tc.m.Domain || !ref.CreatedAt.Equal(tc.m.CreatedAt) {
			t.Errorf("MessageSubjects(%s) ref = %+v, want domain %s, created %s", tc.m.ID, ref, tc.m.Domain, domain.FormatTime(tc.m.CreatedAt))
		}
	}
	for _, id := range []string{x.other[0].ID, "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"} {
		if _, _, err := e.MessageSubjects(t.Context(), acme, id); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("MessageSubjects of %s, no message of the account: %v, want ErrNotFound", id, err)
		}
	}
}

// A SubjectIndexer adds hashes to stored messages' entries, keeping those
// they had, and skips another account's message.
func testIndexSubjects(t *testing.T, _ ports.MessageStore, e ports.Eraser) {
	indexer, ok := e.(ports.SubjectIndexer)
	if !ok {
		t.Skipf("%T is no ports.SubjectIndexer: the subject index is not backfilled", e)
	}
	_, x := newSubjectsFixture(t, e.(ports.MessageStore))
	acme := scopeLive.Account
	entry := func(m domain.Message, hashes ...string) ports.SubjectEntry {
		return ports.SubjectEntry{Ref: refsOf([]domain.Message{m})[0], Hashes: hashes}
	}
	entries := []ports.SubjectEntry{entry(x.none[0], subjectEve), entry(x.none[1], subjectEve, subjectAna),
		entry(x.bob[1], subjectEve), entry(x.other[0], subjectEve)}
	for range 2 { // twice: the same entries again change nothing
		n, err := indexer.IndexSubjects(t.Context(), acme, entries)
		if err != nil || n != 3 {
			t.Fatalf("IndexSubjects = %d, %v; want 3 (another account's message skipped)", n, err)
		}
	}
	if err := eventually(t.Context(), e.(ports.MessageStore), func() error {
		if n := len(findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectEve}})); n != 3 {
			return fmt.Errorf("the subject index finds %d messages of the new entries, want 3", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	assertRefs(t, "eve", []domain.Message{x.none[0], x.none[1], x.bob[1]}, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectEve}}))
	assertRefs(t, "ana", append(cloneAll(x.ana), x.none[1]), findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna}}))
	assertRefs(t, "bob", x.bob, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectBob}}))
	assertRefs(t, "eve in another account", nil, findSubjects(t, e, ports.SubjectQuery{Account: scopeOtherLive.Account, Hashes: []string{subjectEve}}))
}

// Refs of messages of one day name one partition, and MessageSubjects the
// same one; a store that names partitions names another for another day.
func testRefPartitions(t *testing.T, _ ports.MessageStore, e ports.Eraser) {
	f := newFixtures(t)
	s := e.(ports.MessageStore)
	msgs := f.series(scopeLive, 4, f.ago(time.Hour), 10*time.Hour, func(m *domain.Message) { m.Subjects = []string{subjectAna} })
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	refs := findSubjects(t, e, ports.SubjectQuery{Account: scopeLive.Account, Hashes: []string{subjectAna}})
	byDay := map[string]string{}
	for _, r := range refs {
		day := r.CreatedAt.UTC().Format(time.DateOnly)
		if p, ok := byDay[day]; ok && p != r.Partition {
			t.Errorf("messages of %s are in partitions %q and %q", day, p, r.Partition)
		}
		byDay[day] = r.Partition
		ref, _, err := e.MessageSubjects(t.Context(), scopeLive.Account, r.ID)
		if err != nil || ref.Partition != r.Partition {
			t.Errorf("MessageSubjects(%s) partition = %q, %v; SubjectMessages said %q", r.ID, ref.Partition, err, r.Partition)
		}
	}
	partitions := map[string]bool{}
	for _, p := range byDay {
		partitions[p] = true
	}
	if len(byDay) < 2 {
		t.Fatalf("the messages span %d days, want 2 or more", len(byDay))
	}
	if !partitions[""] && len(partitions) != len(byDay) {
		t.Errorf("%d days of messages are in %d partitions: %v", len(byDay), len(partitions), byDay)
	}
}

func testSubjectPaging(t *testing.T, _ ports.MessageStore, e ports.Eraser) {
	f := newFixtures(t)
	s := e.(ports.MessageStore)
	msgs := f.series(scopeLive, 7, f.ago(time.Hour), 17*time.Hour, func(m *domain.Message) { m.Subjects = []string{subjectAna} })
	// Two of one time, for the ID tie-break.
	msgs = append(msgs, f.message(scopeLive, msgs[3].CreatedAt, func(m *domain.Message) { m.Subjects = []string{subjectAna} }))
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	var got []ports.SubjectRef
	q := ports.SubjectQuery{Account: scopeLive.Account, Hashes: []string{subjectAna}, Limit: 3}
	for range len(msgs) {
		page := findSubjects(t, e, q)
		if len(page) > q.Limit {
			t.Fatalf("a page of %d refs, over its limit of %d", len(page), q.Limit)
		}
		got = append(got, page...)
		if len(page) < q.Limit {
			break
		}
		after := page[len(page)-1].Cursor()
		q.After = &after
	}
	assertRefs(t, "pages of 3", msgs, got)
}

func testSubjectsNotRead(t *testing.T, s ports.MessageStore, _ ports.Eraser) {
	f, x := newSubjectsFixture(t, s)
	for _, m := range listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()) {
		if m.Subjects != nil {
			t.Errorf("List returned message %s with its subjects %v", m.ID, m.Subjects)
		}
	}
	got, err := s.Get(t.Context(), scopeLive, x.ana[0].ID, f.now())
	if err != nil || got.Subjects != nil {
		t.Errorf("Get(%s) = subjects %v, %v; want none, nil", x.ana[0].ID, got.Subjects, err)
	}
}

// assertUnreadable fails unless no read of msgs' scopes at now returns one
// of msgs.
func assertUnreadable(t *testing.T, s ports.MessageStore, now time.Time, msgs []domain.Message) {
	t.Helper()
	hidden := map[string]bool{}
	for _, m := range msgs {
		hidden[m.ID] = true
		assertNotFound(t, s, m.Scope(), m.ID, now)
		assertNotFound(t, s, m.Scope(), m.Reference, now)
	}
	for _, scope := range []domain.Scope{scopeLive, scopeTest, scopeOtherLive} {
		for _, filter := range []domain.Filter{{}, {Text: "canary"}, {Name: "shop"}} {
			for _, m := range listAll(t, s, scope, filter, domain.MaxLimit, now) {
				if hidden[m.ID] {
					t.Errorf("List(%+v, %s) returned hidden message %s", scope, describeFilter(filter), m.ID)
				}
			}
		}
	}
}

// assertReadable fails unless every one of msgs reads as appended.
func assertReadable(t *testing.T, s ports.MessageStore, now time.Time, msgs []domain.Message) {
	t.Helper()
	for _, m := range msgs {
		want := m
		want.Subjects = nil
		assertGet(t, s, want, now)
	}
}

func testHide(t *testing.T, s ports.MessageStore, e ports.Eraser) {
	f, x := newSubjectsFixture(t, s)
	acme := scopeLive.Account
	n, err := e.Hide(t.Context(), acme, refsOf(x.ana))
	if err != nil || n != int64(len(x.ana)) {
		t.Fatalf("Hide(ana's %d messages) = %d, %v", len(x.ana), n, err)
	}
	err = eventually(t.Context(), s, func() error {
		for _, m := range x.ana {
			if _, err := s.Get(t.Context(), m.Scope(), m.ID, f.now()); err == nil {
				return fmt.Errorf("hidden message %s still read", m.ID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	assertUnreadable(t, s, f.now(), x.ana)
	assertReadable(t, s, f.now(), append(append([]domain.Message{x.bob[1]}, x.none...), x.other...))
	assertRefs(t, "ana once hidden", x.ana, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna}}))
	if n, err := e.Hide(t.Context(), acme, refsOf(x.ana)); err != nil {
		t.Errorf("Hide again = %d, %v; want no error", n, err)
	}
	// A purge leaves hidden messages to the erasure job, which deletes and
	// counts them: the receipt's counts stay true.
	if _, err := s.PurgeExpired(t.Context(), f.now()); err != nil {
		t.Fatal(err)
	}
	assertRefs(t, "ana hidden, after a purge", x.ana, findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna}}))
}

// testHiddenSubjects: a filter's Hidden (a pending erasure's subjects)
// leaves their messages out of List and Stats, whatever else the filter
// asks, reads every other message as before, and the index still finds
// them.
func testHiddenSubjects(t *testing.T, s ports.MessageStore, e ports.Eraser) {
	f, x := newSubjectsFixture(t, s)
	hidden := &domain.HiddenSubjects{Hashes: []string{subjectAna, subjectEve}}
	var others []domain.Message // every message but ana's
	for _, m := range x.all {
		if !slices.Contains(idsOf(x.ana), m.ID) {
			others = append(others, m)
		}
	}
	from, to := statsRange(f)
	for _, scope := range []domain.Scope{scopeLive, scopeTest} {
		for _, filter := range []domain.Filter{{}, {Text: "canary"}, {Name: "shop"}} {
			var want []domain.Message
			for _, m := range others {
				if m.Scope() == scope && filter.Matches(m) {
					want = append(want, m)
				}
			}
			sortNewestFirst(want)
			what := fmt.Sprintf("List(%+v, %s) hiding ana", scope, describeFilter(filter))
			filter.Hidden = hidden
			assertIDs(t, what, want, listAll(t, s, scope, filter, domain.MaxLimit, f.now()))
			q := statsQuery(scope, from, to, "1h", filter)
			assertStats(t, others, q, f.now(), getStats(t, s, q, f.now()))
		}
	}
	assertIDs(t, "another account's ana, read without hiding", x.other, listAll(t, s, scopeOtherLive, domain.Filter{}, domain.MaxLimit, f.now()))
	assertRefs(t, "ana, hidden from reads", x.ana, findSubjects(t, e, ports.SubjectQuery{Account: scopeLive.Account, Hashes: []string{subjectAna}}))
}

func testDelete(t *testing.T, s ports.MessageStore, e ports.Eraser) {
	f, x := newSubjectsFixture(t, s)
	acme := scopeLive.Account
	if _, err := e.Hide(t.Context(), acme, refsOf(x.ana)); err != nil {
		t.Fatal(err)
	}
	n, err := e.Delete(t.Context(), acme, refsOf(x.ana))
	if err != nil || n != int64(len(x.ana)) {
		t.Fatalf("Delete(ana's %d messages) = %d, %v", len(x.ana), n, err)
	}
	if err := e.Expunge(t.Context()); err != nil {
		t.Fatalf("Expunge: %v", err)
	}
	err = eventually(t.Context(), s, func() error {
		if refs, err := e.SubjectMessages(t.Context(), ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna, subjectBob}, Limit: 10}); err != nil || len(refs) != 1 {
			return fmt.Errorf("SubjectMessages(ana or bob) after the delete = %d refs, %v; want bob's one", len(refs), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, scope := range []domain.Scope{scopeLive, scopeTest} {
		found, err := s.Lookup(t.Context(), scope, idsOf(x.ana))
		if err != nil || len(found) != 0 {
			t.Errorf("Lookup(%+v, ana's ids) after the delete = %d messages, %v; want none", scope, len(found), err)
		}
	}
	assertUnreadable(t, s, f.now(), x.ana)
	assertReadable(t, s, f.now(), append(append([]domain.Message{x.bob[1]}, x.none...), x.other...))
	assertRefs(t, "ana in another account", x.other,
		findSubjects(t, e, ports.SubjectQuery{Account: scopeOtherLive.Account, Hashes: []string{subjectAna}}))
	if n, err := e.Delete(t.Context(), acme, refsOf(x.ana)); err != nil || n != 0 {
		t.Errorf("Delete again = %d, %v; want 0, nil", n, err)
	}
}

func testEraseOtherAccount(t *testing.T, s ports.MessageStore, e ports.Eraser) {
	f, x := newSubjectsFixture(t, s)
	other := scopeOtherLive.Account
	if n, err := e.Hide(t.Context(), other, refsOf(x.ana)); err != nil || n != 0 {
		t.Errorf("Hide(acme's messages as %s) = %d, %v; want 0, nil", other, n, err)
	}
	if n, err := e.Delete(t.Context(), other, refsOf(x.ana)); err != nil || n != 0 {
		t.Errorf("Delete(acme's messages as %s) = %d, %v; want 0, nil", other, n, err)
	}
	assertReadable(t, s, f.now(), x.all)
}

// testEraseTallies: tallies carry subject hashes (a tally's path may hold a
// subject's value); SubjectMessages never returns one, EraseTallies deletes
// those of the subject, of the account asked, and nothing twice.
func testEraseTallies(t *testing.T, s ports.MessageStore, e ports.Eraser) {
	tallies, ok := e.(ports.TallyEraser)
	if !ok {
		t.Fatalf("%T keeps tallies but is no ports.TallyEraser", e)
	}
	f := newFixtures(t)
	at := f.ago(time.Hour)
	next := func(scope domain.Scope, tally bool, subjects ...string) domain.Message {
		at = at.Add(-time.Minute)
		m := f.message(scope, at, func(m *domain.Message) { m.Subjects, m.Path = subjects, "/users/ana.canary@example.com" })
		if tally {
			m = m.AsTally()
		}
		return m
	}
	message := next(scopeLive, false, subjectAna)
	msgs := []domain.Message{message, next(scopeLive, true, subjectAna), next(scopeTest, true, subjectBob, subjectAna),
		next(scopeLive, true, subjectBob), next(scopeOtherLive, true, subjectAna)}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs[:1])
	acme, other := scopeLive.Account, scopeOtherLive.Account
	assertRefs(t, "ana, her tallies left out", msgs[:1], findSubjects(t, e, ports.SubjectQuery{Account: acme, Hashes: []string{subjectAna}}))
	erase := func(account string, hashes ...string) int64 {
		t.Helper()
		n, err := tallies.EraseTallies(t.Context(), ports.SubjectQuery{Account: account, Hashes: hashes})
		if err != nil {
			t.Fatalf("EraseTallies(%s, %v): %v", account, hashes, err)
		}
		return n
	}
	if n := erase(acme, subjectEve); n != 0 {
		t.Errorf("EraseTallies(eve) = %d, want 0", n)
	}
	if n := erase(acme, subjectAna); n != 2 {
		t.Errorf("EraseTallies(ana) = %d, want her 2 tallies of the account, both domains", n)
	}
	if n := erase(acme, subjectAna); n != 0 {
		t.Errorf("EraseTallies(ana) again = %d, want 0", n)
	}
	if n := erase(acme, subjectBob); n != 1 {
		t.Errorf("EraseTallies(bob) = %d, want his tally left (the one of both went with ana)", n)
	}
	if n := erase(other, subjectAna); n != 1 {
		t.Errorf("EraseTallies(ana) in another account = %d, want its 1", n)
	}
	assertReadable(t, s, f.now(), msgs[:1])
}
