package app

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/ports"
)

// Purger deletes expired messages: once at Start, then every interval until Stop.
type Purger struct {
	store    ports.ExpiredPurger
	clock    ports.Clock
	interval time.Duration
	log      *zap.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPurger returns a stopped purge job.
func NewPurger(store ports.ExpiredPurger, clock ports.Clock, interval time.Duration, log *zap.Logger) *Purger {
	return &Purger{store: store, clock: clock, interval: interval, log: log.Named("purge")}
}

// Start runs the job in the background; a second Start is a no-op.
func (p *Purger) Start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(ctx, p.done)
}

// Stop cancels a running purge and waits for the job to end, or for ctx.
func (p *Purger) Stop(ctx context.Context) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.cancel, p.done = nil, nil
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Purger) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		p.PurgeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// PurgeOnce deletes what has expired at the clock's now and logs the outcome.
func (p *Purger) PurgeOnce(ctx context.Context) {
	started := time.Now()
	n, err := p.store.PurgeExpired(ctx, p.clock.Now())
	elapsed := zap.Duration("duration", time.Since(started))
	switch {
	case err != nil && ctx.Err() != nil:
		p.log.Debug("purge cancelled by shutdown", elapsed)
	case err != nil:
		p.log.Error("purging expired messages failed", zap.Error(err), elapsed)
	case n != 0: // -1: the store deleted some but cannot tell how many
		p.log.Info("purged expired messages", zap.Int64("deleted", n), elapsed)
	default:
		p.log.Debug("no expired messages to purge", elapsed)
	}
}
