package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// dueAccountsRead bounds the accounts one look at the queue takes turns
// between.
const dueAccountsRead = 1000

// The back-off of an endpoint that timed out: its next attempt waits
// endpointBackoff after the first timeout, doubling after each further one up
// to endpointBackoffMax.
const (
	endpointBackoff    = 5 * time.Second
	endpointBackoffMax = 5 * time.Minute
)

// AlertDeliverer is the delivery worker: it claims due deliveries from the
// queue (a lease per delivery, so replicas share the queue and never attempt
// one at the same time), sends each through the WebhookSender, logs the
// attempt and stores the outcome: delivered, due again on the retry schedule,
// or failed for good. A 410 Gone disables the endpoint. A worker that stops
// mid-attempt leaves its lease to run out; another then sends the same event,
// with the same webhook-id, again: delivery is at least once.
//
// Its slots are shared between accounts, not handed out oldest first: it
// claims one delivery at a time in turns between the accounts that have some
// due (the account served longest ago first), at most DeliveryPerAccount of
// one account's attempts and one per endpoint at a time, and starts the next
// claim as soon as a slot frees. An endpoint that times out is backed off,
// and disabled after EndpointDisableAfter without a reply. So one account's
// endpoints that hang until the timeout delay that account only.
type AlertDeliverer struct {
	store        ports.AlertStore
	sender       ports.WebhookSender
	clock        ports.Clock
	owner        string
	lease        time.Duration
	slots        int
	perAccount   int
	disableAfter time.Duration
	poll         time.Duration
	log          *zap.Logger
	metrics      AlertMetrics
	wakeUp       chan struct{}
	loop         loop

	mu       sync.Mutex
	running  int
	inFlight map[string]int       // account -> its attempts under way
	busy     map[string]string    // endpoint id -> its account, while attempted
	served   map[string]uint64    // account -> the turn it last got a slot at
	turn     uint64               // turns handed out so far
	silent   map[string]*timeouts // endpoint id -> its timeouts in a row
}

// timeouts is an endpoint's run of attempts without a reply.
type timeouts struct {
	account string
	count   int
	since   time.Time // the first of the run
	until   time.Time // no attempt before
}

// NewAlertDeliverer returns a stopped worker; owner names this replica in the
// leases.
func NewAlertDeliverer(store ports.AlertStore, sender ports.WebhookSender, clock ports.Clock, owner string,
	cfg AlertConfig, log *zap.Logger) *AlertDeliverer {
	return &AlertDeliverer{store: store, sender: sender, clock: clock, owner: owner, lease: cfg.DeliveryLease,
		slots: cfg.DeliveryConcurrency, perAccount: cfg.DeliveryPerAccount, disableAfter: cfg.EndpointDisableAfter,
		poll: cfg.Poll, log: named(log, "alerts"), metrics: alertMetricsOf(cfg), wakeUp: make(chan struct{}, 1),
		inFlight: map[string]int{}, busy: map[string]string{}, served: map[string]uint64{}, silent: map[string]*timeouts{}}
}

// Wake makes a running worker look at the queue now.
func (d *AlertDeliverer) Wake() {
	select {
	case d.wakeUp <- struct{}{}:
	default:
	}
}

// DeliverOnce claims what its free slots can take and attempts it, all at
// once, and returns how many it claimed.
func (d *AlertDeliverer) DeliverOnce(ctx context.Context) (int, error) {
	now := d.clock.Now()
	claimed, err := d.claim(ctx, now)
	var wg sync.WaitGroup
	errs := make([]error, len(claimed))
	for i, delivery := range claimed {
		wg.Go(func() {
			defer d.release(delivery)
			errs[i] = d.attempt(ctx, delivery, now)
		})
	}
	wg.Wait()
	return len(claimed), errors.Join(append(errs, err)...)
}

// claim takes due deliveries for the free slots, one at a time, in turns
// between the accounts that have some; each is held (in flight) until
// release. An account at DeliveryPerAccount is passed over, and so are
// endpoints under way or backed off.
func (d *AlertDeliverer) claim(ctx context.Context, now time.Time) ([]alerting.Delivery, error) {
	if d.free() == 0 {
		return nil, nil
	}
	accounts, err := d.store.DueAccounts(ctx, now, dueAccountsRead)
	if err != nil {
		return nil, fmt.Errorf("alerts: accounts with due deliveries: %w", err)
	}
	d.takeTurns(accounts)
	var claimed []alerting.Delivery
	for len(accounts) > 0 {
		stillDue := accounts[:0]
		for _, account := range accounts {
			except, ok := d.room(account, now)
			if !ok {
				continue
			}
			got, err := d.store.Claim(ctx, d.owner, now, now.Add(d.lease),
				ports.ClaimQuery{Account: account, ExceptEndpoints: except, Limit: 1})
			if err != nil {
				return claimed, fmt.Errorf("alerts: claim deliveries: %w", err)
			}
			if len(got) == 0 {
				continue
			}
			d.hold(got[0])
			claimed = append(claimed, got[0])
			stillDue = append(stillDue, account)
		}
		accounts = stillDue
	}
	return claimed, nil
}

// free is how many slots have no attempt.
func (d *AlertDeliverer) free() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.slots - d.running
}

// takeTurns orders accounts by the turn each last got a slot at, never first,
// and forgets the turns of accounts with nothing due nor under way.
func (d *AlertDeliverer) takeTurns(accounts []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	slices.SortFunc(accounts, func(a, b string) int { return cmp.Or(cmp.Compare(d.served[a], d.served[b]), cmp.Compare(a, b)) })
	for account := range d.served {
		if d.inFlight[account] == 0 && !slices.Contains(accounts, account) {
			delete(d.served, account)
		}
	}
}

// room reports whether a slot is free for account, and the endpoints of
// account not to attempt now.
func (d *AlertDeliverer) room(account string, now time.Time) ([]string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running >= d.slots || d.inFlight[account] >= d.perAccount {
		return nil, false
	}
	var except []string
	for endpoint, owner := range d.busy {
		if owner == account {
			except = append(except, endpoint)
		}
	}
	for endpoint, t := range d.silent {
		if t.account == account && t.until.After(now) {
			except = append(except, endpoint)
		}
	}
	return except, true
}

// hold counts a claimed delivery in flight, and its account as served.
func (d *AlertDeliverer) hold(delivery alerting.Delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	account := delivery.Scope.Account
	d.running++
	d.inFlight[account]++
	d.busy[delivery.EndpointID] = account
	d.turn++
	d.served[account] = d.turn
}

// release frees the slot of a delivery held since claim.
func (d *AlertDeliverer) release(delivery alerting.Delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	account := delivery.Scope.Account
	d.running--
	if d.inFlight[account]--; d.inFlight[account] <= 0 {
		delete(d.inFlight, account)
	}
	delete(d.busy, delivery.EndpointID)
}

// attempt makes one attempt of delivery at time now and records it.
func (d *AlertDeliverer) attempt(ctx context.Context, delivery alerting.Delivery, now time.Time) error {
	endpoint, err := d.store.Endpoint(ctx, delivery.Scope, delivery.EndpointID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		d.answered(delivery.EndpointID)
		return d.finish(ctx, delivery.Abandon("the endpoint was deleted", now))
	case err != nil:
		return fmt.Errorf("alerts: endpoint of delivery %s: %w", delivery.ID, err)
	case !endpoint.Enabled:
		d.answered(delivery.EndpointID)
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
	switch {
	case outcome.Gone():
		d.answered(endpoint.ID)
		reason := "the endpoint answered 410 Gone at " + domain.FormatTime(now)
		if err := d.disable(ctx, endpoint, reason, DisabledGone, now); err != nil {
			return err
		}
	case outcome.TimedOut:
		if t, disable := d.timedOut(endpoint, d.clock.Now()); disable {
			reason := fmt.Sprintf("no reply within the timeout to any of %d attempts since %s", t.count, domain.FormatTime(t.since))
			if err := d.disable(ctx, endpoint, reason, DisabledTimeout, now); err != nil {
				return err
			}
		}
	default:
		d.answered(endpoint.ID)
	}
	return d.finish(ctx, delivery.Record(outcome, now))
}

// timedOut counts a timeout of endpoint at now, backs it off, and reports
// whether it has gone without a reply for EndpointDisableAfter.
func (d *AlertDeliverer) timedOut(endpoint alerting.Endpoint, now time.Time) (timeouts, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.silent[endpoint.ID]
	if t == nil {
		t = &timeouts{account: endpoint.Scope.Account, since: now}
		d.silent[endpoint.ID] = t
	}
	t.count++
	t.until = now.Add(min(endpointBackoff<<min(t.count-1, 16), endpointBackoffMax))
	disable := d.disableAfter > 0 && now.Sub(t.since) >= d.disableAfter
	if disable {
		delete(d.silent, endpoint.ID)
	}
	return *t, disable
}

// answered ends an endpoint's run of timeouts: it replied, or is gone.
func (d *AlertDeliverer) answered(endpointID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.silent, endpointID)
}

// disable turns endpoint off for reason, as its owner would, and says so.
func (d *AlertDeliverer) disable(ctx context.Context, endpoint alerting.Endpoint, reason, kind string, now time.Time) error {
	endpoint.Enabled, endpoint.DisabledReason, endpoint.UpdatedAt = false, reason, domain.Micro(now)
	if err := d.store.UpdateEndpoint(ctx, endpoint); err != nil && !errors.Is(err, ports.ErrNotFound) {
		return fmt.Errorf("alerts: disabling endpoint %s: %w", endpoint.ID, err)
	}
	d.metrics.ObserveEndpointDisabled(kind)
	d.log.Warn("webhook endpoint disabled", zap.String("endpoint", endpoint.ID),
		zap.String("account", endpoint.Scope.Account), zap.String("reason", reason))
	return nil
}

// finish stores the outcome; a lease lost meanwhile is not an error (the
// delivery is another worker's now), nor a delivery dropped from its
// account's full queue during the attempt.
func (d *AlertDeliverer) finish(ctx context.Context, delivery alerting.Delivery) error {
	switch err := d.store.Finish(ctx, delivery, d.owner); {
	case errors.Is(err, ports.ErrStale):
		d.log.Info("a delivery was taken over by another worker before its attempt ended", zap.String("delivery", delivery.ID))
		return nil
	case errors.Is(err, ports.ErrNotFound):
		d.log.Info("a delivery was dropped from its account's full queue during its attempt", zap.String("delivery", delivery.ID))
		return nil
	case err != nil:
		return fmt.Errorf("alerts: delivery %s: %w", delivery.ID, err)
	}
	return nil
}

// Start runs the worker until Stop: every Poll, when woken, and whenever an
// attempt ends, it fills its free slots from the queue.
func (d *AlertDeliverer) Start() {
	d.loop.start(func(ctx context.Context) {
		ticker := time.NewTicker(d.poll)
		defer ticker.Stop()
		var attempts sync.WaitGroup
		defer attempts.Wait()
		ended := make(chan struct{}, 1)
		for {
			now := d.clock.Now()
			claimed, err := d.claim(ctx, now)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("alert delivery failed", zap.Error(err))
			}
			for _, delivery := range claimed {
				attempts.Go(func() {
					defer func() {
						d.release(delivery)
						select {
						case ended <- struct{}{}:
						default:
						}
					}()
					if err := d.attempt(ctx, delivery, now); err != nil && ctx.Err() == nil {
						d.log.Warn("alert delivery failed", zap.Error(err))
					}
				})
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			case <-d.wakeUp:
			case <-ended:
			}
		}
	})
}

// Stop ends the worker and waits for it, or for ctx; attempts under way are
// cancelled.
func (d *AlertDeliverer) Stop(ctx context.Context) error { return d.loop.stop(ctx) }

// queueBound keeps each account's queue within
// AlertConfig.MaxPendingDeliveries: past it, the account's oldest tests, then
// its oldest other deliveries, are dropped down to nine tenths of it, so that
// an account at its bound has its queue read once per tenth, not per event.
type queueBound struct {
	store   ports.AlertDeliveryStore
	clock   ports.Clock
	limit   int
	metrics AlertMetrics
	log     *zap.Logger
}

func newQueueBound(store ports.AlertDeliveryStore, clock ports.Clock, cfg AlertConfig, log *zap.Logger) *queueBound {
	return &queueBound{store: store, clock: clock, limit: cfg.MaxPendingDeliveries, metrics: alertMetricsOf(cfg), log: log}
}

// enforce drops what account holds beyond the bound. A failure is logged:
// the events it follows are queued.
func (b *queueBound) enforce(ctx context.Context, account string) {
	dropped, err := b.store.DropExcess(ctx, account, b.limit, b.limit-b.limit/10, b.clock.Now())
	if err != nil {
		b.log.Warn("bounding an account's webhook queue failed", zap.String("account", account), zap.Error(err))
		return
	}
	if len(dropped) == 0 {
		return
	}
	tests := 0
	for _, d := range dropped {
		if d.Event.Type == alerting.EventTest {
			tests++
		}
	}
	b.metrics.ObserveDeliveriesDropped(tests, len(dropped)-tests)
	b.log.Warn("webhook deliveries dropped: the account's queue was full", zap.String("account", account),
		zap.Int("tests", tests), zap.Int("others", len(dropped)-tests), zap.Int("max_pending", b.limit))
}
