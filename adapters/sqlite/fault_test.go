package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// A disk that fills up (the free-space check off, so SQLite itself meets
// ENOSPC): writes fail with ErrUnavailable, reads keep answering, nothing
// acknowledged is lost, and writes resume once there is room again.
func TestDiskFull(t *testing.T) {
	mount := mountTmpfs(t, 16<<20)
	dir := filepath.Join(mount, "data")
	s := mustOpen(t, sqlite.Config{Dir: dir, MinFreeBytes: -1})
	now := time.Now().UTC()
	var acked []domain.Message
	appendBatch := func() error {
		batch := make([]domain.Message, 50)
		for i := range batch {
			batch[i] = newMessage(t, now.Add(-time.Duration(len(acked)+i)*time.Millisecond), 8<<10)
		}
		err := s.Append(opCtx(t), batch)
		if err == nil {
			acked = append(acked, batch...)
		}
		return err
	}
	if err := appendBatch(); err != nil {
		t.Fatalf("Append before the disk is full: %v", err)
	}
	free := fillDisk(t, mount, 0)
	var refused error
	for range 100 {
		if refused = appendBatch(); refused != nil {
			break
		}
	}
	if !errors.Is(refused, ports.ErrUnavailable) {
		t.Fatalf("Append on a full disk = %v, want an error wrapping ports.ErrUnavailable", refused)
	}
	assertStored(t, s, acked, "while the disk is full")

	free()
	if err := appendBatch(); err != nil {
		t.Fatalf("Append once the disk has room again: %v", err)
	}
	assertStored(t, s, acked, "after the disk had room again")
	assertIntegrity(t, dir)
}

// assertStored reads every message of want back by id, and the first by List.
func assertStored(t *testing.T, s *sqlite.Store, want []domain.Message, when string) {
	t.Helper()
	now := time.Now().Add(time.Hour)
	for _, m := range want {
		got, err := s.Get(opCtx(t), scope, m.ID, now)
		if err != nil {
			t.Fatalf("%s: Get(%s) of an acknowledged message: %v", when, m.ID, err)
		}
		if !domain.SameSubmission(m, got) {
			t.Fatalf("%s: Get(%s) differs from what was appended", when, m.ID)
		}
	}
	page, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, now)
	if err != nil || len(page.Messages) == 0 {
		t.Fatalf("%s: List = %d messages, %v; want some", when, len(page.Messages), err)
	}
}

// assertIntegrity runs PRAGMA integrity_check on every day file of dir.
func assertIntegrity(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "messages-*.db"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no day file in %s (%v)", dir, err)
	}
	for _, path := range files {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var result string
		err = db.QueryRowContext(opCtx(t), "PRAGMA integrity_check").Scan(&result)
		db.Close()
		if err != nil || result != "ok" {
			t.Errorf("integrity_check of %s = %q, %v; want ok", path, result, err)
		}
	}
}

// A nil Append means a commit in WAL mode with synchronous=FULL (2) on the
// writer; readers cannot write.
func TestWritesAreDurableAndReadersReadOnly(t *testing.T) {
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	m := newMessage(t, time.Now(), 10)
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	journal, synchronous, queryOnly, err := s.WriterSettings(opCtx(t), m.CreatedAt)
	if err != nil || journal != "wal" || synchronous != 2 || queryOnly != 1 {
		t.Fatalf("writer journal_mode %q, synchronous %d, reader query_only %d (%v); want wal, 2 (FULL), 1",
			journal, synchronous, queryOnly, err)
	}
}
