package elastic

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
)

// Defaults of Config.
const (
	DefaultIndexPrefix     = "reqlog"
	DefaultRefreshInterval = time.Second
	DefaultRequestTimeout  = 30 * time.Second
	// DefaultShardWait is how long a bulk request waits for a shard that has
	// no primary for now (one being promoted after its node left) before its
	// items fail with 503. A request can meet it twice (its batch queued
	// behind one that waited, then waiting itself), and a client should hear
	// 503 long before it gives up (often after 3s).
	DefaultShardWait = 500 * time.Millisecond
	// DefaultDurabilityWait bounds a retried write's wait for its shard's
	// global checkpoint (esclient/durable.go); after a failover that can take seconds,
	// and a 503 lets the client retry instead of waiting.
	DefaultDurabilityWait = time.Second
	DefaultPingTimeout    = 2 * time.Second
	// DefaultMaxRetries is how often the client retries a request that failed on
	// the network or with 429, 502, 503 or 504. Retrying writes is safe: every
	// bulk action is a create with the message id as _id, and a create that
	// finds its message there counts once that message is durable.
	DefaultMaxRetries = 3
	// DefaultReplicas is the most replicas of a daily index by default: a
	// copy wherever the cluster has a second node.
	DefaultReplicas = 1
	// DefaultShards is the primary shards of a new daily index: one, as a day's
	// index stays small; more let one node search a day on several cores.
	DefaultShards = 1
	// maxShards is Elasticsearch's own limit of primary shards per index.
	maxShards = 1024
	// DefaultWarmUp bounds the start-up's wait for the day's replicas and its
	// warm-up of the indexing path (esindex/warm.go): a freshly started three-node
	// cluster on two busy shared cores was not warm after 15 s either, and
	// reqlogd must start within 30 s.
	DefaultWarmUp = 15 * time.Second
	// DefaultMaxRequestBytes is Elasticsearch's default http.max_content_length.
	DefaultMaxRequestBytes = 100 << 20
)

// indexPrefixPattern is a valid start of an Elasticsearch index name that cannot
// contain a wildcard or reach into another deployment's names.
var indexPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Config configures the Elasticsearch store. The zero value of every field but
// Addresses means its default.
type Config struct {
	// Addresses are the base URLs of the cluster's nodes (required), e.g.
	// "https://es1:9200".
	Addresses []string
	// Username and Password authenticate with HTTP basic authentication.
	Username, Password string
	// APIKey is the base64 "id:api_key" credential; it excludes Username/Password.
	APIKey string
	// IndexPrefix starts every index and template name; default "reqlog".
	IndexPrefix string
	// Replicas is the most replicas a daily index keeps; default 1
	// (DefaultReplicas). Indices get index.auto_expand_replicas "0-Replicas":
	// as many replicas as the cluster has other nodes for, up to Replicas, so
	// an index stays green on a single node and survives the loss of a node
	// on a cluster. New applies it to the existing indices too. Each replica
	// costs its index's disk space again and the indexing work again.
	Replicas int
	// Shards is the number of primary shards of each new daily index; default
	// 1 (DefaultShards), at most 1024. A search runs one thread per shard, so
	// statistics over a day use as many cores as the day has shards; each shard
	// costs the cluster some heap and a little of every write. Indices that
	// exist keep the shards they were created with.
	Shards int
	// RefreshInterval is the indices' refresh interval and so the store's
	// ReadLag; default 1s. It is kept to whole milliseconds, rounded up.
	RefreshInterval time.Duration
	// RequestTimeout bounds one operation whose context has no earlier deadline;
	// default 30s.
	RequestTimeout time.Duration
	// ShardWait is the bulk requests' timeout: how long Elasticsearch holds a
	// write whose shard has no active primary (or whose index is being created)
	// before failing it with 503; default 500ms (DefaultShardWait).
	ShardWait time.Duration
	// DurabilityWait bounds how long Append waits for messages it found
	// already stored (409) to become durable before failing with
	// ports.ErrUnavailable; default 1s (DefaultDurabilityWait).
	DurabilityWait time.Duration
	// WarmUp bounds how long start-up waits for the day's indices' replicas and
	// warms the cluster's indexing path before the store is ready (esindex/warm.go):
	// a cold cluster's first writes took seconds each. Default 15s
	// (DefaultWarmUp), and at most half of what start-up has left; negative
	// disables both.
	WarmUp time.Duration
	// PingTimeout bounds a health check; default 2s.
	PingTimeout time.Duration
	// MaxRetries bounds the client's retries of one request; default 3, negative
	// disables retries.
	MaxRetries int
	// MaxRequestBytes bounds the body of one bulk request: Append splits a batch
	// into requests of at most this size, and refuses with domain.ErrTooLarge,
	// before sending anything, a batch holding a message that alone is larger.
	// Keep it at most the cluster's http.max_content_length (larger requests are
	// refused whole) and its indexing pressure limit (10% of the heap by
	// default; larger requests are refused with 429 every time). Default 100 MiB.
	MaxRequestBytes int
	// Statistics configures the statistics engine: its plans' costs and the
	// memory of the hours it keeps; zero: the engine's defaults.
	Statistics statsengine.Config
}

// withDefaults returns cfg with every unset field at its default, or an error
// naming the first unusable field. Credentials never appear in errors.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Addresses) == 0 {
		return cfg, errors.New("elastic: config: Addresses is required")
	}
	for _, addr := range cfg.Addresses {
		u, err := url.Parse(addr)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("elastic: config: address %q is not an http:// or https:// URL", redact(addr))
		}
	}
	if cfg.APIKey != "" && (cfg.Username != "" || cfg.Password != "") {
		return cfg, errors.New("elastic: config: set either APIKey or Username and Password, not both")
	}
	if cfg.IndexPrefix == "" {
		cfg.IndexPrefix = DefaultIndexPrefix
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"RefreshInterval", cfg.RefreshInterval},
		{"RequestTimeout", cfg.RequestTimeout},
		{"PingTimeout", cfg.PingTimeout},
		{"ShardWait", cfg.ShardWait},
		{"DurabilityWait", cfg.DurabilityWait},
	} {
		if d.value < 0 {
			return cfg, fmt.Errorf("elastic: config: %s must not be negative, got %s", d.name, d.value)
		}
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	// Elasticsearch takes the interval in whole milliseconds; rounding up keeps
	// ReadLag an upper bound.
	if rounded := cfg.RefreshInterval.Truncate(time.Millisecond); rounded < cfg.RefreshInterval {
		cfg.RefreshInterval = rounded + time.Millisecond
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	if cfg.ShardWait == 0 {
		cfg.ShardWait = DefaultShardWait
	}
	if cfg.DurabilityWait == 0 {
		cfg.DurabilityWait = DefaultDurabilityWait
	}
	if cfg.ShardWait.Truncate(time.Millisecond) == 0 {
		return cfg, fmt.Errorf("elastic: config: ShardWait must be at least 1ms, got %s", cfg.ShardWait)
	}
	if cfg.WarmUp == 0 {
		cfg.WarmUp = DefaultWarmUp
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards
	}
	return cfg, cfg.Validate()
}

// DefaultConfig returns a Config with the defaults of the fields reqlogd's
// settings set written in (IndexPrefix, Replicas, Shards, MaxRequestBytes), so
// that its usage shows them; every other field is zero, which New reads as its
// default.
func DefaultConfig() Config {
	return Config{IndexPrefix: DefaultIndexPrefix, Replicas: DefaultReplicas, Shards: DefaultShards,
		MaxRequestBytes: DefaultMaxRequestBytes, WarmUp: DefaultWarmUp}
}

// Validate reports the first unusable field among those the service's settings
// set, as a *domain.ValidationError naming it. It checks a configuration with its
// defaults filled in: a zero is no default here, but MaxRequestBytes' is. Addresses
// are left to the caller: the service requires them only of the store it runs on.
func (cfg Config) Validate() error {
	bad := func(field, reason string) error {
		return &domain.ValidationError{Message: "elastic: config", Fields: []domain.FieldError{{Field: field, Message: reason}}}
	}
	switch {
	case !indexPrefixPattern.MatchString(cfg.IndexPrefix):
		return bad("IndexPrefix", "must be 1 to 64 characters from a-z 0-9 _ -, starting with a letter or digit")
	case cfg.MaxRequestBytes < 0:
		return bad("MaxRequestBytes", "must not be negative (0 means the default, "+strconv.Itoa(DefaultMaxRequestBytes)+")")
	case cfg.Replicas < 1:
		return bad("Replicas", "must be at least 1 (an index has a replica only where the cluster has another node for it)")
	case cfg.Shards < 1 || cfg.Shards > maxShards:
		return bad("Shards", "must be from 1 to "+strconv.Itoa(maxShards))
	}
	return nil
}

// clientConfig is what the client takes of cfg.
func (cfg Config) clientConfig() esclient.Config {
	return esclient.Config{
		Addresses: cfg.Addresses, Username: cfg.Username, Password: cfg.Password, APIKey: cfg.APIKey,
		MaxRetries: cfg.MaxRetries, RequestTimeout: cfg.RequestTimeout, ShardWait: cfg.ShardWait,
		DurabilityWait: cfg.DurabilityWait,
	}
}

// indexConfig is what the indices take of cfg.
func (cfg Config) indexConfig() esindex.Config {
	return esindex.Config{Prefix: cfg.IndexPrefix, Shards: cfg.Shards, Replicas: cfg.Replicas,
		RefreshInterval: cfg.RefreshInterval, WarmUp: cfg.WarmUp}
}

// redact drops the user information of a URL for error messages.
func redact(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	if at := strings.LastIndex(addr, "@"); at >= 0 {
		return "…" + addr[at:]
	}
	return addr
}
