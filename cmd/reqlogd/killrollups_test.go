package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// A kill anywhere in the purge loses no rollup and counts none twice: each
// round starts reqlogd on a copy of a directory of expired day files, whose
// purge runs at start, kills it with SIGKILL at a random moment, and then
// the statistics of those days, counted from rollups alone, are what they
// were before the purge, whichever files it had dropped.
func TestKill9DuringThePurgeLosesNoRollup(t *testing.T) {
	if testing.Short() {
		t.Skip("reqlogd processes killed during a purge; not in -short")
	}
	const days, perDay = 16, 600
	template := t.TempDir()
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -40)
	q := stats.Query{Scope: domain.Scope{Account: "acme", Domain: domain.DomainLive},
		From: first, To: first.AddDate(0, 0, days), Interval: stats.Intervals[len(stats.Intervals)-1]}
	q.Filter.From, q.Filter.To, q.RollupsOnlyBefore = q.From, q.To, q.To
	want := seedExpiredDays(t, template, first, days, perDay, q)

	for round := range 6 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("round-%d", round))
		copyDataDir(t, template, dir)
		cmd, _, err := startReqlogd(dir, "REQLOG_PURGE_INTERVAL=1h")
		if err != nil {
			t.Fatalf("round %d: reqlogd did not start: %v", round, err)
		}
		time.Sleep(rand.N(400 * time.Millisecond)) // the kill lands at a random point of the purge
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		left, _ := filepath.Glob(filepath.Join(dir, "messages-*.db"))
		got := statsOf(t, dir, q)
		t.Logf("round %d: %d of %d day files left at the kill", round, len(left), days)
		if got.Total.Count != want.Total.Count || got.Total.Dropped != want.Total.Dropped || got.Total.Status != want.Total.Status ||
			got.Total.Duration.Count != want.Total.Duration.Count {
			t.Errorf("round %d (%d day files left): counted %+v, want %+v as before the purge", round, len(left), got.Total, want.Total)
		}
		for i := range want.Buckets {
			if got.Buckets[i].Count != want.Buckets[i].Count {
				t.Errorf("round %d: day %d counts %d, want %d", round, i, got.Buckets[i].Count, want.Buckets[i].Count)
			}
		}
	}
}

// seedExpiredDays writes perDay messages of two applications into each of
// days day files from first, all expired an hour after they were created,
// and returns q's statistics of them.
func seedExpiredDays(t *testing.T, dir string, first time.Time, days, perDay int, q stats.Query) stats.Stats {
	t.Helper()
	s, err := sqlite.New(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for d := range days {
		msgs := make([]domain.Message, perDay)
		for i := range msgs {
			id, err := domain.NewIdentity()
			if err != nil {
				t.Fatal(err)
			}
			created := first.AddDate(0, 0, d).Add(time.Duration(i) * 2 * time.Minute)
			msgs[i] = domain.Message{ID: id.ID, Reference: id.Reference, Account: "acme", Domain: domain.DomainLive,
				Name: []string{"shop", "billing"}[i%2], Method: "GET", Path: fmt.Sprintf("/v1/items/%d", i%7),
				StatusCode: []int{200, 201, 404, 503}[i%4], Duration: time.Duration(i%50+1) * time.Millisecond, HasDuration: true,
				CreatedAt: created, UpdatedAt: created, VisibleAt: created, ExpiresAt: created.Add(time.Hour)}
			if i%5 == 0 {
				msgs[i] = msgs[i].AsTally()
			}
		}
		if err := s.Append(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Stats(context.Background(), q, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Total.Count != int64(days*perDay) || !st.RollupsOnlyBefore.Equal(q.To) {
		t.Fatalf("before the purge: %d counted, rollups alone before %v; want %d, %v", st.Total.Count, st.RollupsOnlyBefore, days*perDay, q.To)
	}
	return st
}

// statsOf opens the data directory dir and returns q's statistics now.
func statsOf(t *testing.T, dir string, q stats.Query) stats.Stats {
	t.Helper()
	s, err := sqlite.New(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatalf("opening the data directory after the kill: %v", err)
	}
	defer s.Close()
	st, err := s.Stats(context.Background(), q, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// copyDataDir copies the files of the closed data directory from into to.
func copyDataDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
