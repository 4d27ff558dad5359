package app

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Purger deletes expired messages: once at Start, then every interval until
// Stop; and, of a store that keeps rollups past its messages, the rollups
// past their own retention (KeepRollups).
type Purger struct {
	store    ports.ExpiredPurger
	rollups  ports.RollupKeeper // nil: the store keeps none past its messages
	policy   domain.Policy
	current  ports.RetentionOf // nil: PurgeExpired alone
	clock    ports.Clock
	interval time.Duration
	log      *zap.Logger
	loop     loop
}

// NewPurger returns a stopped purge job.
func NewPurger(store ports.ExpiredPurger, clock ports.Clock, interval time.Duration, log *zap.Logger) *Purger {
	return &Purger{store: store, clock: clock, interval: interval, log: named(log, "purge")}
}

// KeepRollups has each purge also delete the rollups store keeps that are
// older than policy's rollup retention (domain.Policy.OldestRollup).
func (p *Purger) KeepRollups(store ports.RollupKeeper, policy domain.Policy) {
	p.rollups, p.policy = store, policy
}

// WithRetention makes the job apply the retention rules' current retention
// to what each class holds, when the store keeps classes apart
// (ports.RetentionPurger).
func (p *Purger) WithRetention(current ports.RetentionOf) *Purger {
	p.current = current
	return p
}

// purge deletes the messages expired at now: by each class's current
// retention where the store keeps classes apart, else by their stamped expiry.
func (p *Purger) purge(ctx context.Context, now time.Time) (int64, error) {
	if rp, ok := p.store.(ports.RetentionPurger); ok && p.current != nil {
		return rp.PurgeRetention(ctx, now, p.current)
	}
	return p.store.PurgeExpired(ctx, now)
}

// Start runs the job in the background; a second Start is a no-op.
func (p *Purger) Start() {
	p.loop.start(func(ctx context.Context) {
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
	})
}

// Stop cancels a running purge and waits for the job to end, or for ctx.
func (p *Purger) Stop(ctx context.Context) error { return p.loop.stop(ctx) }

// PurgeOnce deletes what has expired at the clock's now and logs the outcome.
func (p *Purger) PurgeOnce(ctx context.Context) {
	now := p.clock.Now()
	p.purgeMessages(ctx, now)
	if p.rollups != nil {
		p.purgeRollups(ctx, now)
	}
}

// purgeRollups deletes the kept rollups past their retention at now.
func (p *Purger) purgeRollups(ctx context.Context, now time.Time) {
	n, err := p.rollups.PurgeRollups(ctx, p.policy.OldestRollup(now))
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil:
		p.log.Error("purging expired rollups failed", zap.Error(err))
	case n != 0:
		p.log.Info("purged expired rollups", zap.Int64("deleted", n))
	}
}

func (p *Purger) purgeMessages(ctx context.Context, now time.Time) {
	started := time.Now()
	n, err := p.purge(ctx, now)
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
