package sqlite_test

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// A day file closes once unused for Config.IdleTime, giving back its page
// caches and descriptors, and opens again for the next write or read with
// the same settings.
func TestIdleDayFilesClose(t *testing.T) {
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir(), IdleTime: 50 * time.Millisecond})
	now := time.Now().UTC()
	m := newMessage(t, now, 100)
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(opCtx(t), scope, m.ID, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.OpenDayFiles() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d day files still open 10 s after their last use", s.OpenDayFiles())
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	next := newMessage(t, now, 100)
	if err := s.Append(opCtx(t), []domain.Message{next}); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, []domain.Message{m, next}, "after the file closed and opened again")
	journal, synchronous, queryOnly, err := s.WriterSettings(opCtx(t), now)
	if err != nil || journal != "wal" || synchronous != 2 || queryOnly != 1 {
		t.Errorf("the reopened file: journal_mode %q, synchronous %d, reader query_only %d, %v; want wal, 2 (FULL), 1",
			journal, synchronous, queryOnly, err)
	}
}
