package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/rollupfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// A day of two retention classes, their messages in the same minutes of the
// same application (and the shorter's in an hour of its own too), keeps its
// statistics while the purge drops the shorter class's file (the day half
// in its file, half in the rollups file), then the other's: the rollups
// file holds both files' rollups of each minute, and the statistics merge
// them with what is still in a file.
func TestTwoClassesOfADayKeepTheirStatisticsAsTheyAreDropped(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().UTC()
	day := now.Truncate(24*time.Hour).AddDate(0, 0, -40)
	var msgs []domain.Message
	for i := range 120 {
		m := newMessage(t, day.Add(time.Hour+time.Duration(i/4)*time.Minute+time.Duration(i%4)*time.Second), 10)
		m.ExpiresAt = now.Add(100 * 24 * time.Hour)
		rule := []string{"short", "long"}[i%2]
		if rule == "short" && i%3 == 0 || rule == "long" && i%5 == 0 {
			m.StatusCode = 500
		}
		msgs = append(msgs, classed(m, rule))
	}
	for i := range 10 {
		m := newMessage(t, day.Add(5*time.Hour+time.Duration(i)*time.Minute), 10)
		m.ExpiresAt = now.Add(100 * 24 * time.Hour)
		msgs = append(msgs, classed(m, "short"))
	}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	if files := dayFiles(t, dir, day); len(files) != 2 {
		t.Fatalf("the day's files: %v, want the two classes'", files)
	}
	name := msgs[0].Name
	queries := map[string]stats.Query{}
	for _, app := range []string{"", name} {
		q := stats.Query{Scope: scope, From: day, To: day.Add(24 * time.Hour), Interval: stats.Intervals[1]}
		q.Filter.From, q.Filter.To, q.Filter.Name, q.RollupsOnlyBefore = q.From, q.To, app, q.To
		queries[app] = q
	}
	counted := func(when string) map[string]stats.Stats {
		t.Helper()
		got := map[string]stats.Stats{}
		for app, q := range queries {
			st, err := s.Stats(opCtx(t), q, now)
			if err != nil {
				t.Fatalf("%s: Stats of %q: %v", when, app, err)
			}
			got[app] = st
		}
		return got
	}
	before := counted("with both files")
	if total := before[""].Total; total.Count != 130 || total.Status[4] != 32 {
		t.Fatalf("with both files: %d counted, %d 5xx; want 130 and 32", total.Count, total.Status[4])
	}
	sameAsBefore := func(when string) {
		t.Helper()
		for app, got := range counted(when) {
			want := before[app]
			if got.Total.Count != want.Total.Count || got.Total.Status != want.Total.Status {
				t.Errorf("%s, application %q: %d counted, status %v; want %d, %v", when, app,
					got.Total.Count, got.Total.Status, want.Total.Count, want.Total.Status)
			}
			if !reflect.DeepEqual(got.Buckets, want.Buckets) || !reflect.DeepEqual(got.TopNames, want.TopNames) {
				t.Errorf("%s, application %q: the buckets or applications differ from those with both files", when, app)
			}
		}
	}

	short, long := domain.RetentionClass{Account: scope.Account, Rule: "short"}, domain.RetentionClass{Account: scope.Account, Rule: "long"}
	current := map[domain.RetentionClass][2]time.Duration{short: {24 * time.Hour, 24 * time.Hour}, long: {90 * 24 * time.Hour, 90 * 24 * time.Hour}}
	if n, err := s.PurgeRetention(opCtx(t), now, retentionOf(current)); n != 70 || err != nil {
		t.Fatalf("PurgeRetention of the short class = %d, %v; want its 70", n, err)
	}
	if files := dayFiles(t, dir, day); len(files) != 1 {
		t.Fatalf("the day's files after the short class's purge: %v, want the long class's", files)
	}
	sameAsBefore("the short class's file dropped")

	current[long] = current[short]
	if n, err := s.PurgeRetention(opCtx(t), now, retentionOf(current)); n != 60 || err != nil {
		t.Fatalf("PurgeRetention of the long class = %d, %v; want its 60", n, err)
	}
	if files := dayFiles(t, dir, day); len(files) != 0 {
		t.Fatalf("the day's files after both purges: %v, want none", files)
	}
	sameAsBefore("both files dropped")

	if parts := keptParts(t, filepath.Join(dir, rollupfile.FileName)); len(parts) != 2 || slices.Contains(parts, "") {
		t.Errorf("the rollups file's parts: %q, want the two classes'", parts)
	}
}

// keptParts lists the parts the rollups file at path holds rollups of.
func keptParts(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(opCtx(t), `SELECT DISTINCT part FROM rollups ORDER BY part`)
	if err != nil {
		t.Fatalf("the rollups file's parts: %v", err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var part string
		if err := rows.Scan(&part); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return parts
}
