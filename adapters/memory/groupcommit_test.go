package memory_test

import (
	"context"
	"testing"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// groupCommitted is the memory store written through an app.GroupCommitter.
type groupCommitted struct {
	*memory.Store
	committer *app.GroupCommitter
}

func (s groupCommitted) Append(ctx context.Context, msgs []domain.Message) error {
	return s.committer.Append(ctx, msgs)
}

// The store suite holds through group commit: batching keeps every rule of
// ports.MessageWriter (idempotency, durability on success, refusing bad batches).
func TestConformanceThroughGroupCommit(t *testing.T) {
	conformance.RunStoreTests(t, func(_ context.Context, t *testing.T) (ports.MessageStore, error) {
		store := memory.New()
		committer := app.NewGroupCommitter(store, app.GroupCommitOptions{})
		t.Cleanup(func() {
			if err := committer.Close(context.Background()); err != nil {
				t.Error(err)
			}
		})
		return groupCommitted{Store: store, committer: committer}, nil
	})
}

// TestAPIConformance runs through httpapitest.Serve, which wires appfx.Module on
// app.DefaultConfig(): with group commit, since that is the default.
func TestAPIConformanceRunsWithGroupCommit(t *testing.T) {
	if !app.DefaultConfig().GroupCommit.Enabled {
		t.Fatal("group commit is off by default: TestAPIConformance no longer covers it; run it with group commit on")
	}
}
