package dayfile

import (
	"fmt"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// openTestDir opens a data directory of its own for the test, closed after it.
func openTestDir(t *testing.T) *Dir {
	d, err := Open(t.Context(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// An Append uses the statements prepared once on the file's writer, and
// prepares them again on the writer of the file opened anew after the
// directory closed it: every batch is stored either way, its tally too.
func TestAppendStatementsOutliveATransactionNotTheWriter(t *testing.T) {
	d, now := openTestDir(t), time.Now()
	part := Part{Day: DayOf(now)}
	batch := func(round int) []domain.Message {
		msgs := make([]domain.Message, 3)
		for i := range msgs {
			msgs[i] = domain.Message{ID: fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%06d%06d", round, i), Account: "acme",
				Domain: domain.DomainLive, Name: "shop", Method: "GET", Path: "/", StatusCode: 200, CreatedAt: now,
				ExpiresAt: now.Add(time.Hour), Subjects: []string{fmt.Sprintf("%032x", round)}}
		}
		msgs[2].Tally = true
		return msgs
	}
	var writers []any
	for round := range 4 {
		f, err := d.Acquire(t.Context(), part, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Append(t.Context(), batch(round), true); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if f.stmts == nil || f.stmts.db != f.Write || f.stmts.byText.Load() == nil || len(*f.stmts.byText.Load()) != len(appendQueries()) {
			t.Fatalf("round %d: the Append statements are not prepared on the file's writer", round)
		}
		writers = append(writers, f.stmts.db)
		var messages, tallies int
		if err := f.Read.QueryRowContext(t.Context(), `SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM tallies)`).
			Scan(&messages, &tallies); err != nil {
			t.Fatal(err)
		}
		if messages != 2*(round+1) || tallies != round+1 {
			t.Errorf("round %d: %d messages and %d tallies stored, want %d and %d", round, messages, tallies, 2*(round+1), round+1)
		}
		f.Release()
		if round%2 == 1 {
			d.trim(0, time.Time{}) // closed: the next round opens it again
			if f.stmts != nil {
				t.Fatalf("round %d: the file closed keeps its statements", round)
			}
		}
	}
	if writers[0] != writers[1] || writers[1] == writers[2] || writers[2] != writers[3] {
		t.Error("the statements are not those of the writer the file had open")
	}
}

// Appends at once to a file opened anew prepare its statements while
// others' transactions hold its writer: each batch is stored.
func TestAppendsAtOnceShareTheStatements(t *testing.T) {
	d, now := openTestDir(t), time.Now()
	part := Part{Day: DayOf(now)}
	const rounds, writers = 3, 6
	for round := range rounds {
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				f, err := d.Acquire(t.Context(), part, true)
				if err != nil {
					errs <- err
					return
				}
				defer f.Release()
				id := fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%06d%06d", round, w)
				errs <- f.Append(t.Context(), []domain.Message{{ID: id, Account: "acme", Domain: domain.DomainLive, Name: "shop",
					Method: "GET", Path: "/", StatusCode: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}, true)
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		d.trim(0, time.Time{})
	}
	f, err := d.Acquire(t.Context(), part, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	var messages int
	if err := f.Read.QueryRowContext(t.Context(), `SELECT count(*) FROM messages`).Scan(&messages); err != nil {
		t.Fatal(err)
	}
	if messages != rounds*writers {
		t.Errorf("%d messages stored, want %d", messages, rounds*writers)
	}
}
