package main

// Every setting of reqlogd is a row of the table below: its YAML key gives its
// environment variable and flag, and its field says which part's Config it sets,
// where that field's meaning is documented (app.Config, httpapi.Config,
// portal.Config, keyring.Config, sqlite.Config, mongo.Config, elastic.Config, or config below for
// the process's own). Each part validates its Config; the table turns a refused
// field back into the setting, with the value as given and where it came from.
//
// Configuration is hand-written on the standard flag package and yaml.v3 rather
// than a configuration library: every setting needs custom parsing anyway (durations
// in days, API key specs that must never be echoed, errors naming the REQLOG_*
// variable), and one table derives the environment name, flag and YAML key of
// each, so the four sources cannot drift apart.

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/otlp"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/webhook"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// Log formats REQLOG_LOG_FORMAT accepts.
const (
	logFormatJSON    = "json"
	logFormatConsole = "console"
)

// redactionOff is the REQLOG_REDACTED_FIELDS value that turns redaction off, since
// an empty environment variable counts as unset.
const redactionOff = "none"

// configFileEnv names the environment variable holding the path of the YAML file;
// the -config flag overrides it.
const configFileEnv = "REQLOG_CONFIG"

// config is every setting of reqlogd: the process's own, and each part's Config.
// Load it with loadConfig; defaultConfig gives the defaults.
type config struct {
	// Store is the REQLOG_STORE whose module provides the ports.MessageStore.
	Store string
	// LogLevel and LogFormat configure the zap logger on standard error.
	LogLevel  zapcore.Level
	LogFormat string
	// ShutdownTimeout bounds how long in-flight requests may take on shutdown.
	ShutdownTimeout time.Duration

	App           app.Config
	HTTP          httpapi.Config
	Keyring       keyring.Config
	Portal        portal.Config
	MongoDB       mongo.Config
	Elasticsearch elastic.Config
	Proxy         proxy.Config
	OTLP          otlp.Config
	SQLite        sqlite.Config
	Alerts        app.AlertConfig
	Webhook       webhook.Config

	// RulesFile is REQLOG_RULES_FILE's path; App.Rules.File holds what it read.
	RulesFile string

	// origins records, per setting key, the value as given and where it came from,
	// so that validate can report both.
	origins map[string]origin
}

type origin struct{ value, source string }

// defaultConfig returns the defaults of every setting: each part's own.
func defaultConfig() config {
	return config{
		Store:           storeSQLite,
		LogLevel:        zapcore.InfoLevel,
		LogFormat:       logFormatJSON,
		ShutdownTimeout: 15 * time.Second,
		App:             app.DefaultConfig(),
		HTTP:            httpapi.DefaultConfig(),
		Portal:          portal.DefaultConfig(),
		MongoDB:         mongo.DefaultConfig(),
		Elasticsearch:   elastic.DefaultConfig(),
		Proxy:           proxy.DefaultConfig(),
		OTLP:            otlp.DefaultConfig(),
		SQLite:          sqlite.DefaultConfig(),
		Alerts:          app.DefaultAlertConfig(),
		Webhook:         webhook.DefaultConfig(),
	}
}

// setting is one row of the settings table. Its YAML key ("mongodb.uri") gives the
// environment variable (REQLOG_MONGODB_URI) and the flag (-mongodb-uri).
type setting struct {
	key    string
	field  string // the config field it sets, e.g. "MongoDB.URI"
	usage  string
	secret bool   // never repeated in errors
	fileOf string // the secret setting whose value this row's file holds (secretfile.go)
	parse  func(c *config, value string) error
	show   func(c config) string // the default, for usage text
}

func (s setting) env() string {
	return "REQLOG_" + strings.ToUpper(strings.ReplaceAll(s.key, ".", "_"))
}

func (s setting) flag() string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(s.key)
}

func durationSetting(key, field, usage string, ptr func(*config) *time.Duration) setting {
	return setting{key: key, field: field, usage: usage,
		parse: func(c *config, v string) (err error) { *ptr(c), err = parseDuration(v); return err },
		show:  func(c config) string { return formatDuration(*ptr(&c)) }}
}

func stringSetting(key, field, usage string, ptr func(*config) *string) setting {
	return setting{key: key, field: field, usage: usage,
		parse: func(c *config, v string) error { *ptr(c) = strings.TrimSpace(v); return nil },
		show:  func(c config) string { return *ptr(&c) }}
}

// secretSetting is a string setting never shown nor repeated in errors.
func secretSetting(key, field, usage string, set func(*config, string)) setting {
	return setting{key: key, field: field, usage: usage, secret: true,
		parse: func(c *config, v string) error { set(c, strings.TrimSpace(v)); return nil },
		show:  func(config) string { return "" }}
}

func listSetting(key, field, usage string, ptr func(*config) *[]string) setting {
	return setting{key: key, field: field, usage: usage,
		parse: func(c *config, v string) error { *ptr(c) = splitList(v); return nil },
		show:  func(c config) string { return strings.Join(*ptr(&c), ",") }}
}

func int64Setting(key, field, usage string, ptr func(*config) *int64) setting {
	return setting{key: key, field: field, usage: usage,
		parse: func(c *config, v string) (err error) {
			if *ptr(c), err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return errors.New("must be a whole number")
			}
			return nil
		},
		show: func(c config) string { return strconv.FormatInt(*ptr(&c), 10) }}
}

func intSetting(key, field, usage string, ptr func(*config) *int) setting {
	return setting{key: key, field: field, usage: usage,
		parse: func(c *config, v string) (err error) {
			if *ptr(c), err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return errors.New("must be a whole number")
			}
			return nil
		},
		show: func(c config) string { return strconv.Itoa(*ptr(&c)) }}
}

func boolSetting(key, field, usage string, ptr func(*config) *bool) setting {
	return setting{key: key, field: field, usage: usage,
		parse: func(c *config, v string) (err error) {
			if *ptr(c), err = strconv.ParseBool(strings.TrimSpace(v)); err != nil {
				return errors.New("must be true or false")
			}
			return nil
		},
		show: func(c config) string { return strconv.FormatBool(*ptr(&c)) }}
}

// settings is the single list of what can be configured.
var settings = []setting{
	stringSetting("addr", "HTTP.Addr", "address to listen on (host:port)", func(c *config) *string { return &c.HTTP.Addr }),
	stringSetting("store", "Store", storeHelp(storeRegistry), func(c *config) *string { return &c.Store }),
	stringSetting("sqlite.dir", "SQLite.Dir", "data directory of the sqlite store: one database file per day, the lock and, when they are generated, the development key and the portal secret", func(c *config) *string { return &c.SQLite.Dir }),
	intSetting("sqlite.max_open_days", "SQLite.MaxOpenDays", "day files the sqlite store keeps open once used; past it the least recently used closes, as does one unused for a minute (a file in use is never closed)", func(c *config) *int { return &c.SQLite.MaxOpenDays }),
	stringSetting("sqlite.backup_dir", "SQLite.BackupDir", "where a running reqlogd backs the sqlite store's data directory up when sent SIGUSR1 (a day file unchanged since the last backup there is not copied again; reqlogd backup DIR does the same beside it or without it)", func(c *config) *string { return &c.SQLite.BackupDir }),
	intSetting("sqlite.check_days", "SQLite.CheckDays", "newest day files the sqlite store reads whole after start-up (PRAGMA quick_check), in the background, /readyz failing until they are checked: a corrupt one is then refused as damaged, named by /readyz; -1 checks none", func(c *config) *int { return &c.SQLite.CheckDays }),
	durationSetting("sqlite.max_retention", "SQLite.MaxRetention", "longest retention reqlogd accepts with the sqlite store: each day kept is a file, which start-up checks and a lookup by id visits", func(c *config) *time.Duration { return &c.SQLite.MaxRetention }),
	{key: "api_keys", field: "Keyring.Keys", secret: true,
		usage: "comma-separated account:domain:key or account:domain:sha256:<hex> entries (domain live or test)",
		parse: func(c *config, v string) (err error) { c.Keyring.Keys, err = app.ParseAPIKeys(v); return err },
		show:  func(config) string { return "" }},
	durationSetting("visibility_delay", "App.VisibilityDelay", "delay before a stored message becomes readable (0 allowed)", func(c *config) *time.Duration { return &c.App.VisibilityDelay }),
	durationSetting("retention", "App.Retention", "how long messages are kept, after created_at (e.g. 720h or 30d)", func(c *config) *time.Duration { return &c.App.Retention }),
	durationSetting("rollup_retention", "App.RollupRetention", "how long the statistics' per-minute rollups are kept, after their minute, once their messages are gone: GET /v1/stats of a range and application reaches back this far, counting what is older than REQLOG_RETENTION from the rollups alone (not shorter than REQLOG_RETENTION: rollups then go with their messages)", func(c *config) *time.Duration { return &c.App.RollupRetention }),
	durationSetting("purge_interval", "App.PurgeInterval", "how often expired messages are deleted", func(c *config) *time.Duration { return &c.App.PurgeInterval }),
	int64Setting("max_body_bytes", "HTTP.MaxBodyBytes", "largest accepted POST body in bytes", func(c *config) *int64 { return &c.HTTP.MaxBodyBytes }),
	intSetting("max_batch", "App.MaxBatch", "most messages in one POST", func(c *config) *int { return &c.App.MaxBatch }),
	intSetting("max_batch_days", "App.MaxBatchDays", "most distinct UTC days of created_at in one POST (400 naming the first item past them; 0: no bound): each day is a file or an index of the store", func(c *config) *int { return &c.App.MaxBatchDays }),
	listSetting("masked_headers", "App.MaskedHeaders", "comma-separated headers whose values are masked before storing (replaces the default list)", func(c *config) *[]string { return &c.App.MaskedHeaders }),
	{key: "redacted_fields", field: "App.RedactedFields",
		usage: "comma-separated JSON and form body fields whose values are masked before storing, matched ignoring case, - and _ (replaces the default list; " + redactionOff + " turns redaction off)",
		parse: func(c *config, v string) error {
			c.App.RedactedFields = splitList(v)
			if len(c.App.RedactedFields) == 1 && strings.EqualFold(c.App.RedactedFields[0], redactionOff) {
				c.App.RedactedFields = []string{}
			}
			return nil
		},
		show: func(c config) string { return strings.Join(c.App.RedactedFields, ",") }},
	{key: "rate_limit", field: "HTTP.RateLimit", usage: "requests per second each API key may make on average (0 turns rate limiting off)",
		parse: func(c *config, v string) (err error) {
			c.HTTP.RateLimit, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(c.HTTP.RateLimit) || math.IsInf(c.HTTP.RateLimit, 0) {
				return errors.New("must be a number such as 100 or 0.5")
			}
			return nil
		},
		show: func(c config) string { return strconv.FormatFloat(c.HTTP.RateLimit, 'g', -1, 64) }},
	intSetting("rate_burst", "HTTP.RateBurst", "requests an API key may make at once beyond its rate", func(c *config) *int { return &c.HTTP.RateBurst }),
	boolSetting("group_commit", "App.GroupCommit.Enabled", "coalesce concurrent submissions into store batches behind a bounded queue (false: each request writes on its own, unbounded)", func(c *config) *bool { return &c.App.GroupCommit.Enabled }),
	intSetting("group_commit_max_messages", "App.GroupCommit.MaxBatchMessages", "most messages in one store batch", func(c *config) *int { return &c.App.GroupCommit.MaxBatchMessages }),
	int64Setting("group_commit_max_bytes", "App.GroupCommit.MaxBatchBytes", "most bytes (estimated) in one store batch", func(c *config) *int64 { return &c.App.GroupCommit.MaxBatchBytes }),
	durationSetting("group_commit_linger", "App.GroupCommit.Linger", "how long a batch waits for more submissions before it is written", func(c *config) *time.Duration { return &c.App.GroupCommit.Linger }),
	durationSetting("group_commit_max_wait", "App.GroupCommit.MaxWait", "how long a submission may wait in the queue for its store write to start (503 with Retry-After beyond; 0: no bound)", func(c *config) *time.Duration { return &c.App.GroupCommit.MaxWait }),
	intSetting("group_commit_writers", "App.GroupCommit.Writers", "store batches written at the same time", func(c *config) *int { return &c.App.GroupCommit.Writers }),
	intSetting("group_commit_queue_messages", "App.GroupCommit.MaxQueueMessages", "most messages waiting for the store or reserved by admitted POSTs (429 with Retry-After beyond)", func(c *config) *int { return &c.App.GroupCommit.MaxQueueMessages }),
	int64Setting("group_commit_queue_bytes", "App.GroupCommit.MaxQueueBytes", "most bytes (estimated) waiting for the store or reserved by admitted POSTs (429 with Retry-After beyond)", func(c *config) *int64 { return &c.App.GroupCommit.MaxQueueBytes }),
	intSetting("ingest_decoders", "App.Admission.Decoders", "submissions decoded at the same time (0: no limit)", func(c *config) *int { return &c.App.Admission.Decoders }),
	intSetting("ingest_max_waiting", "App.Admission.MaxWaiting", "submissions admitted beyond the decoders, being read or waiting for one (429 with Retry-After beyond)", func(c *config) *int { return &c.App.Admission.MaxWaiting }),
	int64Setting("ingest_max_bytes", "App.Admission.MaxBytes", "bytes of bodies admitted and not yet decoded, by declared length, when group_commit is false (429 with Retry-After beyond); with group commit the queue's bytes count them", func(c *config) *int64 { return &c.App.Admission.MaxBytes }),
	{key: "log_level", field: "LogLevel", usage: "debug, info, warn or error",
		parse: func(c *config, v string) (err error) {
			if c.LogLevel, err = zapcore.ParseLevel(strings.TrimSpace(v)); err != nil {
				return errors.New("must be debug, info, warn or error")
			}
			return nil
		},
		show: func(c config) string { return c.LogLevel.String() }},
	stringSetting("log_format", "LogFormat", "json or console", func(c *config) *string { return &c.LogFormat }),
	durationSetting("shutdown_timeout", "ShutdownTimeout", "how long in-flight requests may take to finish on shutdown", func(c *config) *time.Duration { return &c.ShutdownTimeout }),
	stringSetting("public_url", "Portal.PublicURL", "base URL of portal links, e.g. https://logs.example.com (default: the scheme and Host of each request; set it behind a proxy)", func(c *config) *string { return &c.Portal.PublicURL }),
	secretSetting("portal.secret", "Portal.Secret", "secret of at least 32 bytes that signs portal session tokens; share it between replicas (default: random at start-up, so sessions end on restart)", func(c *config, v string) { c.Portal.Secret = []byte(v) }),
	listSetting("portal.frame_ancestors", "Portal.FrameAncestors", "comma-separated CSP sources that may embed the portal page in a frame, e.g. https://app.example.com", func(c *config) *[]string { return &c.Portal.FrameAncestors }),
	secretSetting("mongodb.uri", "MongoDB.URI", "MongoDB connection string (store mongodb)", func(c *config, v string) { c.MongoDB.URI = v }),
	stringSetting("mongodb.database", "MongoDB.Database", "MongoDB database name", func(c *config) *string { return &c.MongoDB.Database }),
	boolSetting("mongodb.ttl_index", "MongoDB.TTLIndex", "let the MongoDB server delete expired messages with a TTL index (their statistics go with them); false: the purge deletes them and keeps their rollups for the rollup retention", func(c *config) *bool { return &c.MongoDB.TTLIndex }),
	listSetting("elasticsearch.url", "Elasticsearch.Addresses", "comma-separated Elasticsearch addresses (store elasticsearch)", func(c *config) *[]string { return &c.Elasticsearch.Addresses }),
	stringSetting("elasticsearch.username", "Elasticsearch.Username", "Elasticsearch user name", func(c *config) *string { return &c.Elasticsearch.Username }),
	secretSetting("elasticsearch.password", "Elasticsearch.Password", "Elasticsearch password", func(c *config, v string) { c.Elasticsearch.Password = v }),
	secretSetting("elasticsearch.api_key", "Elasticsearch.APIKey", "Elasticsearch API key", func(c *config, v string) { c.Elasticsearch.APIKey = v }),
	stringSetting("elasticsearch.index_prefix", "Elasticsearch.IndexPrefix", "prefix of the Elasticsearch index names", func(c *config) *string { return &c.Elasticsearch.IndexPrefix }),
	intSetting("elasticsearch.max_request_bytes", "Elasticsearch.MaxRequestBytes", "largest bulk request sent to Elasticsearch in bytes; keep it at most the cluster's http.max_content_length (0: the default)", func(c *config) *int { return &c.Elasticsearch.MaxRequestBytes }),
	durationSetting("elasticsearch.warm_up", "Elasticsearch.WarmUp", "longest start-up wait for the day's index replicas and for warming the cluster's indexing path in a hidden index (at most half of the start timeout); a negative duration such as -1s turns it off", func(c *config) *time.Duration { return &c.Elasticsearch.WarmUp }),
	intSetting("elasticsearch.replicas", "Elasticsearch.Replicas", "most replicas of each daily index, at least 1: an index keeps one per other node of the cluster up to this, so it stays green on one node and survives losing a node on three; each replica costs the index's disk and indexing work again", func(c *config) *int { return &c.Elasticsearch.Replicas }),
	intSetting("elasticsearch.shards", "Elasticsearch.Shards", "primary shards of each new daily index, 1 to 1024: a search runs one thread per shard, so more shards let statistics over a day use more cores; indices that exist keep theirs", func(c *config) *int { return &c.Elasticsearch.Shards }),
	stringSetting("proxy.upstream", "Proxy.Upstream", "base URL of an application to front with a capturing reverse proxy, e.g. http://127.0.0.1:3000 (empty: no proxy)", func(c *config) *string { return &c.Proxy.Upstream }),
	stringSetting("proxy.addr", "Proxy.Addr", "address the capturing proxy listens on (host:port)", func(c *config) *string { return &c.Proxy.Addr }),
	stringSetting("proxy.name", "Proxy.Name", "application name of the exchanges through the proxy", func(c *config) *string { return &c.Proxy.Name }),
	{key: "proxy.trusted_proxies", field: "Proxy.TrustedProxies",
		usage: "comma-separated addresses or CIDR ranges of proxies in front of the capturing proxy, whose X-Forwarded-*, Forwarded and X-Real-IP headers are passed on and name the client (from others they are replaced)",
		parse: func(c *config, v string) (err error) {
			c.Proxy.TrustedProxies, err = proxy.ParsePrefixes(splitList(v))
			return err
		},
		show: func(c config) string { return proxy.FormatPrefixes(c.Proxy.TrustedProxies) }},
	intSetting("proxy.max_body_bytes", "Proxy.MaxBodyBytes", "bytes of each request and response body the proxy records; the rest streams through, and the stored body says it was cut (0: 65536)", func(c *config) *int { return &c.Proxy.MaxBodyBytes }),
	intSetting("proxy.buffer_size", "Proxy.BufferSize", "exchanges through the proxy that may wait to be stored; beyond it they are dropped and counted, never waited for (0: 1000)", func(c *config) *int { return &c.Proxy.BufferSize }),
	durationSetting("proxy.response_header_timeout", "Proxy.ResponseHeaderTimeout", "longest the upstream may take to start its reply once it has the whole request; the client then gets a 504, recorded", func(c *config) *time.Duration { return &c.Proxy.ResponseHeaderTimeout }),
	durationSetting("proxy.read_header_timeout", "Proxy.ReadHeaderTimeout", "longest a client of the proxy may take to send a request's headers; its connection is then closed", func(c *config) *time.Duration { return &c.Proxy.ReadHeaderTimeout }),
	durationSetting("proxy.body_read_timeout", "Proxy.BodyReadTimeout", "longest a client of the proxy may pause while sending a request body; its connection is then closed and the exchange not recorded", func(c *config) *time.Duration { return &c.Proxy.BodyReadTimeout }),
	durationSetting("proxy.max_body_read_time", "Proxy.MaxBodyReadTime", "longest each body through the proxy is recorded, a request's from its start, a reply's from its header; past it the body streams on unrecorded, and the exchange is recorded then with the body marked as cut (negative, e.g. -1s: no limit)", func(c *config) *time.Duration { return &c.Proxy.MaxBodyReadTime }),
	intSetting("proxy.max_in_flight", "Proxy.MaxInFlight", "requests the proxy forwards at once, an open WebSocket counting as one (503 with Retry-After beyond, not recorded)", func(c *config) *int { return &c.Proxy.MaxInFlight }),
	stringSetting("proxy.reqlog_url", "Proxy.ReqlogURL", "a remote reqlogd to submit the proxy's exchanges to, with proxy.api_key (empty: this process stores them)", func(c *config) *string { return &c.Proxy.ReqlogURL }),
	secretSetting("proxy.api_key", "Proxy.APIKey", "API key the proxy's exchanges are stored under: its account and domain (default: the generated development key)", func(c *config, v string) { c.Proxy.APIKey = v }),
	int64Setting("otlp.max_body_bytes", "OTLP.MaxBodyBytes", "largest OpenTelemetry export (POST /v1/traces) in bytes, after gzip decompression", func(c *config) *int64 { return &c.OTLP.MaxBodyBytes }),
	intSetting("otlp.max_spans", "OTLP.MaxSpans", "most spans in one OpenTelemetry export", func(c *config) *int { return &c.OTLP.MaxSpans }),
	intSetting("otlp.decoders", "OTLP.Decoders", "OpenTelemetry exports read and decoded at the same time (429 with Retry-After beyond)", func(c *config) *int { return &c.OTLP.Decoders }),
	intSetting("exports_per_key", "HTTP.Exports.PerKey", "exports one API key (its account and domain) or one application's portal sessions may run at once (429 with Retry-After beyond)", func(c *config) *int { return &c.HTTP.Exports.PerKey }),
	intSetting("exports_max", "HTTP.Exports.Total", "exports the process runs at once, every key together (429 with Retry-After beyond); each holds up to a store page of about 4 MiB while its client reads it", func(c *config) *int { return &c.HTTP.Exports.Total }),
	int64Setting("export_min_rate", "HTTP.Exports.MinRate", "slowest average rate, in bytes per second, at which a client must read its export, counted over the time spent writing it; a slower one is cut once export_stall_timeout of slack is spent (0: no minimum)", func(c *config) *int64 { return &c.HTTP.Exports.MinRate }),
	durationSetting("export_stall_timeout", "HTTP.Exports.Stall", "longest one write of an export waits for its client beyond its bytes at export_min_rate: a client that stops reading is cut after it", func(c *config) *time.Duration { return &c.HTTP.Exports.Stall }),
	durationSetting("alerts.evaluation_interval", "Alerts.EvaluationInterval", "how often every alert rule is evaluated, on its multiples (a divisor of an hour); one replica evaluates each time", func(c *config) *time.Duration { return &c.Alerts.EvaluationInterval }),
	durationSetting("alerts.poll_interval", "Alerts.Poll", "how often each replica looks for the next evaluation and for due webhook deliveries (at most the evaluation interval)", func(c *config) *time.Duration { return &c.Alerts.Poll }),
	boolSetting("alerts.allow_private_webhooks", "Webhook.AllowPrivate", "let webhook URLs resolve to loopback, private, link-local and other internal addresses (refused by default, at creation and on every connection)", func(c *config) *bool { return &c.Webhook.AllowPrivate }),
	durationSetting("alerts.webhook_timeout", "Webhook.Timeout", "longest a webhook attempt may take, connecting and reading the reply included (1s to 1m)", func(c *config) *time.Duration { return &c.Webhook.Timeout }),
	durationSetting("alerts.delivery_lease", "Alerts.DeliveryLease", "how long a replica holds a webhook delivery it attempts before another may take it over (above the webhook timeout)", func(c *config) *time.Duration { return &c.Alerts.DeliveryLease }),
	intSetting("alerts.delivery_concurrency", "Alerts.DeliveryConcurrency", "webhook attempts each replica makes at the same time", func(c *config) *int { return &c.Alerts.DeliveryConcurrency }),
	intSetting("alerts.delivery_per_account", "Alerts.DeliveryPerAccount", "of those, how many of one account's deliveries (one per endpoint at most); below the concurrency, an account whose endpoints hang leaves attempts to the others", func(c *config) *int { return &c.Alerts.DeliveryPerAccount }),
	intSetting("alerts.max_pending_deliveries", "Alerts.MaxPendingDeliveries", "webhook deliveries one account may have waiting; past it its oldest tests, then its oldest others, are dropped (counted and logged) down to nine tenths of it", func(c *config) *int { return &c.Alerts.MaxPendingDeliveries }),
	durationSetting("alerts.endpoint_disable_after", "Alerts.EndpointDisableAfter", "how long a webhook endpoint may time out on every attempt (backed off meanwhile) before it is disabled with a reason, as a 410 disables it; 0 never", func(c *config) *time.Duration { return &c.Alerts.EndpointDisableAfter }),
	durationSetting("alerts.evaluation_budget", "Alerts.EvaluationBudget", "how long one account's rules may take in one evaluation; the rest wait for the next one (counted and logged), so that one account's rules cannot delay another's", func(c *config) *time.Duration { return &c.Alerts.EvaluationBudget }),
	intSetting("alerts.max_rules", "Alerts.MaxRules", "alert rules one account may have per domain", func(c *config) *int { return &c.Alerts.MaxRules }),
	durationSetting("alerts.history_retention", "Alerts.HistoryRetention", "how long alert transitions, finished deliveries and the delivery log are kept", func(c *config) *time.Duration { return &c.Alerts.HistoryRetention }),
	durationSetting("alerts.portal_link_ttl", "Alerts.PortalLinkTTL", "how long the portal link in an alert event opens the portal (a read-only session of the rule's application, or account); 0 sends links without a session", func(c *config) *time.Duration { return &c.Alerts.PortalLinkTTL }),
	intSetting("read_walks", "App.Walks.Walks", "reads that walk many messages (statistics, export pages, lists with q or a method, address, status, path or duration filter) running at once (0: no limit)", func(c *config) *int { return &c.App.Walks.Walks }),
	intSetting("read_walks_per_account", "App.Walks.PerAccount", "of those, how many one account (its portal sessions included) may run at once; below read_walks, another account's walk always starts at once", func(c *config) *int { return &c.App.Walks.PerAccount }),
	intSetting("read_walks_waiting", "App.Walks.MaxWaiting", "walks of one account that may wait for a turn (429 with Retry-After beyond)", func(c *config) *int { return &c.App.Walks.MaxWaiting }),
	{key: "rules.file", field: "App.Rules.File",
		usage: "a YAML or JSON file mapping account names to rule sets, each the document PUT /v1/rules takes (docs/rules.md); the accounts it names are ruled by it alone, and the API may not change their rules (409); read at start, which it must pass, and again within rules.poll_interval of a change (a change that does not load is logged and the rules before stay)",
		parse: func(c *config, v string) (err error) {
			c.RulesFile = strings.TrimSpace(v)
			readAt, _ := os.Stat(c.RulesFile) // before the read: a change after it is read again
			if c.App.Rules.File, err = loadRulesFile(c.RulesFile); err != nil {
				return err
			}
			c.App.Rules.ReloadFile = rulesFileReloader(c.RulesFile, readAt)
			return nil
		},
		show: func(c config) string { return c.RulesFile }},
	secretSetting("rules.hash_key", "App.Rules.HashKey", "key of the rules' hash action and subject hashes, at least 16 bytes, the same on every replica and kept outside the store (default: with store sqlite, generated and kept in the data directory; with memory, random at start; with mongodb and elasticsearch none, and a rule set that hashes is refused)", func(c *config, v string) { c.App.Rules.HashKey = []byte(v) }),
	secretSetting("rules.hash_key_previous", "App.Rules.PreviousHashKey", "the rules' hash key before it was rotated to rules.hash_key: erasures and GET /v1/subjects/messages also look subjects up under it, so that messages indexed before the rotation are still found; nothing is hashed with it (default none)", func(c *config, v string) { c.App.Rules.PreviousHashKey = []byte(v) }),
	durationSetting("rules.poll_interval", "App.Rules.Poll", "how often each replica looks in the store for rule set versions saved on another: the longest another replica writes under the version before; also how long a replica trusts its last read of the journal of erasures, so how long an erasure's 202 waits", func(c *config) *time.Duration { return &c.App.Rules.Poll }),
	intSetting("rules.rescrub_page", "App.Rules.Rescrub.Page", "messages a re-scrub reads and rewrites at a time, its progress saved after each page (1 to 10000)", func(c *config) *int { return &c.App.Rules.Rescrub.Page }),
	durationSetting("rules.rescrub_lease", "App.Rules.Rescrub.Lease", "how long a replica holds a re-scrub between two saves of its progress: a re-scrub whose replica was killed is taken up by any replica after it (a replica stopped cleanly gives it back at once)", func(c *config) *time.Duration { return &c.App.Rules.Rescrub.Lease }),
	durationSetting("erasure.within", "App.Erasure.Within", "how long after an erasure its messages are physically deleted at the latest: the erasure job runs every within/24 (docs/erasure.md)", func(c *config) *time.Duration { return &c.App.Erasure.Within }),
	intSetting("erasure.step", "App.Erasure.Step", "messages the erasure job hides or deletes in one step, each step one write of its own and journaled (1 to 10000)", func(c *config) *int { return &c.App.Erasure.Step }),
	// Every secret setting from a file, too (secretfile.go).
	secretFileSetting("api_keys"),
	secretFileSetting("portal.secret"),
	secretFileSetting("mongodb.uri"),
	secretFileSetting("elasticsearch.password"),
	secretFileSetting("elasticsearch.api_key"),
	secretFileSetting("proxy.api_key"),
	secretFileSetting("rules.hash_key"),
	secretFileSetting("rules.hash_key_previous"),
}

// loadConfig reads the configuration from, lowest to highest precedence: the
// defaults, the YAML file named by -config or REQLOG_CONFIG, the REQLOG_*
// environment variables (empty ones are ignored) and the command-line flags; then it
// validates the result. lookupEnv is os.LookupEnv outside tests. -h gives
// flag.ErrHelp; print configUsage then. -version gives errVersionRequested.
func loadConfig(args []string, lookupEnv func(string) (string, bool)) (config, error) {
	cfg, _, err := loadConfigWithArgs(args, lookupEnv, 0)
	return cfg, err
}

// loadConfigWithArgs is loadConfig for a command that takes operands (its
// directory) after its flags: exactly operands of them, returned.
func loadConfigWithArgs(args []string, lookupEnv func(string) (string, bool), operands int) (config, []string, error) {
	cfg, err := parseConfig(args, lookupEnv, operands)
	if err != nil {
		return config{}, nil, err
	}
	return cfg, args[len(args)-operands:], nil
}

func parseConfig(args []string, lookupEnv func(string) (string, bool), operands int) (config, error) {
	fs := flag.NewFlagSet("reqlogd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configPath := fs.String("config", "", "path of a YAML configuration file")
	showVersion := fs.Bool("version", false, "print the version and exit")
	flagValues := make([]*string, len(settings))
	for i, s := range settings {
		flagValues[i] = fs.String(s.flag(), "", s.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("command line: %w", err)
	}
	if *showVersion {
		return config{}, errVersionRequested
	}
	switch {
	case fs.NArg() > operands:
		return config{}, fmt.Errorf("command line: unexpected argument %q", fs.Arg(operands))
	case fs.NArg() < operands:
		return config{}, errors.New("command line: the directory is missing after the flags")
	}

	cfg := defaultConfig()
	path, fromEnv := lookupEnv(configFileEnv)
	if explicit := flagSet(fs, "config"); explicit || !fromEnv {
		path = *configPath
	}
	if path != "" {
		if err := applyFile(&cfg, path); err != nil {
			return config{}, err
		}
	}
	if err := bothGiven("environment", func(s setting) bool { v, ok := lookupEnv(s.env()); return ok && v != "" }); err != nil {
		return config{}, err
	}
	for _, s := range settings {
		if v, ok := lookupEnv(s.env()); ok && v != "" {
			if err := apply(&cfg, s, v, "environment"); err != nil {
				return config{}, err
			}
		}
	}
	if err := bothGiven("command line", func(s setting) bool { return flagSet(fs, s.flag()) }); err != nil {
		return config{}, err
	}
	for i, s := range settings {
		if flagSet(fs, s.flag()) {
			if err := apply(&cfg, s, *flagValues[i], "flag -"+s.flag()); err != nil {
				return config{}, err
			}
		}
	}
	if cfg.Store == storeSQLite {
		// A retention rule over the store's cap is refused as REQLOG_RETENTION is.
		cfg.App.Rules.MaxRetention = cmp.Or(cfg.SQLite.MaxRetention, sqlite.DefaultMaxRetention)
	}
	return cfg, cfg.validate()
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func apply(cfg *config, s setting, value, source string) error {
	if s.fileOf != "" {
		return applySecretFile(cfg, s, value, source)
	}
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

func (s setting) invalid(value, source, reason string) *app.ConfigError {
	if s.secret {
		value = ""
	}
	return &app.ConfigError{Setting: s.env(), Value: value, Source: source, Reason: reason}
}

// applyFile sets what the YAML file at path sets. Nested mappings are sections
// ("mongodb: {uri: ...}"); a sequence is a list setting. Unknown keys are errors, so
// a typo cannot silently fall back to a default.
func applyFile(cfg *config, path string) error {
	fileError := func(reason string) error {
		return &app.ConfigError{Setting: configFileEnv, Value: path, Reason: reason}
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
	if err := bothGiven("config file "+path, func(s setting) bool { _, ok := values[s.key]; return ok }); err != nil {
		return err
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

// validate checks the process's own settings, requires the chosen store's
// address, and has each part validate its Config.
func (c config) validate() error {
	if err := c.refused("HTTP", c.HTTP.Validate()); err != nil {
		return err
	}
	store, ok := storeNamed(storeRegistry, c.Store)
	if !ok {
		return c.bad("store", "must be "+storeNames(storeRegistry))
	}
	if store.requires != nil {
		if key, reason := store.requires(&c); key != "" {
			return c.bad(key, reason)
		}
	}
	if err := c.refused("App", c.App.Validate()); err != nil {
		return err
	}
	if err := c.refused("Portal", c.Portal.Validate()); err != nil {
		return err
	}
	switch {
	case c.LogFormat != logFormatJSON && c.LogFormat != logFormatConsole:
		return c.bad("log_format", "must be json or console")
	case c.ShutdownTimeout <= 0:
		return c.bad("shutdown_timeout", "must be positive")
	}
	// Every store's settings, whichever runs: a mistake shows before it is needed.
	if err := c.refused("MongoDB", c.MongoDB.Validate()); err != nil {
		return err
	}
	if err := c.refused("SQLite", c.SQLite.Validate()); err != nil {
		return err
	}
	if c.Store == storeSQLite {
		if err := c.refused("SQLite", c.SQLite.CheckRetention(c.App.Retention)); err != nil {
			return err
		}
	}
	if err := c.refused("Elasticsearch", c.Elasticsearch.Validate()); err != nil {
		return err
	}
	if err := c.refused("Proxy", c.Proxy.Validate()); err != nil {
		return err
	}
	if err := c.refused("OTLP", c.OTLP.Validate()); err != nil {
		return err
	}
	if err := c.refused("Alerts", c.Alerts.Validate()); err != nil {
		return err
	}
	if c.Alerts.DeliveryLease <= c.Webhook.Timeout {
		return c.bad("alerts.delivery_lease", "must be longer than REQLOG_ALERTS_WEBHOOK_TIMEOUT ("+formatDuration(c.Webhook.Timeout)+"), or another replica would send a delivery again while it is under way")
	}
	return c.refused("Webhook", c.Webhook.Validate())
}

// refused turns a part's refusal of one field (a *domain.ValidationError
// naming it) into the error of the setting that sets it; other errors pass as
// they are.
func (c config) refused(part string, err error) error {
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) || len(invalid.Fields) != 1 {
		return err
	}
	for _, s := range settings {
		if s.field == part+"."+invalid.Fields[0].Field {
			return c.bad(s.key, invalid.Fields[0].Message)
		}
	}
	return err
}

// bad is the error of the setting key: with its value and source as given, or
// its default.
func (c config) bad(key, reason string) error {
	for _, s := range settings {
		if s.key == key {
			if o, ok := c.origins[key]; ok {
				return s.invalid(o.value, o.source, reason)
			}
			return s.invalid(s.show(c), "", reason)
		}
	}
	panic("reqlogd: unknown setting " + key) // a programming error in this file
}

// configUsage describes every setting: flag, environment variable, YAML key and
// default.
func configUsage() string {
	var b strings.Builder
	b.WriteString("Usage: reqlogd [flags]\n" +
		"       reqlogd backup [flags] DIR          copy the sqlite store's data directory into DIR (beside a running reqlogd or not)\n" +
		"       reqlogd restore [flags] [-erasures-from OLD_DIR] BACKUP_DIR\n" +
		"                                           copy a backup into the data directory, which must hold no data,\n" +
		"                                           keeping the journal of erasures of the directory it replaces\n\nEvery setting comes from, lowest to highest precedence: its default, the YAML\n" +
		"file named by -config or " + configFileEnv + ", the environment, the command line.\n\n")
	defaults := defaultConfig()
	fmt.Fprintf(&b, "  -config PATH\n      %s; YAML file of the settings below (keys as shown)\n", configFileEnv)
	b.WriteString("  -version\n      print the version and build revision, and exit\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "  -%s\n      %s, YAML %s: %s", s.flag(), s.env(), s.key, s.usage)
		if d := s.show(defaults); d != "" {
			fmt.Fprintf(&b, " (default %s)", d)
		}
		b.WriteString("\n")
	}
	return b.String()
}
