package elastic_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

const subjectCanary = "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c"

// deletedDocs is how many deleted documents index's segments still hold,
// on every copy.
func deletedDocs(t *testing.T, c cluster, index string) int64 {
	t.Helper()
	var rows []struct {
		Deleted string `json:"docs.deleted"`
	}
	c.must(http.MethodGet, "/_cat/segments/"+index+"?format=json&h=docs.deleted", nil, &rows)
	var n int64
	for _, r := range rows {
		d, err := strconv.ParseInt(r.Deleted, 10, 64)
		if err != nil {
			t.Fatalf("_cat/segments: docs.deleted %q: %v", r.Deleted, err)
		}
		n += d
	}
	return n
}

// What the erasure job does, step by step: a delete is seen by the next
// search at once (the job searches again until none is left), and Expunge
// leaves no deleted document in the segments of the day, while the
// others' messages stay.
func TestEraseDeletesAndExpunges(t *testing.T) {
	c := newCluster(t)
	s, cfg := newStore(t)
	now := time.Now().UTC()
	at := now.Add(-time.Hour)
	var erased, kept []domain.Message
	for i := range 6 {
		m := message(t, at.Add(time.Duration(i)*time.Second))
		if i%2 == 0 {
			m.Subjects = []string{subjectCanary}
			erased = append(erased, m)
		} else {
			kept = append(kept, m)
		}
		if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	waitReadable(t, s, now, append(erased, kept...)...)
	q := ports.SubjectQuery{Account: scope.Account, Hashes: []string{subjectCanary}, Limit: 10}
	refs, err := s.SubjectMessages(t.Context(), q)
	if err != nil || len(refs) != len(erased) {
		t.Fatalf("SubjectMessages = %d refs, %v; want %d", len(refs), err, len(erased))
	}
	if n, err := s.Hide(t.Context(), scope.Account, refs); err != nil || n != int64(len(refs)) {
		t.Fatalf("Hide = %d, %v; want %d", n, err, len(refs))
	}
	for _, m := range erased {
		if _, err := s.Get(t.Context(), scope, m.ID, now); err == nil {
			t.Errorf("Get(%s) right after Hide found it", m.ID)
		}
	}
	if n, err := s.Delete(t.Context(), scope.Account, refs); err != nil || n != int64(len(refs)) {
		t.Fatalf("Delete = %d, %v; want %d", n, err, len(refs))
	}
	if left, err := s.SubjectMessages(t.Context(), q); err != nil || len(left) != 0 {
		t.Fatalf("SubjectMessages right after Delete = %d refs, %v; want none", len(left), err)
	}
	index := cfg.IndexPrefix + "-messages-" + at.Format("2006.01.02")
	if n := deletedDocs(t, c, index); n == 0 {
		t.Fatalf("%s holds no deleted document before Expunge: the test shows nothing", index)
	}
	start := time.Now()
	if err := s.Expunge(t.Context()); err != nil {
		t.Fatalf("Expunge: %v", err)
	}
	t.Logf("Expunge took %s", time.Since(start).Round(time.Millisecond))
	if n := deletedDocs(t, c, index); n != 0 {
		t.Errorf("%s still holds %d deleted documents after Expunge", index, n)
	}
	waitReadable(t, s, now, kept...)
}
