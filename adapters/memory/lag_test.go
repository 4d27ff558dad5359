package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// laggingStore makes each write searchable only lag after Append returns, the way
// Elasticsearch's refresh interval does, so that the conformance suite's waiting
// for eventually consistent stores is itself exercised on every run.
type laggingStore struct {
	*memory.Store
	lag time.Duration

	mu      sync.Mutex
	pending []pendingBatch
}

type pendingBatch struct {
	due  time.Time
	msgs []domain.Message
}

func (l *laggingStore) Append(_ context.Context, msgs []domain.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	clones := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		clones[i] = m.Clone()
	}
	l.pending = append(l.pending, pendingBatch{due: time.Now().Add(l.lag), msgs: clones})
	return nil
}

// refresh makes the batches that are due searchable.
func (l *laggingStore) refresh(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for len(l.pending) > 0 && !l.pending[0].due.After(now) {
		if err := l.Store.Append(ctx, l.pending[0].msgs); err != nil {
			return err
		}
		l.pending = l.pending[1:]
	}
	return nil
}

func (l *laggingStore) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if err := l.refresh(ctx); err != nil {
		return domain.Page{}, err
	}
	return l.Store.List(ctx, q, now)
}

func (l *laggingStore) Get(ctx context.Context, scope domain.Scope, key string, now time.Time) (domain.Message, error) {
	if err := l.refresh(ctx); err != nil {
		return domain.Message{}, err
	}
	return l.Store.Get(ctx, scope, key, now)
}

func (l *laggingStore) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	if err := l.refresh(ctx); err != nil {
		return nil, err
	}
	return l.Store.Lookup(ctx, scope, ids)
}

func (l *laggingStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	if err := l.refresh(ctx); err != nil {
		return stats.Stats{}, err
	}
	return l.Store.Stats(ctx, q, now)
}

func (l *laggingStore) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := l.refresh(ctx); err != nil {
		return 0, err
	}
	return l.Store.PurgeExpired(ctx, now)
}

func (l *laggingStore) ReadLag() time.Duration { return l.lag }

func TestConformanceWithReadLag(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a simulated read lag in every subtest")
	}
	conformance.RunStoreTests(t, func(context.Context, *testing.T) (ports.MessageStore, error) {
		return &laggingStore{Store: memory.New(), lag: 100 * time.Millisecond}, nil
	})
}
