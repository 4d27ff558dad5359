package app

import (
	"context"
	"errors"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Module provides the policy, the clock and the use cases, and runs the purge job.
// It needs a Config, a *zap.Logger and a ports.MessageStore from the graph; the use
// cases report their store calls to a Metrics if the graph has one. Submissions go
// through a GroupCommitter unless REQLOG_GROUP_COMMIT is false; it flushes on stop.
var Module = fx.Module("app",
	fx.Provide(
		Config.Policy,
		fx.Annotate(func() SystemClock { return SystemClock{} }, fx.As(new(ports.Clock))),
		newUseCaseStore,
		newIngestQueue,
		func(q ingestQueue, s useCaseStore, p domain.Policy, c ports.Clock, cfg Config) (*Ingester, error) {
			var next ports.MessageWriter = s
			if q.GroupCommitter != nil {
				next = q.GroupCommitter
			}
			return NewIngesterWith(IngestPorts{Store: s, Queue: q.GroupCommitter, Breaker: NewBreaker(next), Lookup: s, Clock: c},
				p, cfg.Admission)
		},
		func(s useCaseStore, p domain.Policy, c ports.Clock, cfg Config) *Reader {
			return NewReaderWith(s, p, c, cfg.Walks)
		},
		(*Reader).Statistics, // one reads for the three, so they share the walks
		(*Reader).Exporter,
		func(s useCaseStore, c ports.Clock, cfg Config, log *zap.Logger) *Purger {
			return NewPurger(s, c, cfg.PurgeInterval, log)
		},
	),
	fx.Invoke(
		CheckReadLag,
		func(lc fx.Lifecycle, p *Purger) {
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { p.Start(); return nil },
				OnStop:  p.Stop,
			})
		},
	),
)

// useCaseStore is the store as the use cases see it: observed when the graph has
// a Metrics.
type useCaseStore struct{ ports.MessageStore }

type useCaseStoreParams struct {
	fx.In
	Store   ports.MessageStore
	Metrics Metrics `optional:"true"`
}

func newUseCaseStore(p useCaseStoreParams) useCaseStore {
	return useCaseStore{Observe(p.Store, p.Metrics)}
}

// ingestQueue is the GroupCommitter the Ingester writes through, nil when group
// commit is off.
type ingestQueue struct{ *GroupCommitter }

type ingestQueueParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Store     useCaseStore
	Config    Config
	Policy    domain.Policy
	Clock     ports.Clock
	Metrics   Metrics `optional:"true"`
}

func newIngestQueue(p ingestQueueParams) ingestQueue {
	if !p.Config.GroupCommit.Enabled {
		return ingestQueue{}
	}
	opts := p.Config.GroupCommit.GroupCommitOptions
	opts.Metrics, _ = p.Metrics.(QueueMetrics)
	opts.Stamper = &StoredTimeStamper{Policy: p.Policy, Clock: p.Clock}
	committer := NewGroupCommitter(p.Store, opts)
	p.Lifecycle.Append(fx.Hook{OnStop: committer.Close})
	return ingestQueue{committer}
}

// AlertsModule provides alerting: the *Alerts use case of the API, and this
// replica's evaluator and delivery worker, started and stopped with the
// service. It needs an AlertConfig, a ports.WebhookSender and the *Statistics
// (Module's) from the graph, and the store's ports.AlertStore: without one,
// alerting is off and *Alerts is nil. It uses a ports.PortalLinker if the graph
// has one, and counts into its Metrics when they implement AlertMetrics.
var AlertsModule = fx.Module("alerts", fx.Provide(newAlerting))

type alertingParams struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Config     AlertConfig
	Store      ports.AlertStore `optional:"true"`
	Sender     ports.WebhookSender
	Statistics *Statistics
	Clock      ports.Clock
	Links      ports.PortalLinker `optional:"true"`
	Metrics    Metrics            `optional:"true"`
	Log        *zap.Logger
}

func newAlerting(p alertingParams) (*Alerts, error) {
	if p.Store == nil {
		p.Log.Info("alerting is off: the store keeps no alert rules")
		return nil, nil
	}
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	owner := ReplicaName()
	cfg := p.Config
	if m, ok := p.Metrics.(AlertMetrics); ok && cfg.Metrics == nil {
		cfg.Metrics = m
	}
	evaluator := NewAlertEvaluator(p.Store, p.Statistics, p.Clock, p.Links, owner, cfg, p.Log)
	worker := NewAlertDeliverer(p.Store, p.Sender, p.Clock, owner, cfg, p.Log)
	alerts := NewAlerts(p.Store, p.Sender, p.Clock, p.Links, cfg, p.Log)
	alerts.WakeOnEvents(worker)
	evaluator.WakeOnEvents(worker)
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error {
			evaluator.Start()
			worker.Start()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			return errors.Join(evaluator.Stop(ctx), worker.Stop(ctx))
		},
	})
	return alerts, nil
}
