package dayfile

import (
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
