package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// CoreDeps are what NewCore builds the use cases on, besides their Config.
type CoreDeps struct {
	// Store keeps the messages; required. Its optional capabilities are used:
	// ports.StatsWarmer runs at Start.
	Store ports.MessageStore
	// Policy overrides Config.Policy() (nil: Config's).
	Policy *domain.Policy
	// Clock tells the time (nil: SystemClock).
	Clock ports.Clock
	// Metrics hears of store calls, and of the ingest queue when it is a
	// QueueMetrics too (nil: not observed).
	Metrics Metrics
	// Log receives the background work's logs (nil: no logs).
	Log *zap.Logger
	// Alerting runs when it has a store.
	Alerting AlertingDeps
	// RuleSets keeps the accounts' rule sets (nil: none; only the accounts of
	// Config.Rules.File have rules). Metrics hears what rules do when it is a
	// RuleMetrics too. Re-scrubs run when it is a ports.RescrubJobStore and
	// Store a ports.MessageRewriter.
	RuleSets ports.RuleSetStore
	// Erasures journals the erasures (nil: none, and erasures are not
	// available); the store erases when it is a ports.Eraser.
	Erasures ports.ErasureJournal
}

// AlertingDeps are what alerting runs on.
type AlertingDeps struct {
	// Store keeps rules, states and the delivery queue (nil: alerting is off,
	// and Core.Alerts nil).
	Store ports.AlertStore
	// Config tunes the evaluator and the delivery worker (zero:
	// DefaultAlertConfig()).
	Config AlertConfig
	// Sender delivers webhooks; required with a Store.
	Sender ports.WebhookSender
	// Links makes the portal links of events (nil: events carry none).
	Links ports.PortalLinker
}

// Core is the use cases on one store, with the work that runs beside them:
// group commit (unless Config.GroupCommit is off) behind the breaker, the
// accounts' rule sets every write goes through (polled from their store), the
// read limits, the purge job, the statistics warm-up, and alerting when it has
// a store. The fx module (appfx.Module) and an embedder's constructor both build it
// with NewCore, so the two get the same thing.
type Core struct {
	Policy     domain.Policy
	Clock      ports.Clock
	Ingester   *Ingester
	Reader     *Reader
	Statistics *Statistics // the Reader's: one reads for the three, so they share the walks
	Exporter   *Exporter
	Alerts     *Alerts // nil: alerting is off
	RuleSets   *RuleSets
	Rescrubs   *Rescrubs
	Erasures   *Erasures

	queue     *GroupCommitter // nil: group commit is off
	rules     *RuleBook
	purger    *Purger
	erasures  *ErasureJob
	evaluator *AlertEvaluator // nil with Alerts
	deliverer *AlertDeliverer // nil with Alerts
	warmer    ports.StatsWarmer
	warm      loop
	log       *zap.Logger
}

// NewCore checks cfg and the store's read lag against the visibility delay,
// and builds the use cases; nothing runs before Start.
func NewCore(cfg Config, deps CoreDeps) (*Core, error) {
	if deps.Store == nil {
		return nil, errors.New("app: the core needs a store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Core{Policy: cfg.Policy(), Clock: deps.Clock, log: named(deps.Log, "core")}
	if deps.Policy != nil {
		c.Policy = *deps.Policy
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	var err error
	if err = CheckReadLag(c.Policy, deps.Store); err != nil {
		return nil, err
	}
	c.warmer, _ = deps.Store.(ports.StatsWarmer)
	store := Observe(deps.Store, deps.Metrics)

	var next ports.MessageWriter = store
	if cfg.GroupCommit.Enabled {
		opts := cfg.GroupCommit.GroupCommitOptions
		opts.Metrics, _ = deps.Metrics.(QueueMetrics)
		opts.Stamper = &StoredTimeStamper{Policy: c.Policy, Clock: c.Clock}
		c.queue = NewGroupCommitter(store, opts)
		next = c.queue
	}
	ruleMetrics, _ := deps.Metrics.(RuleMetrics)
	if c.rules, err = NewRuleBook(deps.RuleSets, cfg.Rules, ruleMetrics, deps.Log); err != nil {
		return nil, fmt.Errorf("app: the rules file: %w", err)
	}
	ingester, err := NewIngesterWith(IngestPorts{Store: store, Queue: c.queue, Breaker: NewBreaker(next), Lookup: store, Clock: c.Clock,
		Rules: c.rules}, c.Policy, cfg.Admission)
	if err != nil {
		return nil, err
	}
	c.Ingester = ingester
	c.Reader = NewReaderWith(store, c.Policy, c.Clock, cfg.Walks)
	c.RuleSets = NewRuleSets(deps.RuleSets, c.rules, c.Reader, c.Policy, c.Clock)
	jobs, _ := deps.RuleSets.(ports.RescrubJobStore)
	rewriter, _ := deps.Store.(ports.MessageRewriter)
	indexer, _ := deps.Store.(ports.SubjectIndexer)
	c.Rescrubs = NewRescrubs(jobs, rewriter, deps.RuleSets, indexer, c.rules, c.Clock, cfg.Rules.Rescrub, cfg.Rules.Poll, deps.Log)
	rescrubMetrics, _ := deps.Metrics.(RescrubMetrics)
	c.Rescrubs.observed(rescrubMetrics)
	c.Statistics, c.Exporter = c.Reader.Statistics(), c.Reader.Exporter()
	c.purger = NewPurger(store, c.Clock, cfg.PurgeInterval, deps.Log).WithRetention(c.rules.CurrentRetention(c.Policy.Retention))
	if keeper, ok := deps.Store.(ports.RollupKeeper); ok {
		c.purger.KeepRollups(keeper, c.Policy)
	}
	// The store itself, not its observed wrapper: erasing is a capability.
	eraser, _ := deps.Store.(ports.Eraser)
	// An erasure is answered once every replica's reads leave it out: the
	// rule sets' poll, and at least the store's read lag, so that the message
	// an erasure by id hid is unreadable by then.
	c.Reader.reads.tombstones = newTombstones(deps.Erasures, eraser, max(c.rules.poll, store.ReadLag()))
	c.erasures = newErasureJob(eraser, deps.Erasures, c.Clock, cfg.Erasure, c.rules.poll, store.ReadLag(), c.rules.forget, c.Reader.reads.tombstones, deps.Log)
	c.Erasures = newErasures(eraser, deps.Erasures, c.Reader, cfg.Rules, c.Clock, cfg.Erasure, c.rules.forget, c.erasures)
	if err := c.alerting(deps.Alerting, deps.Metrics, deps.Log); err != nil {
		return nil, err
	}
	return c, nil
}

// alerting builds the Alerts use case and this replica's evaluator and
// delivery worker, when there is an alert store; they count into metrics
// when those implement AlertMetrics.
func (c *Core) alerting(deps AlertingDeps, metrics Metrics, log *zap.Logger) error {
	if deps.Store == nil {
		c.log.Info("alerting is off: the store keeps no alert rules")
		return nil
	}
	if deps.Sender == nil {
		return errors.New("app: alerting needs a webhook sender")
	}
	cfg := deps.Config
	if cfg == (AlertConfig{}) {
		cfg = DefaultAlertConfig()
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if m, ok := metrics.(AlertMetrics); ok && cfg.Metrics == nil {
		cfg.Metrics = m
	}
	owner := ReplicaName()
	c.evaluator = NewAlertEvaluator(deps.Store, c.Statistics, c.Clock, deps.Links, owner, cfg, log)
	c.deliverer = NewAlertDeliverer(deps.Store, deps.Sender, c.Clock, owner, cfg, log)
	c.Alerts = NewAlerts(deps.Store, deps.Sender, c.Clock, deps.Links, cfg, log)
	c.Alerts.WakeOnEvents(c.deliverer)
	c.evaluator.WakeOnEvents(c.deliverer)
	return nil
}

// Start runs the background work: the rule sets' polling, the purge job, the
// alert loops and, on a store that has it, the statistics warm-up. A second
// Start is a no-op.
func (c *Core) Start() {
	c.rules.Start()
	c.Rescrubs.Start()
	c.purger.Start()
	c.erasures.Start()
	if c.Alerts != nil {
		c.evaluator.Start()
		c.deliverer.Start()
	}
	if c.warmer != nil {
		c.warm.start(c.warmStats)
	}
}

// EraseNow runs the erasure job once, now (ErasureJob.Run): what the
// background job does every ErasureConfig.Within/24, and at start with
// reapply. While another replica's job works, it fails with
// ErrErasureLeaseElsewhere (as HidePendingNow does).
func (c *Core) EraseNow(ctx context.Context, reapply bool) error { return c.erasures.Run(ctx, reapply) }

// HidePendingNow hides the messages of every pending erasure now
// (ErasureJob.HidePending): what the background job does as soon as an
// erasure is journaled.
func (c *Core) HidePendingNow(ctx context.Context) error { return c.erasures.HidePending(ctx) }

// warmStats counts the statistics the first charts will ask for; a failure
// costs only their speed.
func (c *Core) warmStats(ctx context.Context) {
	start := time.Now()
	if err := c.warmer.WarmStats(ctx, start); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("counting the busiest scopes' statistics at start failed; their first chart reads every minute", zap.Error(err))
		}
		return
	}
	c.log.Debug("statistics warmed", zap.Duration("took", time.Since(start)))
}

// Stop ends the background work and writes what the ingest queue holds, in
// that order: the alert loops, then the queue (its submissions acknowledged
// once written), then the purge job and the warm-up. Stop the servers that
// submit first, and close the store after. If ctx ends first, what is still
// queued fails with ports.ErrUnavailable and Stop returns ctx's error.
func (c *Core) Stop(ctx context.Context) error {
	var errs []error
	if c.Alerts != nil {
		errs = append(errs, c.evaluator.Stop(ctx), c.deliverer.Stop(ctx))
	}
	if c.queue != nil {
		errs = append(errs, c.queue.Close(ctx))
	}
	errs = append(errs, c.Rescrubs.Stop(ctx), c.purger.Stop(ctx), c.erasures.Stop(ctx), c.warm.stop(ctx), c.rules.Stop(ctx))
	return errors.Join(errs...)
}
