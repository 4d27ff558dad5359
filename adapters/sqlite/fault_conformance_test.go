package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

// Fault harness sizes: the data directory's tmpfs, and the free space below
// which the store refuses writes.
const (
	faultDiskBytes = 64 << 20
	faultMinFree   = 8 << 20
)

// TestFaultConformance runs the fault suite on a store whose "server" is its
// disk. An embedded store has no server to stop; what takes its writes away
// while the process lives is the disk. Stopping fills the data directory's
// tmpfs below Config.MinFreeBytes (writes then fail with ErrUnavailable,
// Ping too, so /readyz goes red), starting frees the space again. A read-only
// remount, the other candidate, is refused by Linux while SQLite holds the
// files open for writing (EBUSY), and a dying disk cannot be had without
// device-mapper.
func TestFaultConformance(t *testing.T) {
	mount := mountTmpfs(t, faultDiskBytes)
	var (
		mu   sync.Mutex
		free func()
	)
	conformance.RunFaultTests(t, conformance.FaultHarness{
		NewStore: func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
			return openStore(ctx, t, sqlite.Config{Dir: filepath.Join(mount, "data"), MinFreeBytes: faultMinFree})
		},
		StopServer: func(t *testing.T) {
			mu.Lock()
			defer mu.Unlock()
			free = fillDisk(t, mount, faultMinFree/2)
		},
		StartServer: func(t *testing.T) {
			mu.Lock()
			defer mu.Unlock()
			if free != nil {
				free()
				free = nil
			}
		},
		Serve:           httpapitest.Serve,
		RequestTimeout:  10 * time.Second,
		RecoveryTimeout: 30 * time.Second,
	})
}
