package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

var scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}

// opTimeout bounds every single call of a test: a hang fails the test.
const opTimeout = 60 * time.Second

func opCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newMessage builds a message of scope created at createdAt with a body of
// bodyBytes bytes.
func newMessage(t *testing.T, createdAt time.Time, bodyBytes int) domain.Message {
	return conformance.NewMessage(t, scope, createdAt, func(m *domain.Message) {
		m.Response.Body = strings.Repeat("lorem ipsum ", bodyBytes/12+1)[:bodyBytes]
	})
}

// mustOpen opens a store on cfg, closed when t ends.
func mustOpen(t *testing.T, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	s, err := openStore(opCtx(t), t, cfg)
	if err != nil {
		t.Fatalf("opening the store on %s: %v", cfg.Dir, err)
	}
	return s
}

// requireBackends is REQLOG_REQUIRE_BACKENDS=1 (CI): what cannot be set up
// fails instead of skipping.
func requireBackends() bool { return os.Getenv("REQLOG_REQUIRE_BACKENDS") == "1" }

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted when
// t ends. Mounting needs root (CAP_SYS_ADMIN): elsewhere the test is skipped,
// or fails under REQLOG_REQUIRE_BACKENDS=1.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		msg := fmt.Sprintf("mounting a %d-byte tmpfs on %s needs root (CAP_SYS_ADMIN): %v", size, dir, err)
		if requireBackends() {
			t.Fatal(msg + " (REQLOG_REQUIRE_BACKENDS=1)")
		}
		t.Skip(msg + "; set REQLOG_REQUIRE_BACKENDS=1 to fail instead")
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a filler file in dir until its file system has at most
// leave bytes free; the returned func removes it.
func fillDisk(t *testing.T, dir string, leave int64) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("filling %s: %v", dir, err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatalf("statfs %s: %v", dir, err)
		}
		avail := int64(st.Bavail) * int64(st.Bsize)
		if avail <= leave {
			break
		}
		n := min(int64(len(chunk)), avail-leave)
		if _, err := f.Write(chunk[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatalf("filling %s: %v", dir, err)
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("removing the filler of %s: %v", dir, err)
		}
	}
}

// listAll reads every page of q, each after the last one's cursor, as an
// export does, calls each (if set) with every message and returns how many
// it read.
func listAll(tb testing.TB, s *sqlite.Store, q domain.Query, now time.Time, each func(domain.Message)) int {
	tb.Helper()
	read := 0
	for {
		page, err := s.List(tb.Context(), q, now)
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range page.Messages {
			if each != nil {
				each(m)
			}
		}
		read += len(page.Messages)
		if q.After = page.Next(); q.After == nil {
			return read
		}
	}
}
