package elastic

import (
	"context"
	"fmt"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/adapters/elastic/esquery"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.HealthChecker = (*Store)(nil)
)

// Store is the Elasticsearch ports.MessageStore. It is safe for concurrent use.
type Store struct {
	cfg     Config
	client  *esclient.Client
	indices *esindex.Indices
	queries *esquery.Queries
}

// New checks cfg, checks that the cluster answers, and installs the index
// template (idempotently: start-up may run any number of times). Close releases
// the client.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newUnopened(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.indices.SetUp(ctx); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
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
	return &Store{cfg: cfg, client: client, indices: indices, queries: esquery.New(client, indices.Names())}, nil
}

// List: see esquery.Queries.List.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	return s.queries.List(ctx, q, now)
}

// Lookup: see esquery.Queries.Lookup.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	return s.queries.Lookup(ctx, scope, ids)
}

// Get: see esquery.Queries.Get.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	return s.queries.Get(ctx, scope, idOrReference, now)
}

// Stats: see esquery.Queries.Stats.
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	return s.queries.Stats(ctx, q, now)
}

// PurgeExpired: see esquery.Queries.PurgeExpired.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	return s.queries.PurgeExpired(ctx, now)
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
