package sqlite_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A subject's messages of one day in two retention classes' files are
// indexed, found (each ref naming its own file, newest first across the
// files, page after page), hidden and deleted in both.
func TestAnErasureReachesEveryClassFileOfADay(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	ctx := opCtx(t)
	created := time.Now().UTC().Add(-time.Hour)
	msgs := []domain.Message{
		newMessage(t, created, 10),
		classed(newMessage(t, created.Add(time.Second), 10), "payments"),
	}
	if err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	const hash = "0123456789abcdef0123456789abcdef"
	entries := make([]ports.SubjectEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = ports.SubjectEntry{Ref: ports.SubjectRef{ID: m.ID, CreatedAt: m.CreatedAt}, Hashes: []string{hash}}
	}
	if n, err := s.IndexSubjects(ctx, scope.Account, entries); n != 2 || err != nil {
		t.Fatalf("IndexSubjects = %d, %v; want both messages found", n, err)
	}
	refs, err := s.SubjectMessages(ctx, ports.SubjectQuery{Account: scope.Account, Hashes: []string{hash}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, r := range refs {
		files = append(files, r.Partition)
	}
	slices.Sort(files)
	if want := dayFiles(t, dir, created); !slices.Equal(files, want) || len(files) != 2 || !strings.Contains(files[1], ".r") {
		t.Fatalf("the refs' partitions: %q, want the day's two files %q", files, want)
	}
	var paged []string
	q := ports.SubjectQuery{Account: scope.Account, Hashes: []string{hash}, Limit: 1}
	for range 3 {
		page, err := s.SubjectMessages(ctx, q)
		if err != nil || len(page) == 0 {
			break
		}
		paged = append(paged, page[0].ID)
		after := page[0].Cursor()
		q.After = &after
	}
	if want := []string{msgs[1].ID, msgs[0].ID}; !slices.Equal(paged, want) {
		t.Errorf("the subject's messages in pages of one: %q, want the class's newer one, then the policy's %q", paged, want)
	}
	if n, err := s.Hide(ctx, scope.Account, refs); n != 2 || err != nil {
		t.Errorf("Hide = %d, %v; want both", n, err)
	}
	if n, err := s.Delete(ctx, scope.Account, refs); n != 2 || err != nil {
		t.Errorf("Delete = %d, %v; want both", n, err)
	}
	for _, m := range msgs {
		if _, err := s.Get(ctx, scope, m.ID, time.Now()); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Get of an erased message of class %q = %v, want ErrNotFound", m.RetentionRule, err)
		}
	}
}
