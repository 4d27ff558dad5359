package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Start-up errors must name the file or directory at fault: that is the
// behaviour under test, so these tests read the message for the path.
func wantNamed(t *testing.T, err error, path string) {
	t.Helper()
	if err == nil {
		t.Fatalf("opening succeeded; want an error naming %s", path)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("the error does not name %s: %v", path, err)
	}
}

// seeded returns a data directory holding one message of today, closed.
func seeded(t *testing.T) (dir string, day string) {
	t.Helper()
	dir = t.TempDir()
	// Headers and bodies as text, as in every version before 7, so that
	// dropping the content column leaves an older file.
	s, err := sqlite.NewWithLayout(opCtx(t), sqlite.Config{Dir: dir}, dayfile.Layout{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	m := newMessage(t, time.Now(), 100)
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "messages-"+m.CreatedAt.UTC().Format("2006-01-02")+".db")
}

func TestSecondStoreOnTheSameDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, sqlite.Config{Dir: dir})
	_, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	wantNamed(t, err, dir)
}

// holdEnv makes the test binary a child process that opens the store on the
// named directory, says so and waits to be killed.
const holdEnv = "REQLOG_SQLITE_TEST_HOLD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		s, err := sqlite.New(ctx, sqlite.Config{Dir: dir})
		cancel()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("holding")
		time.Sleep(time.Minute) // killed long before
		_ = s.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A process killed with SIGKILL leaves no lock behind: the kernel releases
// its flock, so the next start succeeds; while it lived, it held the lock.
func TestKilledHolderLeavesNoLock(t *testing.T) {
	dir, _ := seeded(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holdEnv+"="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "holding" {
		t.Fatalf("the child did not open the store: %q", line)
	}
	_, err = sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	wantNamed(t, err, dir)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	mustOpen(t, sqlite.Config{Dir: dir})
}

func TestNewerDirectoryIsRefused(t *testing.T) {
	dir, _ := seeded(t)
	meta := filepath.Join(dir, "reqlog-store.json")
	if err := os.WriteFile(meta, []byte(`{"store":"reqlog-sqlite","schema_version":99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	wantNamed(t, err, meta)
}

// A directory of schema version 1 (before the statistics index, the rollups,
// the route, rules and content columns, the subject index and the tallies)
// is migrated at start-up: each day file gets the index, the rollups of its
// messages, the columns, the subject index, the tallies and today's version,
// then
// the directory's version is written; the messages stay. The file then has
// the tables, columns and indexes of a new one.
// undoVersion8 takes a day file back to version 7, before the tallies, for
// the tests that make an older file from a new one.
const undoVersion8 = undoVersion9 + "DROP TABLE tally_subjects; DROP TABLE tallies; ALTER TABLE messages DROP COLUMN sample_rate; "

// undoVersion9 takes a day file of version 13 back to version 8.
const undoVersion9 = undoVersion10 + "DROP TABLE class; ALTER TABLE messages DROP COLUMN bodies_expires; "

// undoVersion10 takes a day file of version 13 back to version 9.
const undoVersion10 = undoVersion11 + "ALTER TABLE erasure DROP COLUMN words_owed; "

// undoVersion11 takes a day file of version 13 back to version 10.
const undoVersion11 = undoVersion12 + "DROP TABLE dictionaries; "

// undoVersion12 takes a day file of version 13 back to version 11.
const undoVersion12 = undoVersion13 + "DROP TABLE free_fill; ALTER TABLE erasure DROP COLUMN free_owed; "

// undoVersion13 takes a day file of version 13 whose messages have no
// subjects back to version 12.
const undoVersion13 = "ALTER TABLE messages DROP COLUMN subject_tokens; "

// takeBack runs undo on the day file at path, marks it of version and the
// data directory dir too, as a reqlog of that version left them.
func takeBack(t *testing.T, dir, path, undo string, version int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("%s; PRAGMA user_version=%d", undo, version)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "reqlog-store.json"), fmt.Appendf(nil, `{"store":"reqlog-sqlite","schema_version":%d}`, version))
}

func TestOlderDirectoryIsMigrated(t *testing.T) {
	dir, day := seeded(t)
	newSchema := schemaOf(t, day)
	db, err := sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(undoVersion8 + "DROP TABLE erasure; DROP TABLE subjects; DROP INDEX messages_stats; DROP TABLE rollups; ALTER TABLE messages DROP COLUMN route; ALTER TABLE messages DROP COLUMN rules; ALTER TABLE messages DROP COLUMN content; PRAGMA user_version=1"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	meta := filepath.Join(dir, "reqlog-store.json")
	writeFile(t, meta, []byte(`{"store":"reqlog-sqlite","schema_version":1}`))

	s := mustOpen(t, sqlite.Config{Dir: dir})
	page, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, time.Now().Add(time.Hour))
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("List after the migration = %d messages, %v; want the one stored", len(page.Messages), err)
	}
	db, err = sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, indexes, rollups int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != dayfile.Version() {
		t.Errorf("the day file's schema version is %d (%v), want %d", version, err, dayfile.Version())
	}
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'messages_stats'").Scan(&indexes); err != nil || indexes != 1 {
		t.Errorf("the day file has %d statistics indexes (%v), want 1", indexes, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM rollups").Scan(&rollups); err != nil || rollups != 1 {
		t.Errorf("the day file has %d rollups (%v), want 1, of its message's minute", rollups, err)
	}
	if data, err := os.ReadFile(meta); err != nil || !strings.Contains(string(data), fmt.Sprintf(`"schema_version":%d`, dayfile.Version())) {
		t.Errorf("%s holds %s (%v), want schema_version %d", meta, data, err, dayfile.Version())
	}
	if got := schemaOf(t, day); got != newSchema || !strings.Contains(got, "index messages_stats on messages: account,domain,created,visible,expires,status,duration,name,path,route") {
		t.Errorf("the day file migrated from version 1:\n%s\na new one:\n%s", got, newSchema)
	}
}

// schemaOf lists a database's tables and indexes with their columns, in
// order.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT o.type, o.name, o.tbl_name, group_concat(c.name, ',')
		FROM sqlite_schema AS o, pragma_table_xinfo(o.name) AS c WHERE o.type = 'table' GROUP BY o.name
		UNION ALL
		SELECT o.type, o.name, o.tbl_name, group_concat(c.name, ',')
		FROM sqlite_schema AS o, pragma_index_info(o.name) AS c WHERE o.type = 'index' GROUP BY o.name
		ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var kind, name, table, columns string
		if err := rows.Scan(&kind, &name, &table, &columns); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s on %s: %s\n", kind, name, table, columns)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A day file of schema version 3 (before route templates: no route column,
// the statistics index without it, rollups of encoding version 1) gets the
// column and the index with it; its messages read without a route, its
// rollups as minutes without routes, and messages stored after it with a
// route are ranked in top_routes, from the same day's rollups.
func TestVersion3DayFileGetsRoutes(t *testing.T) {
	dir, day := seeded(t)
	db, err := sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	// The seeded message has no route: its rollup's routes are one byte (none),
	// which version 1 did not have.
	if _, err := db.Exec(undoVersion8 + `DROP TABLE erasure; DROP TABLE subjects; DROP INDEX messages_stats; ALTER TABLE messages DROP COLUMN route; ALTER TABLE messages DROP COLUMN rules; ALTER TABLE messages DROP COLUMN content;
		UPDATE rollups SET data = X'01' || substr(data, 2, length(data) - 2);
		PRAGMA user_version=3`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE INDEX messages_stats ON messages(account, domain, created, visible, expires, status, duration, name, path)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	writeFile(t, filepath.Join(dir, "reqlog-store.json"), []byte(`{"store":"reqlog-sqlite","schema_version":3}`))

	s := mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().Add(time.Hour)
	old, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, now)
	if err != nil || len(old.Messages) != 1 || old.Messages[0].Route != "" {
		t.Fatalf("List after the migration = %+v, %v; want the one stored, without a route", old.Messages, err)
	}
	routed := newMessage(t, old.Messages[0].CreatedAt.Add(time.Microsecond), 101)
	routed.Route = "/orders/{id}"
	if err := s.Append(opCtx(t), []domain.Message{routed}); err != nil {
		t.Fatal(err)
	}
	from := old.Messages[0].CreatedAt.Truncate(time.Hour)
	q := stats.Query{Scope: scope, From: from, To: from.Add(2 * time.Hour), Interval: stats.Intervals[3]}
	q.Filter.From, q.Filter.To = q.From, q.To
	st, err := s.Stats(opCtx(t), q, now)
	if err != nil || st.Total.Count != 2 || len(st.TopRoutes) != 1 || st.TopRoutes[0].Route != routed.Route || st.TopRoutes[0].Count != 1 {
		t.Errorf("Stats after the migration: %d messages, top routes %+v, %v; want 2, one of %s", st.Total.Count, st.TopRoutes, err, routed.Route)
	}
	q.Filter.Route = routed.Route
	if st, err := s.Stats(opCtx(t), q, now); err != nil || st.Total.Count != 1 {
		t.Errorf("Stats by route after the migration: %d messages, %v; want 1", st.Total.Count, err)
	}
	db, err = sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, routeInIndex int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != dayfile.Version() {
		t.Errorf("the day file's schema version is %d (%v), want %d", version, err, dayfile.Version())
	}
	if err := db.QueryRow("SELECT count(*) FROM pragma_index_info('messages_stats') WHERE name = 'route'").Scan(&routeInIndex); err != nil || routeInIndex != 1 {
		t.Errorf("the statistics index holds the route %d times (%v), want once", routeInIndex, err)
	}
}

func TestNewerDayFileIsRefused(t *testing.T) {
	dir, day := seeded(t)
	db, err := sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version=99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	wantNamed(t, err, day)
}

// A corrupt day file, a foreign SQLite database under a day file's name,
// other files named like databases, day files without the directory's
// metadata, a file where the directory should be: each is a start-up error
// naming it, and nothing is changed.
func TestUnusableFilesAreNamed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir, day string) (named string)
	}{
		{"corrupt day file", func(t *testing.T, dir, day string) string {
			writeFile(t, day, bytes.Repeat([]byte("not a database "), 512))
			return day
		}},
		{"truncated day file", func(t *testing.T, dir, day string) string {
			if err := os.Truncate(day, 1000); err != nil {
				t.Fatal(err)
			}
			return day
		}},
		{"foreign database under a day file's name", func(t *testing.T, dir, day string) string {
			other := filepath.Join(dir, "messages-2020-01-01.db")
			db, err := sql.Open("sqlite", "file:"+other)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("CREATE TABLE notes (text TEXT)"); err != nil {
				t.Fatal(err)
			}
			db.Close()
			return other
		}},
		{"other database file", func(t *testing.T, dir, day string) string {
			other := filepath.Join(dir, "backup.db")
			writeFile(t, other, []byte("x"))
			return other
		}},
		{"misnamed day file", func(t *testing.T, dir, day string) string {
			other := filepath.Join(dir, "messages-yesterday")
			writeFile(t, other, []byte("x"))
			return other
		}},
		{"day files without the metadata file", func(t *testing.T, dir, day string) string {
			meta := filepath.Join(dir, "reqlog-store.json")
			if err := os.Remove(meta); err != nil {
				t.Fatal(err)
			}
			return meta
		}},
		{"corrupt metadata file", func(t *testing.T, dir, day string) string {
			meta := filepath.Join(dir, "reqlog-store.json")
			writeFile(t, meta, []byte("{"))
			return meta
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, day := seeded(t)
			named := tc.spoil(t, dir, day)
			before := snapshot(t, dir)
			_, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
			wantNamed(t, err, named)
			if after := snapshot(t, dir); after != before {
				t.Errorf("a refused start changed the directory:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	t.Run("a file where the directory should be", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "data")
		writeFile(t, path, []byte("x"))
		_, err := sqlite.New(opCtx(t), sqlite.Config{Dir: path})
		wantNamed(t, err, path)
	})
}

// A read-only file system (a read-only tmpfs: root ignores permission bits,
// not a read-only mount) is a start-up error naming the directory.
func TestReadOnlyDirectory(t *testing.T) {
	dir := mountTmpfs(t, 1<<20)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remounting %s read-only: %v", dir, err)
	}
	_, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	wantNamed(t, err, dir)
	_, err = sqlite.New(opCtx(t), sqlite.Config{Dir: filepath.Join(dir, "data")})
	wantNamed(t, err, filepath.Join(dir, "data"))
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists dir's files with their sizes and modification times, the
// lock file aside (opening takes it).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.Name() == "reqlog.lock" {
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d ", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// A day file of schema version 4 (before rules records) gets the rules
// column: its messages read as written under no rule set, and a message
// stored after it keeps its record.
func TestVersion4DayFileGetsRulesRecords(t *testing.T) {
	dir, day := seeded(t)
	db, err := sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(undoVersion8 + `DROP TABLE erasure; DROP TABLE subjects; ALTER TABLE messages DROP COLUMN rules; ALTER TABLE messages DROP COLUMN content; PRAGMA user_version=4`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	writeFile(t, filepath.Join(dir, "reqlog-store.json"), []byte(`{"store":"reqlog-sqlite","schema_version":4}`))

	s := mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().Add(time.Hour)
	old, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, now)
	if err != nil || len(old.Messages) != 1 || !old.Messages[0].Rules.IsZero() {
		t.Fatalf("List after the migration = %+v, %v; want the one stored, without a rules record", old.Messages, err)
	}
	recorded := newMessage(t, old.Messages[0].CreatedAt.Add(time.Microsecond), 101)
	recorded.Rules = domain.RulesRecord{Version: 3, Source: "otlp", Changes: []domain.RuleChange{{Rule: "r", Field: "path"}}}
	if err := s.Append(opCtx(t), []domain.Message{recorded}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(opCtx(t), scope, recorded.ID, now)
	if err != nil || fmt.Sprint(got.Rules) != fmt.Sprint(recorded.Rules) {
		t.Errorf("Get after the migration: rules %+v, %v; want %+v", got.Rules, err, recorded.Rules)
	}
}
