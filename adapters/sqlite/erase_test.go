package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// canary is the subject's value, in every message of the subject: its bytes
// must leave the data directory with them.
const canary = "canary-ana-7f3a9c@example.com"

// canaryToken is the word index's token of the canary's word only it holds.
func canaryToken(t *testing.T) string {
	t.Helper()
	token, oneWord := dayfile.Words("7f3a9c")
	if !oneWord || token == "" {
		t.Fatalf("the canary's word 7f3a9c is no token: %q", token)
	}
	return token
}

// subjectMessages appends n messages of the canary's subject among others,
// in several transactions, some with bodies too large for one page, and
// returns the subject's.
func subjectMessages(t *testing.T, s *sqlite.Store, start time.Time, n int) (subject, others []domain.Message) {
	t.Helper()
	const hash = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	for batch := range 5 {
		var msgs []domain.Message
		for i := range 40 {
			at := start.Add(time.Duration(batch*40+i) * time.Second)
			m := newMessage(t, at, 200+(i%3)*3000)
			if i%(40/n*5+1) == 0 && len(subject) < n {
				m.Subjects = []string{hash}
				m.Request.Header = domain.Header{"X-User-Email": {canary}}
				m.Request.Body = `{"email":"` + canary + `","note":"` + strings.Repeat("x", (i%3)*5000) + `"}`
				subject = append(subject, m)
			} else {
				others = append(others, m)
			}
			msgs = append(msgs, m)
		}
		if err := s.Append(opCtx(t), msgs); err != nil {
			t.Fatal(err)
		}
	}
	return subject, others
}

// countListed counts the messages of scope List shows at now, page by page.
func countListed(t *testing.T, s *sqlite.Store, f domain.Filter, now time.Time) int {
	t.Helper()
	q := domain.Query{Scope: scope, Limit: domain.MaxLimit, Filter: f}
	n := 0
	for {
		page, err := s.List(opCtx(t), q, now)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		n += len(page.Messages)
		if !page.HasMore {
			return n
		}
		last := page.Messages[len(page.Messages)-1]
		q.After = &domain.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

func refsOf(msgs []domain.Message) []ports.SubjectRef {
	refs := make([]ports.SubjectRef, len(msgs))
	for i, m := range msgs {
		refs[i] = ports.SubjectRef{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt}
	}
	return refs
}

// eraseLeavingNoCanary hides, deletes and expunges subject's messages, as
// the erasure job does, and checks that no file of dir holds the canary.
func eraseLeavingNoCanary(t *testing.T, s *sqlite.Store, dir string, subject []domain.Message) {
	t.Helper()
	ctx := opCtx(t)
	if n, err := s.Hide(ctx, scope.Account, refsOf(subject)); err != nil || n != int64(len(subject)) {
		t.Fatalf("Hide = %d, %v; want %d", n, err, len(subject))
	}
	if n, err := s.Delete(ctx, scope.Account, refsOf(subject)); err != nil || n != int64(len(subject)) {
		t.Fatalf("Delete = %d, %v; want %d", n, err, len(subject))
	}
	if err := s.Expunge(ctx); err != nil {
		t.Fatal(err)
	}
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) > 0 {
		t.Errorf("the canary is still in %v after the erasure", holding)
	}
}

// After Delete and Expunge no byte of an erased message's text is left in
// the data directory: not in the day file (rows, indexes, free pages, the
// word index), not in its WAL; the other messages read as they were.
func TestErasedMessagesLeaveNoByteInTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	start := time.Now().UTC().Add(-2 * time.Hour)
	subject, others := subjectMessages(t, s, start, 8)
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) == 0 {
		t.Fatal("the canary is in no file before the erasure: the test proves nothing")
	}
	if err := s.Close(); err != nil { // the WAL checkpointed: the word index's pages in the file
		t.Fatal(err)
	}
	if holding := conformance.FilesHolding(t, dir, canaryToken(t)); len(holding) == 0 {
		t.Fatal("the canary's word index token is in no file before the erasure: the test proves nothing")
	}
	s = mustOpen(t, sqlite.Config{Dir: dir})
	eraseLeavingNoCanary(t, s, dir, subject)
	// Nor the word index's token of a word only the canary holds.
	if holding := conformance.FilesHolding(t, dir, canaryToken(t)); len(holding) > 0 {
		t.Errorf("the canary's word index token is still in %v after the erasure", holding)
	}
	now := time.Now()
	for _, q := range []string{"", "canary", "lorem"} {
		want := map[string]int{"": len(others), "canary": 0, "lorem": len(others)}[q]
		if got := countListed(t, s, domain.Filter{Text: q}, now); got != want {
			t.Errorf("List(q=%q) after the erasure = %d messages; want %d", q, got, want)
		}
	}
	// More messages after, and the word index still answers.
	more := newMessage(t, start.Add(time.Hour), 100)
	if err := s.Append(opCtx(t), []domain.Message{more}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(opCtx(t), scope, more.ID, now); err != nil {
		t.Errorf("a message appended after the erasure: %v", err)
	}
}

// Many batches of bodies of many sizes, pages split and rebuilt, then a
// tenth of the messages erased: none of their bytes is left.
func TestErasuresAmongManyWritesLeaveNoByte(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	start := time.Now().UTC().Add(-3 * time.Hour)
	var erased []domain.Message
	for batch := range 60 {
		var msgs []domain.Message
		for i := range 30 {
			n := batch*30 + i
			m := newMessage(t, start.Add(time.Duration(n)*time.Second), (n*7919)%9000)
			if n%10 == 3 {
				m.Subjects = []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"}
				m.Request.Body = strings.Repeat("p", (n*131)%6000) + canary + strings.Repeat("q", (n*17)%300)
				m.Path = "/v1/users/" + strings.Repeat("u", n%40)
				erased = append(erased, m)
			}
			msgs = append(msgs, m)
		}
		if err := s.Append(opCtx(t), msgs); err != nil {
			t.Fatal(err)
		}
	}
	ctx := opCtx(t)
	if _, err := s.Delete(ctx, scope.Account, refsOf(erased)); err != nil {
		t.Fatal(err)
	}
	if err := s.Expunge(ctx); err != nil {
		t.Fatal(err)
	}
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) > 0 {
		t.Errorf("the canary is still in %v after the erasure", holding)
	}
}

// A day file of schema version 5, written without secure_delete, is
// vacuumed at its first erasure, and only then: its pages' free space may
// hold copies of what is erased.
func TestAnOlderDayFileIsVacuumedAtItsFirstErasure(t *testing.T) {
	dir := t.TempDir()
	// Headers and bodies as text, as version 5 stored them.
	s, err := sqlite.NewWithLayout(opCtx(t), sqlite.Config{Dir: dir}, dayfile.Layout{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := subjectMessages(t, s, time.Now().UTC().Add(-time.Hour), 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(dir, "messages-"+subject[0].CreatedAt.Format("2006-01-02")+".db")
	takeBack(t, dir, day, undoVersion8+"DROP TABLE erasure; DROP TABLE subjects; ALTER TABLE messages DROP COLUMN content", 5)
	vacuumFirst := func() (v int) {
		t.Helper()
		// The store has the file open: wait for its locks, do not fail on them.
		db, err := sql.Open("sqlite", "file:"+day+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow("SELECT vacuum_first FROM erasure").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	s = mustOpen(t, sqlite.Config{Dir: dir})
	if v := vacuumFirst(); v != 1 {
		t.Fatalf("a day file migrated from version 5 has vacuum_first %d, want 1", v)
	}
	if n, err := s.Delete(opCtx(t), scope.Account, refsOf(subject[:1])); err != nil || n != 1 {
		t.Fatalf("Delete = %d, %v", n, err)
	}
	if v := vacuumFirst(); v != 0 {
		t.Errorf("after its first erasure vacuum_first is %d, want 0", v)
	}
}

// Delete leaves the erased words' tokens in the word index's older segments
// and records in the day file that their merge is owed: a process stopped
// before Expunge merges them at the next Expunge after its restart.
func TestTheWordIndexMergeAnErasureOwesSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	start := time.Now().UTC().Add(-2 * time.Hour)
	subject, others := subjectMessages(t, s, start, 8)
	if n, err := s.Delete(opCtx(t), scope.Account, refsOf(subject)); err != nil || n != int64(len(subject)) {
		t.Fatalf("Delete = %d, %v; want %d", n, err, len(subject))
	}
	if err := s.Close(); err != nil { // stopped before Expunge; the WAL checkpointed
		t.Fatal(err)
	}
	if holding := conformance.FilesHolding(t, dir, canaryToken(t)); len(holding) == 0 {
		t.Fatal("the canary's word index token is in no file before Expunge: the merge was not left to it")
	}
	s = mustOpen(t, sqlite.Config{Dir: dir})
	if got := countListed(t, s, domain.Filter{Text: "canary"}, time.Now()); got != 0 {
		t.Errorf("List(q=canary) between Delete and Expunge = %d messages; want 0", got)
	}
	if err := s.Expunge(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if holding := conformance.FilesHolding(t, dir, canaryToken(t)); len(holding) > 0 {
		t.Errorf("the canary's word index token is still in %v after the Expunge after a restart", holding)
	}
	if got := countListed(t, s, domain.Filter{Text: "lorem"}, time.Now()); got != len(others) {
		t.Errorf("List(q=lorem) after the merge = %d messages; want %d", got, len(others))
	}
}
