package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/rollupfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// expiredDay appends n messages created an hour apart from the start of a
// day 40 days ago, each expired an hour after it was created, and returns
// the statistics query of that day by hour, counted from rollups alone.
func expiredDay(t *testing.T, s *sqlite.Store, n int) stats.Query {
	t.Helper()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -40)
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = newMessage(t, day.Add(time.Duration(i)*time.Hour), 10)
		msgs[i].StatusCode = []int{200, 500}[i%2]
		msgs[i].ExpiresAt = msgs[i].CreatedAt.Add(time.Hour)
	}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	q := stats.Query{Scope: scope, From: day, To: day.Add(24 * time.Hour), Interval: stats.Intervals[3]}
	q.Filter.From, q.Filter.To, q.RollupsOnlyBefore = q.From, q.To, q.To
	return q
}

// The rollups of a purged day file are kept in the rollups file across a
// restart, answer the day's statistics until PurgeRollups deletes them.
func TestThePurgedDaysRollupsAnswerAfterARestart(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	q := expiredDay(t, s, 20)
	if n, err := s.PurgeExpired(opCtx(t), time.Now()); n != 20 || err != nil {
		t.Fatalf("PurgeExpired = %d, %v; want the day's 20", n, err)
	}
	if days, _ := filepath.Glob(filepath.Join(dir, "messages-*.db")); len(days) != 0 {
		t.Fatalf("day files left after the purge: %v", days)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, sqlite.Config{Dir: dir})
	got, err := s.Stats(opCtx(t), q, time.Now())
	if err != nil || got.Total.Count != 20 || got.Total.Status[4] != 10 || !got.RollupsOnlyBefore.Equal(q.To) {
		t.Fatalf("after the restart: %+v, rollups alone before %v, %v; want 20 of which 10 5xx, before %v", got.Total, got.RollupsOnlyBefore, err, q.To)
	}
	if _, err := os.Stat(filepath.Join(dir, rollupfile.FileName)); err != nil {
		t.Errorf("the rollups file: %v", err)
	}
	before := q.From.Add(10 * time.Hour)
	if n, err := s.PurgeRollups(opCtx(t), before); n != 10 || err != nil {
		t.Fatalf("PurgeRollups = %d, %v; want the 10 minutes before %v", n, err, before)
	}
	if got, err := s.Stats(opCtx(t), q, time.Now()); err != nil || got.Total.Count != 10 {
		t.Errorf("after PurgeRollups: %d counted, %v; want the 10 from %v on", got.Total.Count, err, before)
	}
}

// A purge that cannot keep a day file's rollups keeps the file, and says so.
func TestAPurgeThatCannotKeepTheRollupsKeepsTheDayFile(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	expiredDay(t, s, 5)
	if err := s.CloseRollupsFile(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeExpired(opCtx(t), time.Now()); err == nil || n != 0 {
		t.Errorf("PurgeExpired with the rollups file closed = %d, %v; want an error and nothing purged", n, err)
	}
	if days, _ := filepath.Glob(filepath.Join(dir, "messages-*.db")); len(days) != 1 {
		t.Errorf("day files after the refused purge: %v, want the one", days)
	}
	_ = s.Close() // the rollups file is closed already
}
