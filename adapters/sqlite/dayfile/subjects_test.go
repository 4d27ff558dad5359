package dayfile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A subject's messages are found from the subject index, by seq, whatever
// else the query narrows by: never by walking the account's messages (a
// million of them a day, for the 50 a subject has).
func TestSubjectsAreFoundByTheIndexNotByTheAccount(t *testing.T) {
	d, err := Open(t.Context(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	f, err := d.Acquire(t.Context(), Part{Day: DayOf(time.Now())}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	after := &domain.Cursor{CreatedAt: time.Now(), ID: "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"}
	for _, q := range []ports.SubjectQuery{
		{Account: "acme", Hashes: []string{"0a"}, Limit: 100},
		{Account: "acme", Domain: domain.DomainLive, Hashes: []string{"0a", "0b"}, CreatedBefore: time.Now(), After: after, Limit: 500},
	} {
		query, args := subjectsQuery(q)
		rows, err := f.Read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, "SEARCH messages USING INTEGER PRIMARY KEY (rowid=?)") ||
			!strings.Contains(text, "SEARCH subjects USING PRIMARY KEY (hash=?)") {
			t.Errorf("the plan of %+v: %s; want messages searched by rowid from the subject index", q, text)
		}
	}
}

// An Append's subject rows are inserted in one statement: every message's
// hashes are indexed under its seq, however many rows the batch holds, and a
// hash a message lists twice is indexed once.
func TestAppendIndexesEverySubjectOfABatch(t *testing.T) {
	d, err := Open(t.Context(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	now := time.Now()
	f, err := d.Acquire(t.Context(), Part{Day: DayOf(now)}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	msgs := make([]domain.Message, 300)
	for i := range msgs {
		own := fmt.Sprintf("%032x", i)
		msgs[i] = domain.Message{ID: fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%012d", i), Account: "acme", Domain: domain.DomainLive,
			Name: "shop", Method: "GET", Path: "/", StatusCode: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			Subjects: []string{own, "shared", own}}
	}
	if err := f.Append(t.Context(), msgs, false); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := f.Read.QueryRowContext(t.Context(), `SELECT count(*) FROM subjects`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2*len(msgs) {
		t.Errorf("the subject index holds %d rows, want %d", rows, 2*len(msgs))
	}
	for _, i := range []int{0, 127, 128, 299} {
		_, hashes, found, err := f.MessageSubjects(t.Context(), "acme", msgs[i].ID)
		if err != nil || !found {
			t.Fatalf("message %d: found %v, %v", i, found, err)
		}
		slices.Sort(hashes)
		if want := []string{fmt.Sprintf("%032x", i), "shared"}; !slices.Equal(hashes, want) {
			t.Errorf("message %d's subjects are %v, want %v", i, hashes, want)
		}
	}
	shared, err := f.Subjects(t.Context(), ports.SubjectQuery{Account: "acme", Hashes: []string{"shared"}, Limit: 1000})
	if err != nil || len(shared) != len(msgs) {
		t.Errorf("the shared subject finds %d messages (%v), want %d", len(shared), err, len(msgs))
	}
}
