package app

// Configuration is hand-written on the standard flag package and yaml.v3 rather
// than a configuration library: every setting needs custom parsing anyway (durations
// in days, API key specs that must never be echoed, errors naming the REQLOG_*
// variable), and one table of settings derives the environment name, flag and YAML
// key of each, so the four sources cannot drift apart.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"gopkg.in/yaml.v3"

	"github.com/reqlog/reqlog/domain"
)

// Store names REQLOG_STORE accepts.
const (
	StoreMemory        = "memory"
	StoreMongoDB       = "mongodb"
	StoreElasticsearch = "elasticsearch"
)

// Log formats REQLOG_LOG_FORMAT accepts.
const (
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// DefaultMaxBodyBytes is the default limit of a POST body (5 MiB).
const DefaultMaxBodyBytes = 5 << 20

// Default rate limit of each API key: generous for clients that batch (a request
// carries up to 1,000 messages), yet it stops a client stuck in a loop.
const (
	DefaultRateLimit = 100 // requests per second
	DefaultRateBurst = 200
	maxRateBurst     = 1_000_000
)

// DefaultElasticsearchMaxRequestBytes is the default bound of one bulk request to
// Elasticsearch: its default http.max_content_length, as the Elasticsearch store
// assumes (app cannot import the adapter, so cmd/reqlogd tests they agree).
const DefaultElasticsearchMaxRequestBytes = 100 << 20

// DefaultElasticsearchReplicas is the default of elasticsearch.replicas: the
// most replicas of a daily index, one wherever the cluster has a second node
// (cmd/reqlogd tests that the store has the same default).
const DefaultElasticsearchReplicas = 1

// redactionOff is the REQLOG_REDACTED_FIELDS value that turns redaction off, since
// an empty environment variable counts as unset.
const redactionOff = "none"

// Config is every setting of the service. Load it with LoadConfig; DefaultConfig
// gives the defaults.
type Config struct {
	Addr            string
	Store           string
	APIKeys         []APIKey
	VisibilityDelay time.Duration
	Retention       time.Duration
	PurgeInterval   time.Duration
	MaxBodyBytes    int64
	MaxBatch        int
	MaskedHeaders   []string
	RedactedFields  []string
	RateLimit       float64 // requests per second per API key; 0: unlimited
	RateBurst       int64
	GroupCommit     GroupCommitConfig
	Admission       AdmissionOptions
	LogLevel        zapcore.Level
	LogFormat       string
	ShutdownTimeout time.Duration
	PublicURL       string
	Portal          PortalConfig
	MongoDB         MongoDBConfig
	Elasticsearch   ElasticsearchConfig

	// origins records, per setting key, the value as given and where it came from,
	// so that Validate can report both.
	origins map[string]origin
}

type origin struct{ value, source string }

// MongoDBConfig is read by the MongoDB store module.
type MongoDBConfig struct {
	URI      string
	Database string
}

// ElasticsearchConfig is read by the Elasticsearch store module.
type ElasticsearchConfig struct {
	Addresses   []string
	Username    string
	Password    string
	APIKey      string
	IndexPrefix string
	// MaxRequestBytes bounds one bulk request; 0 means the store's default.
	MaxRequestBytes int64
	// Replicas is the most replicas of a daily index (at least 1): indices keep
	// as many as the cluster has other nodes for, up to this.
	Replicas int
}

// PortalConfig is read by the customer portal (adapters/portal).
type PortalConfig struct {
	Secret         string
	FrameAncestors []string
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		Addr:            ":8080",
		Store:           StoreMemory,
		VisibilityDelay: domain.DefaultVisibilityDelay,
		Retention:       domain.DefaultRetention,
		PurgeInterval:   time.Minute,
		MaxBodyBytes:    DefaultMaxBodyBytes,
		MaxBatch:        domain.DefaultMaxBatch,
		MaskedHeaders:   append([]string(nil), domain.DefaultMaskedHeaders...),
		RedactedFields:  append([]string(nil), domain.DefaultRedactedFields...),
		RateLimit:       DefaultRateLimit,
		RateBurst:       DefaultRateBurst,
		GroupCommit:     DefaultGroupCommitConfig(),
		Admission:       DefaultAdmissionOptions(),
		LogLevel:        zapcore.InfoLevel,
		LogFormat:       LogFormatJSON,
		ShutdownTimeout: 15 * time.Second,
		MongoDB:         MongoDBConfig{Database: "reqlog"},
		Elasticsearch: ElasticsearchConfig{IndexPrefix: "reqlog", MaxRequestBytes: DefaultElasticsearchMaxRequestBytes,
			Replicas: DefaultElasticsearchReplicas},
		Portal: PortalConfig{FrameAncestors: []string{"'self'"}},
	}
}

// Policy returns the domain rules the configuration sets. Bodies without a
// Content-Type are sniffed with net/http's algorithm.
func (c Config) Policy() domain.Policy {
	return domain.Policy{
		VisibilityDelay: c.VisibilityDelay,
		Retention:       c.Retention,
		MaxBatch:        c.MaxBatch,
		MaskedHeaders:   append([]string(nil), c.MaskedHeaders...),
		RedactedFields:  append([]string(nil), c.RedactedFields...),
		Sniff:           http.DetectContentType,
	}
}

// ConfigError is an invalid setting. It names the setting by its environment
// variable and, unless the setting is secret, repeats the bad value.
type ConfigError struct {
	Setting string // e.g. "REQLOG_RETENTION"
	Value   string // "" for secret settings
	Source  string // where the value came from, e.g. "flag -retention"; may be ""
	Reason  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("invalid " + e.Setting)
	if e.Value != "" {
		b.WriteString(" " + strconv.Quote(e.Value))
	}
	if e.Source != "" {
		b.WriteString(" (from " + e.Source + ")")
	}
	return b.String() + ": " + e.Reason
}

// setting is one row of the settings table. Its YAML key ("mongodb.uri") gives the
// environment variable (REQLOG_MONGODB_URI) and the flag (-mongodb-uri).
type setting struct {
	key    string
	usage  string
	secret bool // never repeated in errors
	parse  func(c *Config, value string) error
	show   func(c Config) string // the default, for usage text
}

func (s setting) env() string {
	return "REQLOG_" + strings.ToUpper(strings.ReplaceAll(s.key, ".", "_"))
}

func (s setting) flag() string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(s.key)
}

func durationSetting(key, usage string, field func(*Config) *time.Duration) setting {
	return setting{key: key, usage: usage,
		parse: func(c *Config, v string) (err error) { *field(c), err = parseDuration(v); return err },
		show:  func(c Config) string { return formatDuration(*field(&c)) }}
}

func stringSetting(key, usage string, secret bool, field func(*Config) *string) setting {
	return setting{key: key, usage: usage, secret: secret,
		parse: func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil },
		show: func(c Config) string {
			if secret {
				return ""
			}
			return *field(&c)
		}}
}

func listSetting(key, usage string, field func(*Config) *[]string) setting {
	return setting{key: key, usage: usage,
		parse: func(c *Config, v string) error { *field(c) = splitList(v); return nil },
		show:  func(c Config) string { return strings.Join(*field(&c), ",") }}
}

func intSetting(key, usage string, field func(*Config) *int64) setting {
	return setting{key: key, usage: usage,
		parse: func(c *Config, v string) (err error) {
			*field(c), err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return errors.New("must be a whole number")
			}
			return nil
		},
		show: func(c Config) string { return strconv.FormatInt(*field(&c), 10) }}
}

// settings is the single list of what can be configured.
var settings = []setting{
	stringSetting("addr", "address to listen on (host:port)", false, func(c *Config) *string { return &c.Addr }),
	stringSetting("store", "storage backend: memory, mongodb or elasticsearch", false, func(c *Config) *string { return &c.Store }),
	{key: "api_keys", secret: true,
		usage: "comma-separated account:domain:key or account:domain:sha256:<hex> entries (domain live or test)",
		parse: func(c *Config, v string) (err error) { c.APIKeys, err = ParseAPIKeys(v); return err },
		show:  func(Config) string { return "" }},
	durationSetting("visibility_delay", "delay before a stored message becomes readable (0 allowed)", func(c *Config) *time.Duration { return &c.VisibilityDelay }),
	durationSetting("retention", "how long messages are kept, after created_at (e.g. 720h or 30d)", func(c *Config) *time.Duration { return &c.Retention }),
	durationSetting("purge_interval", "how often expired messages are deleted", func(c *Config) *time.Duration { return &c.PurgeInterval }),
	intSetting("max_body_bytes", "largest accepted POST body in bytes", func(c *Config) *int64 { return &c.MaxBodyBytes }),
	{key: "max_batch", usage: "most messages in one POST",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return errors.New("must be a whole number")
			}
			c.MaxBatch = n
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(c.MaxBatch) }},
	listSetting("masked_headers", "comma-separated headers whose values are masked before storing (replaces the default list)", func(c *Config) *[]string { return &c.MaskedHeaders }),
	{key: "redacted_fields",
		usage: "comma-separated JSON and form body fields whose values are masked before storing, matched ignoring case, - and _ (replaces the default list; " + redactionOff + " turns redaction off)",
		parse: func(c *Config, v string) error {
			c.RedactedFields = splitList(v)
			if len(c.RedactedFields) == 1 && strings.EqualFold(c.RedactedFields[0], redactionOff) {
				c.RedactedFields = []string{}
			}
			return nil
		},
		show: func(c Config) string { return strings.Join(c.RedactedFields, ",") }},
	{key: "rate_limit", usage: "requests per second each API key may make on average (0 turns rate limiting off)",
		parse: func(c *Config, v string) (err error) {
			c.RateLimit, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
				return errors.New("must be a number such as 100 or 0.5")
			}
			return nil
		},
		show: func(c Config) string { return strconv.FormatFloat(c.RateLimit, 'g', -1, 64) }},
	intSetting("rate_burst", "requests an API key may make at once beyond its rate", func(c *Config) *int64 { return &c.RateBurst }),
	boolSetting("group_commit", "coalesce concurrent submissions into store batches behind a bounded queue (false: each request writes on its own, unbounded)", func(c *Config) *bool { return &c.GroupCommit.Enabled }),
	countSetting("group_commit_max_messages", "most messages in one store batch", func(c *Config) *int { return &c.GroupCommit.MaxBatchMessages }),
	intSetting("group_commit_max_bytes", "most bytes (estimated) in one store batch", func(c *Config) *int64 { return &c.GroupCommit.MaxBatchBytes }),
	durationSetting("group_commit_linger", "how long a batch waits for more submissions before it is written", func(c *Config) *time.Duration { return &c.GroupCommit.Linger }),
	durationSetting("group_commit_max_wait", "how long a submission may wait in the queue for its store write to start (503 with Retry-After beyond; 0: no bound)", func(c *Config) *time.Duration { return &c.GroupCommit.MaxWait }),
	countSetting("group_commit_writers", "store batches written at the same time", func(c *Config) *int { return &c.GroupCommit.Writers }),
	countSetting("group_commit_queue_messages", "most messages waiting for the store or reserved by admitted POSTs (429 with Retry-After beyond)", func(c *Config) *int { return &c.GroupCommit.MaxQueueMessages }),
	intSetting("group_commit_queue_bytes", "most bytes (estimated) waiting for the store or reserved by admitted POSTs (429 with Retry-After beyond)", func(c *Config) *int64 { return &c.GroupCommit.MaxQueueBytes }),
	countSetting("ingest_decoders", "submissions decoded at the same time (0: no limit)", func(c *Config) *int { return &c.Admission.Decoders }),
	countSetting("ingest_max_waiting", "submissions admitted beyond the decoders, being read or waiting for one (429 with Retry-After beyond)", func(c *Config) *int { return &c.Admission.MaxWaiting }),
	intSetting("ingest_max_bytes", "bytes of bodies admitted and not yet decoded, by declared length, when group_commit is false (429 with Retry-After beyond); with group commit the queue's bytes count them", func(c *Config) *int64 { return &c.Admission.MaxBytes }),
	{key: "log_level", usage: "debug, info, warn or error",
		parse: func(c *Config, v string) (err error) {
			if c.LogLevel, err = zapcore.ParseLevel(strings.TrimSpace(v)); err != nil {
				return errors.New("must be debug, info, warn or error")
			}
			return nil
		},
		show: func(c Config) string { return c.LogLevel.String() }},
	stringSetting("log_format", "json or console", false, func(c *Config) *string { return &c.LogFormat }),
	durationSetting("shutdown_timeout", "how long in-flight requests may take to finish on shutdown", func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	stringSetting("public_url", "base URL of portal links, e.g. https://logs.example.com (default: the scheme and Host of each request; set it behind a proxy)", false, func(c *Config) *string { return &c.PublicURL }),
	stringSetting("portal.secret", "secret of at least 32 bytes that signs portal session tokens; share it between replicas (default: random at start-up, so sessions end on restart)", true, func(c *Config) *string { return &c.Portal.Secret }),
	listSetting("portal.frame_ancestors", "comma-separated CSP sources that may embed the portal page in a frame, e.g. https://app.example.com", func(c *Config) *[]string { return &c.Portal.FrameAncestors }),
	stringSetting("mongodb.uri", "MongoDB connection string (store mongodb)", true, func(c *Config) *string { return &c.MongoDB.URI }),
	stringSetting("mongodb.database", "MongoDB database name", false, func(c *Config) *string { return &c.MongoDB.Database }),
	listSetting("elasticsearch.url", "comma-separated Elasticsearch addresses (store elasticsearch)", func(c *Config) *[]string { return &c.Elasticsearch.Addresses }),
	stringSetting("elasticsearch.username", "Elasticsearch user name", false, func(c *Config) *string { return &c.Elasticsearch.Username }),
	stringSetting("elasticsearch.password", "Elasticsearch password", true, func(c *Config) *string { return &c.Elasticsearch.Password }),
	stringSetting("elasticsearch.api_key", "Elasticsearch API key", true, func(c *Config) *string { return &c.Elasticsearch.APIKey }),
	stringSetting("elasticsearch.index_prefix", "prefix of the Elasticsearch index names", false, func(c *Config) *string { return &c.Elasticsearch.IndexPrefix }),
	intSetting("elasticsearch.max_request_bytes", "largest bulk request sent to Elasticsearch in bytes; keep it at most the cluster's http.max_content_length (0: the default)", func(c *Config) *int64 { return &c.Elasticsearch.MaxRequestBytes }),
	countSetting("elasticsearch.replicas", "most replicas of each daily index, at least 1: an index keeps one per other node of the cluster up to this, so it stays green on one node and survives losing a node on three; each replica costs the index's disk and indexing work again", func(c *Config) *int { return &c.Elasticsearch.Replicas }),
}

// ConfigFileEnv names the environment variable holding the path of the YAML file;
// the -config flag overrides it.
const ConfigFileEnv = "REQLOG_CONFIG"

// LoadConfig reads the configuration from, lowest to highest precedence: the
// defaults, the YAML file named by -config or REQLOG_CONFIG, the REQLOG_*
// environment variables (empty ones are ignored) and the command-line flags; then it
// validates the result. lookupEnv is os.LookupEnv outside tests. -h gives
// flag.ErrHelp; print ConfigUsage then.
func LoadConfig(args []string, lookupEnv func(string) (string, bool)) (Config, error) {
	fs := flag.NewFlagSet("reqlogd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configPath := fs.String("config", "", "path of a YAML configuration file")
	flagValues := make([]*string, len(settings))
	for i, s := range settings {
		flagValues[i] = fs.String(s.flag(), "", s.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("command line: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("command line: unexpected argument %q", fs.Arg(0))
	}

	cfg := DefaultConfig()
	path, fromEnv := lookupEnv(ConfigFileEnv)
	if explicit := flagSet(fs, "config"); explicit || !fromEnv {
		path = *configPath
	}
	if path != "" {
		if err := applyFile(&cfg, path); err != nil {
			return Config{}, err
		}
	}
	for _, s := range settings {
		if v, ok := lookupEnv(s.env()); ok && v != "" {
			if err := apply(&cfg, s, v, "environment"); err != nil {
				return Config{}, err
			}
		}
	}
	for i, s := range settings {
		if flagSet(fs, s.flag()) {
			if err := apply(&cfg, s, *flagValues[i], "flag -"+s.flag()); err != nil {
				return Config{}, err
			}
		}
	}
	return cfg, cfg.Validate()
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func apply(cfg *Config, s setting, value, source string) error {
	if err := s.parse(cfg, value); err != nil {
		return s.invalid(value, source, err.Error())
	}
	if cfg.origins == nil {
		cfg.origins = map[string]origin{}
	}
	if s.secret {
		value = "" // keys must not outlive start-up in plaintext
	}
	cfg.origins[s.key] = origin{value: value, source: source}
	return nil
}

func (s setting) invalid(value, source, reason string) *ConfigError {
	if s.secret {
		value = ""
	}
	return &ConfigError{Setting: s.env(), Value: value, Source: source, Reason: reason}
}

// applyFile sets what the YAML file at path sets. Nested mappings are sections
// ("mongodb: {uri: ...}"); a sequence is a list setting. Unknown keys are errors, so
// a typo cannot silently fall back to a default.
func applyFile(cfg *Config, path string) error {
	fileError := func(reason string) error {
		return &ConfigError{Setting: ConfigFileEnv, Value: path, Reason: reason}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fileError(err.Error())
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fileError(err.Error())
	}
	values := map[string]string{}
	if len(doc.Content) > 0 {
		if err := flattenYAML(doc.Content[0], "", values); err != nil {
			return fileError(err.Error())
		}
	}
	byKey := make(map[string]setting, len(settings))
	for _, s := range settings {
		byKey[s.key] = s
	}
	for key := range values {
		if _, ok := byKey[key]; !ok {
			return fileError(fmt.Sprintf("unknown setting %q", key))
		}
	}
	for _, s := range settings {
		if v, ok := values[s.key]; ok {
			if err := apply(cfg, s, v, "config file "+path); err != nil {
				return err
			}
		}
	}
	return nil
}

func flattenYAML(n *yaml.Node, prefix string, out map[string]string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: expected a mapping of settings", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := prefix+n.Content[i].Value, n.Content[i+1]
		if _, twice := out[key]; twice {
			return fmt.Errorf("line %d: %s is set twice", n.Content[i].Line, key)
		}
		switch value.Kind {
		case yaml.MappingNode:
			if err := flattenYAML(value, key+".", out); err != nil {
				return err
			}
		case yaml.SequenceNode:
			items := make([]string, len(value.Content))
			for j, item := range value.Content {
				if item.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: %s must be a list of plain values", item.Line, key)
				}
				items[j] = item.Value
			}
			out[key] = strings.Join(items, ",")
		case yaml.ScalarNode:
			if value.Tag == "!!null" {
				out[key] = ""
			} else {
				out[key] = value.Value
			}
		default:
			return fmt.Errorf("line %d: %s must be a plain value", value.Line, key)
		}
	}
	return nil
}

// parseDuration reads a Go duration ("5s", "720h", "0") or whole days ("30d").
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n >= 0 && n <= 100*365 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	return 0, errors.New("must be a duration such as 5s, 720h or 30d")
}

// formatDuration prints whole hours as such ("720h"), others as Go does.
func formatDuration(d time.Duration) string {
	if d != 0 && d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}

func splitList(v string) []string {
	items := []string{}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

var indexPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate checks every setting and how they combine.
func (c Config) Validate() error {
	bad := func(key, reason string) error {
		for _, s := range settings {
			if s.key == key {
				if o, ok := c.origins[key]; ok {
					return s.invalid(o.value, o.source, reason)
				}
				return s.invalid(s.show(c), "", reason)
			}
		}
		panic("app: unknown setting " + key) // a programming error in this file
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return bad("addr", "must be host:port or :port, e.g. :8080")
	}
	switch c.Store {
	case StoreMemory:
	case StoreMongoDB:
		if c.MongoDB.URI == "" {
			return bad("mongodb.uri", "is required with REQLOG_STORE=mongodb")
		}
	case StoreElasticsearch:
		if len(c.Elasticsearch.Addresses) == 0 {
			return bad("elasticsearch.url", "is required with REQLOG_STORE=elasticsearch")
		}
	default:
		return bad("store", "must be memory, mongodb or elasticsearch")
	}
	switch {
	case c.VisibilityDelay < 0:
		return bad("visibility_delay", "must not be negative")
	case c.Retention <= 0:
		return bad("retention", "must be positive")
	case c.VisibilityDelay >= c.Retention:
		return bad("visibility_delay", "must be shorter than REQLOG_RETENTION ("+formatDuration(c.Retention)+")")
	case c.PurgeInterval <= 0:
		return bad("purge_interval", "must be positive")
	case c.MaxBodyBytes < 1:
		return bad("max_body_bytes", "must be at least 1")
	case c.MaxBatch < 1:
		return bad("max_batch", "must be at least 1")
	case c.RateLimit < 0:
		return bad("rate_limit", "must not be negative (0 turns rate limiting off)")
	case c.RateBurst < 1 || c.RateBurst > maxRateBurst:
		return bad("rate_burst", fmt.Sprintf("must be from 1 to %d", maxRateBurst))
	case c.LogFormat != LogFormatJSON && c.LogFormat != LogFormatConsole:
		return bad("log_format", "must be json or console")
	case c.ShutdownTimeout <= 0:
		return bad("shutdown_timeout", "must be positive")
	case c.MongoDB.Database == "" || strings.ContainsAny(c.MongoDB.Database, `/\. "$`):
		return bad("mongodb.database", `must be a non-empty name without / \ . " $ or spaces`)
	case !indexPrefixPattern.MatchString(c.Elasticsearch.IndexPrefix):
		return bad("elasticsearch.index_prefix", "must be 1 to 64 characters from a-z 0-9 _ -, starting with a letter or digit")
	case c.Elasticsearch.MaxRequestBytes < 0:
		return bad("elasticsearch.max_request_bytes", "must not be negative (0 means the default, "+strconv.Itoa(DefaultElasticsearchMaxRequestBytes)+")")
	case c.Elasticsearch.Replicas < 1:
		return bad("elasticsearch.replicas", "must be at least 1 (an index has a replica only where the cluster has another node for it)")
	}
	if c.Admission.Decoders < 0 {
		return bad("ingest_decoders", "must not be negative (0 turns the limit off)")
	}
	if c.Admission.MaxWaiting < 0 {
		return bad("ingest_max_waiting", "must not be negative")
	}
	if c.Admission.MaxBytes < 1 {
		return bad("ingest_max_bytes", "must be at least 1")
	}
	if key, reason := c.GroupCommit.problem(); key != "" {
		return bad(key, reason)
	}
	for _, name := range c.MaskedHeaders {
		probe := domain.DefaultPolicy()
		probe.MaskedHeaders = []string{name}
		if err := probe.Validate(); err != nil {
			return bad("masked_headers", err.Error())
		}
	}
	probe := domain.DefaultPolicy()
	probe.RedactedFields = c.RedactedFields
	if err := probe.Validate(); err != nil {
		return bad("redacted_fields", err.Error())
	}
	if err := c.Policy().Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	return nil
}

// ConfigUsage describes every setting: flag, environment variable, YAML key and
// default.
func ConfigUsage() string {
	var b strings.Builder
	b.WriteString("Usage: reqlogd [flags]\n\nEvery setting comes from, lowest to highest precedence: its default, the YAML\n" +
		"file named by -config or " + ConfigFileEnv + ", the environment, the command line.\n\n")
	defaults := DefaultConfig()
	fmt.Fprintf(&b, "  -config PATH\n      %s; YAML file of the settings below (keys as shown)\n", ConfigFileEnv)
	for _, s := range settings {
		fmt.Fprintf(&b, "  -%s\n      %s, YAML %s: %s", s.flag(), s.env(), s.key, s.usage)
		if d := s.show(defaults); d != "" {
			fmt.Fprintf(&b, " (default %s)", d)
		}
		b.WriteString("\n")
	}
	return b.String()
}
