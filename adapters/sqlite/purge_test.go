package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Retention drops a day's file, its -wal and -shm whole while another day
// takes writes: the files are gone, nothing of the other day is lost, and a
// day holding one unexpired message stays.
func TestPurgeDropsWholeDayFilesWhileWriting(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().UTC()
	expire := func(m *domain.Message, at time.Time) { m.ExpiresAt = at }
	var expired []domain.Message
	for i := range 50 {
		m := newMessage(t, now.Add(-72*time.Hour).Add(time.Duration(i)*time.Second), 500)
		expire(&m, now.Add(-time.Hour))
		expired = append(expired, m)
	}
	late := newMessage(t, now.Add(-48*time.Hour), 500) // its day has one unexpired message
	early := newMessage(t, now.Add(-48*time.Hour).Add(time.Second), 500)
	expire(&early, now.Add(-time.Hour))
	for _, batch := range [][]domain.Message{expired, {late, early}} {
		if err := s.Append(opCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	oldDay := filepath.Join(dir, "messages-"+expired[0].CreatedAt.Format("2006-01-02")+".db")
	if _, err := os.Stat(oldDay); err != nil {
		t.Fatalf("the expired day's file: %v", err)
	}

	var (
		writing sync.WaitGroup
		mu      sync.Mutex
		acked   []domain.Message
		stop    = make(chan struct{})
	)
	writing.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			batch := []domain.Message{newMessage(t, time.Now(), 500), newMessage(t, time.Now(), 500)}
			if err := s.Append(opCtx(t), batch); err != nil {
				t.Errorf("Append during the purge: %v", err)
				return
			}
			mu.Lock()
			acked = append(acked, batch...)
			mu.Unlock()
		}
	})
	n, err := s.PurgeExpired(opCtx(t), now)
	close(stop)
	writing.Wait()
	if err != nil || n != int64(len(expired)) {
		t.Fatalf("PurgeExpired = %d, %v; want %d, nil", n, err, len(expired))
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if _, err := os.Stat(oldDay + suffix); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the purge (%v)", oldDay+suffix, err)
		}
	}
	later := now.Add(time.Minute)
	for _, m := range expired[:3] {
		if _, err := s.Get(opCtx(t), scope, m.ID, now.Add(-2*time.Hour)); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Get of a purged message = %v, want ErrNotFound", err)
		}
	}
	if _, err := s.Get(opCtx(t), scope, late.ID, later); err != nil {
		t.Errorf("the unexpired message of a partly expired day: %v", err)
	}
	assertStored(t, s, acked, "after a purge during writes")
}
