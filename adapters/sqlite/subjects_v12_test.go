package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A day file of version 12 keeps its subject index in the subjects table,
// which the migration to 13 leaves as it is: every reader reads it beside
// the word index's subject tokens, a backfill adds to the word index, and
// an erasure deletes from both.
func TestAVersion12DayFileKeepsItsSubjectRows(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().UTC().Add(-time.Minute)
	msgs := []domain.Message{newMessage(t, created, 50), newMessage(t, created.Add(time.Second), 50)}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const old, backfilled = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	path := filepath.Join(dir, "messages-"+created.Format("2006-01-02")+".db")
	takeBack(t, dir, path, undoVersion13, 12)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	// As version 12 indexed a message's subjects.
	if _, err := db.Exec(`INSERT INTO subjects(hash, seq) SELECT ?, seq FROM messages`, old); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = mustOpen(t, sqlite.Config{Dir: dir})
	ctx := opCtx(t)
	found := func(step, hash string, want int) {
		t.Helper()
		refs, err := s.SubjectMessages(ctx, ports.SubjectQuery{Account: scope.Account, Hashes: []string{hash}, Limit: 10})
		if err != nil || len(refs) != want {
			t.Errorf("%s: the subject %s finds %d messages (%v), want %d", step, hash, len(refs), err, want)
		}
	}
	found("migrated", old, 2)
	if _, hashes, err := s.MessageSubjects(ctx, scope.Account, msgs[0].ID); err != nil || !slices.Equal(hashes, []string{old}) {
		t.Errorf("MessageSubjects = %q, %v; want the row's hash", hashes, err)
	}
	hidden := domain.Query{Scope: scope, Limit: 10, Filter: domain.Filter{Hidden: domain.HiddenSubjectsOf([]string{old})}}
	if n := listAll(t, s, hidden, time.Now(), func(domain.Message) {}); n != 0 {
		t.Errorf("a filter hiding the subject lists %d messages, want none", n)
	}
	entry := ports.SubjectEntry{Ref: ports.SubjectRef{ID: msgs[0].ID, CreatedAt: msgs[0].CreatedAt}, Hashes: []string{backfilled}}
	if n, err := s.IndexSubjects(ctx, scope.Account, []ports.SubjectEntry{entry}); err != nil || n != 1 {
		t.Fatalf("IndexSubjects = %d, %v", n, err)
	}
	found("backfilled", backfilled, 1)
	if _, hashes, err := s.MessageSubjects(ctx, scope.Account, msgs[0].ID); err != nil || !slices.Equal(hashes, []string{old, backfilled}) {
		t.Errorf("MessageSubjects after the backfill = %q, %v; want both hashes", hashes, err)
	}
	refs, err := s.SubjectMessages(ctx, ports.SubjectQuery{Account: scope.Account, Hashes: []string{old}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Delete(ctx, scope.Account, refs); err != nil || n != 2 {
		t.Fatalf("Delete = %d, %v; want both messages", n, err)
	}
	found("deleted", old, 0)
	found("deleted", backfilled, 0)
	if err := s.Expunge(ctx); err != nil {
		t.Fatal(err)
	}
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM subjects`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("the subjects table holds %d rows (%v) after the erasure, want none", rows, err)
	}
}
