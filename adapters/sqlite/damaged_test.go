package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// dayPath is the day file of messages created at t in dir.
func dayPath(dir string, t time.Time) string {
	return filepath.Join(dir, "messages-"+t.UTC().Format("2006-01-02")+".db")
}

// wantFault checks that err is ports.ErrUnavailable carrying a ports.Fault
// that names the file of path and says problem.
func wantFault(t *testing.T, what string, err error, path, problem string) {
	t.Helper()
	if !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("%s = %v; want an error wrapping ports.ErrUnavailable", what, err)
	}
	faults := ports.Faults(err)
	if !slices.ContainsFunc(faults, func(f string) bool {
		return strings.Contains(f, filepath.Base(path)) && strings.Contains(f, problem)
	}) {
		t.Fatalf("%s = %v, whose faults %q do not name %s as %q", what, err, faults, filepath.Base(path), problem)
	}
}

// A day file deleted, or replaced, while the store has it open is found
// before the next acknowledgement: writes to it fail with ErrUnavailable
// naming the file and the problem, Ping says so, and the store does not
// make the file again (with SQLite's 0644 or otherwise). Other days take
// writes, and whatever was acknowledged after the change is there after a
// restart, as are writes to the damaged day then.
func TestDayFileChangedUnderTheStore(t *testing.T) {
	for _, tc := range []struct {
		name, problem string
		change        func(t *testing.T, path string)
	}{
		{"deleted", "was deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", "was replaced", func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path+".new", data)
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			yesterday := now.Add(-24 * time.Hour)
			if err := s.Append(opCtx(t), []domain.Message{newMessage(t, now, 100), newMessage(t, yesterday, 100)}); err != nil {
				t.Fatal(err)
			}
			today := dayPath(dir, now)
			tc.change(t, today)

			err = s.Append(opCtx(t), []domain.Message{newMessage(t, now, 100)})
			wantFault(t, "Append to the day changed under the store", err, today, tc.problem)
			wantFault(t, "Ping", s.Ping(opCtx(t)), today, tc.problem)
			err = s.Append(opCtx(t), []domain.Message{newMessage(t, now, 100)})
			wantFault(t, "Append to it again", err, today, tc.problem)
			after := newMessage(t, yesterday.Add(time.Second), 100)
			if err := s.Append(opCtx(t), []domain.Message{after}); err != nil {
				t.Fatalf("Append to another day: %v", err)
			}
			if tc.name == "deleted" {
				if _, err := os.Stat(today); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the deleted day file is back (%v): the store made it again", err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s = mustOpen(t, sqlite.Config{Dir: dir})
			assertStored(t, s, []domain.Message{after}, "after a restart")
			again := newMessage(t, now, 100)
			if err := s.Append(opCtx(t), []domain.Message{again}); err != nil {
				t.Fatalf("Append to the day after a restart: %v", err)
			}
			assertStored(t, s, []domain.Message{after, again}, "after a restart and a write to the day")
			// Ping fails while the start-up check reads the newest days whole.
			for deadline := time.Now().Add(10 * time.Second); s.Ping(opCtx(t)) != nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("Ping 10 s after a restart: %v", s.Ping(opCtx(t)))
				}
			}
			info, err := os.Stat(today)
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("the day file after a restart: %v, %v; want mode 0600", info, err)
			}
		})
	}
}

// corruptPage overwrites the root page of table in the database at path,
// which no process has open, with bytes that are no b-tree page.
func corruptPage(t *testing.T, path, table string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	err = db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = ?", table).Scan(&root)
	if err == nil {
		err = db.QueryRow("PRAGMA page_size").Scan(&pageSize)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte(strings.Repeat("\xff", int(pageSize)))
	if _, err := f.WriteAt(garbage, (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// twoDays returns a data directory, closed, holding a message of yesterday
// and one of today.
func twoDays(t *testing.T) (dir string, old, recent domain.Message) {
	t.Helper()
	dir = t.TempDir()
	s, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	old, recent = newMessage(t, now.Add(-24*time.Hour), 100), newMessage(t, now, 100)
	if err := s.Append(opCtx(t), []domain.Message{old, recent}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, old, recent
}

// A corrupt page in a day file that start-up did not check: what reads it
// fails with ErrUnavailable naming the file as corrupt (the API's 503, not
// a 500), writes to that day are refused from then on, Ping names it, and
// the other day works.
func TestCorruptPageFailsItsDayClearly(t *testing.T) {
	dir, old, recent := twoDays(t)
	path := dayPath(dir, old.CreatedAt)
	corruptPage(t, path, "messages")
	s := mustOpen(t, sqlite.Config{Dir: dir, CheckDays: -1})
	later := time.Now().Add(time.Hour)

	_, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, later)
	wantFault(t, "List over the corrupt day", err, path, "is corrupt")
	_, err = s.Get(opCtx(t), scope, old.ID, later)
	wantFault(t, "Get of a message of the corrupt day", err, path, "is corrupt")
	err = s.Append(opCtx(t), []domain.Message{newMessage(t, old.CreatedAt.Add(time.Second), 100)})
	wantFault(t, "Append to the corrupt day", err, path, "is corrupt")
	wantFault(t, "Ping", s.Ping(opCtx(t)), path, "is corrupt")

	if _, err := s.Get(opCtx(t), scope, recent.ID, later); err != nil {
		t.Errorf("Get of a message of the other day: %v", err)
	}
	if err := s.Append(opCtx(t), []domain.Message{newMessage(t, recent.CreatedAt.Add(time.Second), 100)}); err != nil {
		t.Errorf("Append to the other day: %v", err)
	}
}

// After start-up the store reads the newest Config.CheckDays day files
// whole (PRAGMA quick_check), Ping failing meanwhile: a corrupt page in one
// is then a fault that Ping names and that refuses the day's writes. A day
// past them is not read.
func TestStartUpChecksTheNewestDays(t *testing.T) {
	dir, _, recent := twoDays(t)
	path := dayPath(dir, recent.CreatedAt)
	corruptPage(t, path, "messages_name") // an index: nothing but the check reads it here
	s := mustOpen(t, sqlite.Config{Dir: dir})
	deadline := time.Now().Add(10 * time.Second)
	for len(ports.Faults(s.Ping(opCtx(t)))) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Ping = %v 10 s after start-up; want it to name %s as corrupt", s.Ping(opCtx(t)), path)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	wantFault(t, "Ping", s.Ping(opCtx(t)), path, "is corrupt")
	err := s.Append(opCtx(t), []domain.Message{newMessage(t, recent.CreatedAt.Add(time.Second), 100)})
	wantFault(t, "Append to the corrupt day", err, path, "is corrupt")

	dir, old, _ := twoDays(t)
	corruptPage(t, dayPath(dir, old.CreatedAt), "messages_name")
	s = mustOpen(t, sqlite.Config{Dir: dir, CheckDays: 1})
	deadline = time.Now().Add(10 * time.Second)
	for s.Ping(opCtx(t)) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Ping = %v 10 s after start-up; want nil once the newest day is checked", s.Ping(opCtx(t)))
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}
