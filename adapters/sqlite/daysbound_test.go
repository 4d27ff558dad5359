package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open files needs /proc/self/fd: %v", err)
	}
	return len(entries)
}

// emptyDayFile returns the bytes of a day file that holds no message and
// whose totals say it expires at expires, as the store writes one.
func emptyDayFile(t *testing.T, expires time.Time) []byte {
	t.Helper()
	dir, day := seeded(t)
	db, err := sql.Open("sqlite", "file:"+day)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`DELETE FROM messages; INSERT INTO words(words) VALUES ('delete-all'); DELETE FROM rollups;
		UPDATE day SET messages = 0, max_expires = ?; VACUUM`, expires.UnixMicro())
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(day)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(dir)
	return data
}

// writeDays makes dir a data directory of n empty day files, the newest
// yesterday's, that expire at expires: what a store of n days holds, made
// without writing each.
func writeDays(t *testing.T, dir string, n int, expires time.Time) (days []time.Time) {
	t.Helper()
	data := emptyDayFile(t, expires)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "reqlog-store.json"), []byte(`{"store":"reqlog-sqlite","schema_version":4}`))
	yesterday := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	for i := range n {
		day := yesterday.Add(-time.Duration(i) * 24 * time.Hour)
		writeFile(t, filepath.Join(dir, "messages-"+day.Format("2006-01-02")+".db"), data)
		days = append(days, day)
	}
	return days
}

// useEveryDay writes a message to each of the newest writes days in one
// Append, probes every day for an id no day holds, counts statistics over
// the newest 40 days and purges. It returns how long the Append and the
// probe took.
func useEveryDay(t *testing.T, s *sqlite.Store, days []time.Time, writes int) (appendTook, getTook time.Duration) {
	t.Helper()
	var msgs []domain.Message
	for _, day := range days[:min(writes, len(days))] {
		m := newMessage(t, day.Add(time.Hour), 200)
		m.ExpiresAt = time.Now().Add(365 * 24 * time.Hour)
		msgs = append(msgs, m)
	}
	began := time.Now()
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	appendTook = time.Since(began)
	now := time.Now()
	began = now
	if _, err := s.Get(opCtx(t), scope, "0190b2a4-7a4e-7cc0-8000-000000000000", now); err == nil {
		t.Fatal("Get found an id no day holds")
	}
	getTook = time.Since(began)
	from := days[min(len(days), 40)-1]
	q, err := stats.ParseQuery(map[string][]string{"from": {from.Format(time.RFC3339)}, "interval": {"1d"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	q.Scope = scope
	if st, err := s.Stats(opCtx(t), q, now.Add(time.Hour)); err != nil || st.Total.Count != int64(min(writes, len(days), 40)) {
		t.Fatalf("Stats over 40 days: %d messages, %v; want %d", st.Total.Count, err, min(writes, len(days), 40))
	}
	if _, err := s.PurgeExpired(opCtx(t), now); err != nil {
		t.Fatal(err)
	}
	return appendTook, getTook
}

// The store's open files follow the days in use, not the days on disk: a
// store of 3,650 day files, after a write to 200 of them in one Append, a
// lookup that probes every day, statistics over 40 days and a purge, holds
// no more files open than a store of 10 days with every day open. Once
// unused for IdleTime every day file closes, with purges running
// meanwhile (they decide from the days' totals, opening none).
func TestOpenFilesFollowTheDaysInUseNotTheDaysOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("3,650 day files; not in -short")
	}
	expires := time.Now().Add(365 * 24 * time.Hour)
	tenDays := filepath.Join(t.TempDir(), "ten")
	ten := writeDays(t, tenDays, 10, expires)
	before := openFDs(t)
	s := mustOpen(t, sqlite.Config{Dir: tenDays, MaxOpenDays: 10})
	useEveryDay(t, s, ten, 10)
	ofTen := openFDs(t) - before
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	manyDays := filepath.Join(t.TempDir(), "many")
	many := writeDays(t, manyDays, 3650, expires)
	before = openFDs(t)
	// Start-up checks each of the 3,650 files: a few seconds, more under -race.
	startUp, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := openStore(startUp, t, sqlite.Config{Dir: manyDays, IdleTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	useEveryDay(t, s, many, 200)
	ofMany := openFDs(t) - before
	t.Logf("open files: %d with 10 days, %d with %d days", ofTen, ofMany, len(many))
	if ofMany > ofTen {
		t.Errorf("a store of %d days has %d files open after using them, more than the %d of a store of 10 days with all of them open",
			len(many), ofMany, ofTen)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.PurgeExpired(opCtx(t), time.Now()); err != nil {
			t.Fatal(err)
		}
		open := openFDs(t) - before
		if open <= 1 { // the directory's lock
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files still open 10 s after the last use, purging meanwhile; want the lock file alone", open)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// measureDaysEnv names how many day files TestMemoryOfManyDays measures a
// store over (docs/benchmarks.md, "Many days"), each in a process of its
// own: its RSS is the process's; measureWritesEnv, to how many of them
// its one Append writes (1,000 unless set).
const (
	measureDaysEnv   = "REQLOG_MEASURE_DAYS"
	measureWritesEnv = "REQLOG_MEASURE_WRITES"
)

// TestMemoryOfManyDays reports the RSS, its peak and the open files of a
// store over $REQLOG_MEASURE_DAYS day files after useEveryDay.
//
//	REQLOG_MEASURE_DAYS=3650 go test -run TestMemoryOfManyDays -v ./adapters/sqlite/
func TestMemoryOfManyDays(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(measureDaysEnv))
	if err != nil {
		t.Skipf("set %s to a number of days to measure", measureDaysEnv)
	}
	writes, err := strconv.Atoi(os.Getenv(measureWritesEnv))
	if err != nil {
		writes = 1000
	}
	dir := filepath.Join(t.TempDir(), "data")
	days := writeDays(t, dir, n, time.Now().Add(365*24*time.Hour))
	runtime.GC()
	t.Logf("before: %s, %d files open", memory(t), openFDs(t))
	startUp, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	s, err := openStore(startUp, t, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start-up over %d day files: %v", n, time.Since(began).Round(time.Millisecond))
	appendTook, getTook := useEveryDay(t, s, days, writes)
	t.Logf("an Append to %d days: %v; a Get probing every day: %v", min(writes, n), appendTook.Round(time.Millisecond), getTook.Round(time.Millisecond))
	t.Logf("then: %s, %d files open", memory(t), openFDs(t))
	debug.FreeOSMemory() // what the heap holds no more goes back
	t.Logf("the heap's garbage returned: %s", memory(t))
}

// memory is the process's resident set size and its peak, from /proc.
func memory(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("reading memory needs /proc/self/status: %v", err)
	}
	var rss, peak string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak = strings.TrimSpace(v)
		}
	}
	return "RSS " + rss + " (peak " + peak + ")"
}
