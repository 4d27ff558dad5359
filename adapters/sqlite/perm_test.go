package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// A day file and its -wal and -shm hold messages, the alert file webhook
// secrets: only their owner may read them, whatever the data directory's mode
// becomes.
func TestDayFilesAreTheOwnersOnly(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	m := newMessage(t, time.Now(), 100)
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	alerts, err := sqlite.NewAlertStore(opCtx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alerts.Close() })
	day := filepath.Join(dir, "messages-"+m.CreatedAt.UTC().Format("2006-01-02")+".db")
	for _, path := range []string{day, day + "-wal", day + "-shm"} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("the open store's %s: %v", path, err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(path), mode)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 5 {
		t.Fatalf("%d files in the data directory, want the day's and the alert file's among them", len(entries))
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode&0o077 != 0 {
			t.Errorf("%s has mode %#o: others may read it", e.Name(), mode)
		}
	}
}

// Files an older reqlog let SQLite create 0644 are made the owner's when the
// store opens them.
func TestOpenMakesOlderDayFilesTheOwnersOnly(t *testing.T) {
	dir, day := seeded(t)
	if err := os.Chmod(day, 0o644); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, sqlite.Config{Dir: dir})
	info, err := os.Stat(day)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("%s has mode %#o after opening, want 0600", filepath.Base(day), mode)
	}
}
