package sqlite_test

import (
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
)

// A day file's connections close once unused for Config.IdleTime, giving
// back their page caches, and open again for the next write or read with
// the same settings.
func TestIdleConnectionsClose(t *testing.T) {
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir(), IdleTime: 50 * time.Millisecond})
	now := time.Now().UTC()
	m := newMessage(t, now, 100)
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(opCtx(t), scope, m.ID, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// database/sql closes idle connections once a second at the most.
	deadline := time.Now().Add(10 * time.Second)
	for {
		open, err := s.OpenConns(opCtx(t), now)
		if err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 10 s after their last use", open)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	next := newMessage(t, now, 100)
	if err := s.Append(opCtx(t), []domain.Message{next}); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, []domain.Message{m, next}, "after the connections closed and opened again")
	journal, synchronous, queryOnly, err := s.WriterSettings(opCtx(t), now)
	if err != nil || journal != "wal" || synchronous != 2 || queryOnly != 1 {
		t.Errorf("reopened connections: journal_mode %q, synchronous %d, reader query_only %d, %v; want wal, 2 (FULL), 1",
			journal, synchronous, queryOnly, err)
	}
}
