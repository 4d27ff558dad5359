package elastic

import (
	"context"
	"fmt"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/adapters/elastic/esquery"
	"github.com/reqlog/reqlog/adapters/elastic/esrollup"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore    = (*Store)(nil)
	_ ports.TallyLookup     = (*Store)(nil)
	_ ports.HealthChecker   = (*Store)(nil)
	_ ports.SampleStreamer  = (*Store)(nil)
	_ ports.StatsAggregator = (*Store)(nil)
)

// Store is the Elasticsearch ports.MessageStore. It is safe for concurrent use.
type Store struct {
	cfg     Config
	client  *esclient.Client
	indices *esindex.Indices
	queries *esquery.Queries
	rollups *esrollup.Rollups
	marked  *statsengine.Marked
	engine  *statsengine.Engine
}

// New checks cfg, checks that the cluster answers, and installs the index
// template (idempotently: start-up may run any number of times). Close releases
// the client.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newUnopened(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.setUp(ctx, time.Now()); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

// setUp installs the templates, brings the indices that exist in line, and
// sets up the rollups' state at now.
func (s *Store) setUp(ctx context.Context, now time.Time) error {
	if err := s.indices.SetUp(ctx); err != nil {
		return err
	}
	return s.rollups.SetUp(ctx, s.cfg.indexConfig().AutoExpandReplicas(), now)
}

// newUnopened checks cfg and builds the client without touching the network.
func newUnopened(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	client, err := esclient.New(cfg.clientConfig())
	if err != nil {
		return nil, err
	}
	indices := esindex.New(client, cfg.indexConfig())
	queries := esquery.New(client, indices.Names())
	rollups := esrollup.New(client, indices.Names(), queries, cfg.RefreshInterval)
	marked := statsengine.NewMarked(rollups)
	engine, err := statsengine.New(statsengine.Sources{Samples: queries, Rollups: marked, Aggregator: queries,
		RollupsOutliveMessages: true}, cfg.Statistics)
	if err != nil {
		return nil, err
	}
	return &Store{cfg: cfg, client: client, indices: indices, queries: queries, rollups: rollups, marked: marked, engine: engine}, nil
}

// List: see esquery.Queries.List.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	return s.queries.List(ctx, q, now)
}

// Lookup: see esquery.Queries.Lookup.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	return s.queries.Lookup(ctx, scope, ids)
}

// LookupTallies: see esquery.Queries.LookupTallies.
func (s *Store) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	return s.queries.LookupTallies(ctx, scope, ids)
}

// Get: see esquery.Queries.Get.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	return s.queries.Get(ctx, scope, idOrReference, now)
}

// Stats answers through the statistics engine, from the rollups kept by
// marks (esrollup), the store's aggregations or its samples, whichever its
// plan costs least (statsengine).
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	st, _, err := s.engine.Stats(ctx, q, now)
	return st, err
}

// StatsTraced is Stats with what it read, for tests and benchmarks, the
// requests it sent to the cluster counted in the trace's StoreRequests.
func (s *Store) StatsTraced(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, statsengine.Trace, error) {
	ctx, requests := esclient.CountRequests(ctx)
	st, tr, err := s.engine.Stats(ctx, q, now)
	tr.StoreRequests = requests.Len()
	return st, tr, err
}

// AggregateStats: see esquery.Queries.AggregateStats.
func (s *Store) AggregateStats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	return s.queries.AggregateStats(ctx, q, now)
}

// StreamSamples: see esquery.Queries.StreamSamples.
func (s *Store) StreamSamples(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, yield func(stats.Sample) error) error {
	return s.queries.StreamSamples(ctx, scope, f, now, yield)
}

// MarkExisting marks the messages an earlier version stored without marks
// and keeps their minutes' rollups, so that the statistics count them from
// rollups too (esrollup); a no-op once done. The service runs it in the
// background at start.
func (s *Store) MarkExisting(ctx context.Context) error {
	return s.rollups.MarkExisting(ctx, func(ctx context.Context, span statsengine.ScopeSpan) error {
		return s.marked.KeepAll(ctx, span.Scope, span.From, span.To)
	})
}

// PurgeExpired: see esquery.Queries.PurgeExpired. Before a day's messages
// go, the rollup of every marked minute of the day is counted and kept at
// its mark's version (keepRollupsOf), so the statistics count them after.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	return s.queries.PurgeExpired(ctx, now, s.keepRollupsOf)
}

// keepRollupsOf counts and keeps the rollups of every scope's marked
// minutes of days whose messages are about to be deleted, from those
// messages, where none is kept at the mark's version.
func (s *Store) keepRollupsOf(ctx context.Context, days []time.Time) error {
	for _, day := range days {
		scopes, err := s.rollups.Scopes(ctx, day)
		if err != nil {
			return err
		}
		for _, scope := range scopes {
			if err := s.marked.KeepAll(ctx, scope, day, day.Add(24*time.Hour)); err != nil {
				return err
			}
		}
	}
	return nil
}

// PurgeRollups deletes the daily indices of rollups whose day ended by
// before (ports.RollupKeeper): see esquery.Queries.PurgeRollups.
func (s *Store) PurgeRollups(ctx context.Context, before time.Time) (int64, error) {
	return s.queries.PurgeRollups(ctx, before)
}

// Close releases the client; the store is unusable afterwards.
func (s *Store) Close(ctx context.Context) error { return s.client.Close(ctx) }

// ReadLag is the refresh interval: a write becomes searchable at the next
// refresh of its index.
func (s *Store) ReadLag() time.Duration { return s.cfg.RefreshInterval }

// Ping asks for the health of the store's indices, within PingTimeout. A red
// index (a primary shard unassigned) makes reads fail, so it counts as down.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PingTimeout)
	defer cancel()
	var health struct {
		Status string `json:"status"`
	}
	pattern := s.indices.Names().ReadPattern()
	if err := s.client.Do(ctx, "ping", esapi.ClusterHealthRequest{Index: []string{pattern}}, &health); err != nil {
		return err
	}
	if health.Status == "red" {
		return fmt.Errorf("elastic: ping: %w: the health of %s is red", ports.ErrUnavailable, pattern)
	}
	return nil
}
