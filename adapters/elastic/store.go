package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.HealthChecker = (*Store)(nil)
)

// Store is the Elasticsearch ports.MessageStore. It is safe for concurrent use.
type Store struct {
	cfg    Config
	names  indexNames
	client *elasticsearch.Client
	bulks  *elasticsearch.Client // for bulk requests: no retry of a 503 (bulkClientConfig)
}

// New checks cfg, checks that the cluster answers, and installs the index
// template (idempotently: start-up may run any number of times). Close releases
// the client.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newUnopened(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.setUp(ctx); err != nil {
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
	client, err := elasticsearch.NewClient(cfg.clientConfig())
	if err != nil {
		return nil, fmt.Errorf("elastic: client: %w", err)
	}
	bulks, err := elasticsearch.NewClient(cfg.bulkClientConfig())
	if err != nil {
		return nil, fmt.Errorf("elastic: client: %w", err)
	}
	return &Store{cfg: cfg, names: indexNames{cfg.IndexPrefix}, client: client, bulks: bulks}, nil
}

// setUp checks the cluster, installs the template, and brings the indices that
// already exist in line with it: their refresh interval (so ReadLag holds for
// them), new mappings (additive changes only), no leftover purge block.
func (s *Store) setUp(ctx context.Context) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	if err := s.do(ctx, "check cluster", esapi.ClusterHealthRequest{}, nil); err != nil {
		return err
	}
	template, err := jsonBody(newIndexTemplate(s.cfg))
	if err != nil {
		return err
	}
	if err := s.do(ctx, "install index template", esapi.IndicesPutIndexTemplateRequest{
		Name: s.names.Template(), Body: template,
	}, nil); err != nil {
		return err
	}
	existing := []string{s.names.ReadPattern()}
	if err := s.updateExisting(ctx, "update mappings of existing indices", func() esapi.Request {
		return esapi.IndicesPutMappingRequest{Index: existing, Body: bytes.NewReader(existingMappings), AllowNoIndices: ptr(true)}
	}); err != nil {
		return err
	}
	settings, err := json.Marshal(liveSettings(s.cfg))
	if err != nil {
		return fmt.Errorf("elastic: encode index settings: %w", err)
	}
	return s.updateExisting(ctx, "update settings of existing indices", func() esapi.Request {
		return esapi.IndicesPutSettingsRequest{Index: existing, Body: bytes.NewReader(settings), AllowNoIndices: ptr(true)}
	})
}

// updateAttempts bounds how often updateExisting asks again.
const updateAttempts = 3

// updateExisting runs the request that request builds on the indices the read
// pattern matches. An index dropped while the pattern was being resolved (by the
// purge job of another replica) fails it with index_not_found, although that
// index needs no update: asking again resolves the pattern without it.
func (s *Store) updateExisting(ctx context.Context, op string, request func() esapi.Request) error {
	for attempt := 1; ; attempt++ {
		err := s.do(ctx, op, request(), nil)
		if !errors.Is(err, errIndexNotFound) || attempt == updateAttempts {
			return err
		}
	}
}

// createDays creates the daily indices of now's UTC day and the next if they
// are missing, and waits until their primaries are active. Otherwise the first
// write into a day's index creates it, which on a newly started or busy
// cluster took several seconds, longer than ShardWait: that day's first
// writes were refused, or held while the index was being created.
func (s *Store) createDays(ctx context.Context, now time.Time) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	for _, day := range []time.Time{now, now.AddDate(0, 0, 1)} {
		err := s.do(ctx, "create the day's index", esapi.IndicesCreateRequest{
			Index: s.names.For(day), WaitForActiveShards: "1",
		}, nil)
		if err != nil && !errors.Is(err, errIndexExists) {
			return err
		}
	}
	return nil
}

// Close releases the client; the store is unusable afterwards.
func (s *Store) Close(ctx context.Context) error {
	if err := errors.Join(s.client.Close(ctx), s.bulks.Close(ctx)); err != nil {
		return fmt.Errorf("elastic: close: %w", err)
	}
	return nil
}

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
	if err := s.do(ctx, "ping", esapi.ClusterHealthRequest{Index: []string{s.names.ReadPattern()}}, &health); err != nil {
		return err
	}
	if health.Status == "red" {
		return fmt.Errorf("elastic: ping: %w: the health of %s is red", ports.ErrUnavailable, s.names.ReadPattern())
	}
	return nil
}

// bounded applies RequestTimeout to ctx unless it already ends sooner.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RequestTimeout)
}

func jsonBody(v any) (io.Reader, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("elastic: encode request: %w", err)
	}
	return bytes.NewReader(raw), nil
}

func ptr[T any](v T) *T { return &v }
