package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// deliveryBatch is how many deliveries a worker claims at a time.
const deliveryBatch = 16

// AlertDeliverer is the delivery worker: it claims due deliveries from the
// queue (a lease per delivery, so replicas share the queue and never attempt
// one at the same time), sends each through the WebhookSender, logs the
// attempt and stores the outcome: delivered, due again on the retry schedule,
// or failed for good. A 410 Gone disables the endpoint. A worker that stops
// mid-attempt leaves its lease to run out; another then sends the same event,
// with the same webhook-id, again: delivery is at least once.
type AlertDeliverer struct {
	store       ports.AlertStore
	sender      ports.WebhookSender
	clock       ports.Clock
	owner       string
	lease       time.Duration
	concurrency int
	poll        time.Duration
	log         *zap.Logger
	wakeUp      chan struct{}
	loop        loop
}

// NewAlertDeliverer returns a stopped worker; owner names this replica in the
// leases.
func NewAlertDeliverer(store ports.AlertStore, sender ports.WebhookSender, clock ports.Clock, owner string,
	cfg AlertConfig, log *zap.Logger) *AlertDeliverer {
	return &AlertDeliverer{store: store, sender: sender, clock: clock, owner: owner, lease: cfg.DeliveryLease,
		concurrency: cfg.DeliveryConcurrency, poll: cfg.Poll, log: named(log, "alerts"), wakeUp: make(chan struct{}, 1)}
}

// Wake makes a running worker look at the queue now.
func (d *AlertDeliverer) Wake() {
	select {
	case d.wakeUp <- struct{}{}:
	default:
	}
}

// DeliverOnce claims up to one batch of due deliveries and attempts them, a
// few at a time, and returns how many it claimed.
func (d *AlertDeliverer) DeliverOnce(ctx context.Context) (int, error) {
	now := d.clock.Now()
	claimed, err := d.store.Claim(ctx, d.owner, now, now.Add(d.lease), deliveryBatch)
	if err != nil {
		return 0, fmt.Errorf("alerts: claim deliveries: %w", err)
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, d.concurrency)
	errs := make([]error, len(claimed))
	for i, delivery := range claimed {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = d.attempt(ctx, delivery, now)
		})
	}
	wg.Wait()
	return len(claimed), errors.Join(errs...)
}

// attempt makes one attempt of delivery at time now and records it.
func (d *AlertDeliverer) attempt(ctx context.Context, delivery alerting.Delivery, now time.Time) error {
	endpoint, err := d.store.Endpoint(ctx, delivery.Scope, delivery.EndpointID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return d.finish(ctx, delivery.Abandon("the endpoint was deleted", now))
	case err != nil:
		return fmt.Errorf("alerts: endpoint of delivery %s: %w", delivery.ID, err)
	case !endpoint.Enabled:
		return d.finish(ctx, delivery.Abandon("the endpoint is disabled", now))
	}
	started := time.Now()
	outcome, response := d.sender.Send(ctx, endpoint, delivery, now)
	took := time.Since(started)
	if ctx.Err() != nil {
		return ctx.Err() // stopping: the lease runs out and another worker sends it again
	}
	attempt, err := alerting.NewAttempt(delivery, delivery.Attempts+1, now, outcome, took, response)
	if err == nil {
		err = d.store.LogAttempt(ctx, attempt)
	}
	if err != nil {
		d.log.Warn("logging a delivery attempt failed", zap.String("delivery", delivery.ID), zap.Error(err))
	}
	if outcome.Gone() {
		endpoint.Enabled = false
		endpoint.DisabledReason = "the endpoint answered 410 Gone at " + domain.FormatTime(now)
		endpoint.UpdatedAt = domain.Micro(now)
		if err := d.store.UpdateEndpoint(ctx, endpoint); err != nil && !errors.Is(err, ports.ErrNotFound) {
			return fmt.Errorf("alerts: disabling endpoint %s: %w", endpoint.ID, err)
		}
		d.log.Warn("webhook endpoint disabled: it answered 410 Gone", zap.String("endpoint", endpoint.ID),
			zap.String("account", endpoint.Scope.Account))
	}
	return d.finish(ctx, delivery.Record(outcome, now))
}

// finish stores the outcome; a lease lost meanwhile is not an error (the
// delivery is another worker's now).
func (d *AlertDeliverer) finish(ctx context.Context, delivery alerting.Delivery) error {
	switch err := d.store.Finish(ctx, delivery, d.owner); {
	case errors.Is(err, ports.ErrStale):
		d.log.Info("a delivery was taken over by another worker before its attempt ended", zap.String("delivery", delivery.ID))
		return nil
	case err != nil:
		return fmt.Errorf("alerts: delivery %s: %w", delivery.ID, err)
	}
	return nil
}

// Start runs the worker until Stop: every Poll, or when woken, it delivers
// until the queue has nothing due.
func (d *AlertDeliverer) Start() {
	d.loop.start(func(ctx context.Context) {
		ticker := time.NewTicker(d.poll)
		defer ticker.Stop()
		for {
			for {
				n, err := d.DeliverOnce(ctx)
				if err != nil && ctx.Err() == nil {
					d.log.Warn("alert delivery failed", zap.Error(err))
				}
				if n < deliveryBatch || err != nil {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			case <-d.wakeUp:
			}
		}
	})
}

// Stop ends the worker and waits for it, or for ctx; attempts under way are
// cancelled.
func (d *AlertDeliverer) Stop(ctx context.Context) error { return d.loop.stop(ctx) }
