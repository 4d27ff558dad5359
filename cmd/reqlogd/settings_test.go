package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

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

// writeYAML writes key: value for a dotted key ("mongodb.uri") as nested YAML.
func writeYAML(t *testing.T, key, value string) string {
	t.Helper()
	section, leaf, nested := strings.Cut(key, ".")
	text := key + ": " + strconv.Quote(value) + "\n"
	if nested {
		text = section + ":\n  " + leaf + ": " + strconv.Quote(value) + "\n"
	}
	return writeFile(t, text)
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reqlog.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func envName(key string) string {
	return "REQLOG_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func flagName(key string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(key)
}

func digestHex(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:])
}

// settingCase sets one setting to a value other than its default.
type settingCase struct {
	key   string
	value string
	extra map[string]string // environment the value needs to be valid
	check func(config) bool
}

// Every setting, each set to a value other than its default.
var settingCases = []settingCase{
	{key: "addr", value: "127.0.0.1:9999", check: func(c config) bool { return c.HTTP.Addr == "127.0.0.1:9999" }},
	{key: "store", value: "mongodb", extra: map[string]string{"REQLOG_MONGODB_URI": "mongodb://db"},
		check: func(c config) bool { return c.Store == storeMongoDB }},
	{key: "api_keys", value: "acme:live:k1, globex:test:sha256:" + digestHex("k2"), check: func(c config) bool {
		return slices.Equal(c.Keyring.Keys, []app.APIKey{
			{Account: "acme", Domain: "live", Digest: sha256.Sum256([]byte("k1")), Short: true},
			{Account: "globex", Domain: "test", Digest: sha256.Sum256([]byte("k2"))},
		})
	}},
	{key: "visibility_delay", value: "0", check: func(c config) bool { return c.App.VisibilityDelay == 0 }},
	{key: "retention", value: "7d", check: func(c config) bool { return c.App.Retention == 7*24*time.Hour }},
	{key: "rollup_retention", value: "365d", check: func(c config) bool { return c.App.RollupRetention == 365*24*time.Hour }},
	{key: "purge_interval", value: "30s", check: func(c config) bool { return c.App.PurgeInterval == 30*time.Second }},
	{key: "max_body_bytes", value: "1024", check: func(c config) bool { return c.HTTP.MaxBodyBytes == 1024 }},
	{key: "max_batch", value: "10", check: func(c config) bool { return c.App.MaxBatch == 10 }},
	{key: "max_batch_days", value: "3", check: func(c config) bool { return c.App.MaxBatchDays == 3 }},
	{key: "max_batch_days", value: "0", check: func(c config) bool { return c.App.MaxBatchDays == 0 }},
	{key: "masked_headers", value: "X-Secret, authorization", check: func(c config) bool {
		return slices.Equal(c.App.MaskedHeaders, []string{"X-Secret", "authorization"})
	}},
	{key: "redacted_fields", value: "pin, One-Time-Code", check: func(c config) bool {
		return slices.Equal(c.App.RedactedFields, []string{"pin", "One-Time-Code"}) && slices.Equal(c.App.Policy().RedactedFields, c.App.RedactedFields)
	}},
	{key: "redacted_fields", value: "None", check: func(c config) bool {
		return len(c.App.RedactedFields) == 0 && len(c.App.Policy().RedactedFields) == 0
	}},
	{key: "rate_limit", value: "2.5", check: func(c config) bool { return c.HTTP.RateLimit == 2.5 }},
	{key: "rate_limit", value: "0", check: func(c config) bool { return c.HTTP.RateLimit == 0 }},
	{key: "rate_burst", value: "7", check: func(c config) bool { return c.HTTP.RateBurst == 7 }},
	{key: "ingest_decoders", value: "3", check: func(c config) bool { return c.App.Admission.Decoders == 3 }},
	{key: "ingest_max_waiting", value: "0", check: func(c config) bool { return c.App.Admission.MaxWaiting == 0 }},
	{key: "ingest_max_bytes", value: "1048576", check: func(c config) bool { return c.App.Admission.MaxBytes == 1<<20 }},
	{key: "log_level", value: "debug", check: func(c config) bool { return c.LogLevel == zapcore.DebugLevel }},
	{key: "log_format", value: "console", check: func(c config) bool { return c.LogFormat == logFormatConsole }},
	{key: "shutdown_timeout", value: "3s", check: func(c config) bool { return c.ShutdownTimeout == 3*time.Second }},
	{key: "mongodb.uri", value: "mongodb://u:p@db:27017", check: func(c config) bool { return c.MongoDB.URI == "mongodb://u:p@db:27017" }},
	{key: "mongodb.database", value: "logs", check: func(c config) bool { return c.MongoDB.Database == "logs" }},
	{key: "mongodb.ttl_index", value: "true", check: func(c config) bool { return c.MongoDB.TTLIndex }},
	{key: "elasticsearch.url", value: "http://a:9200,http://b:9200", check: func(c config) bool {
		return slices.Equal(c.Elasticsearch.Addresses, []string{"http://a:9200", "http://b:9200"})
	}},
	{key: "elasticsearch.username", value: "elastic", check: func(c config) bool { return c.Elasticsearch.Username == "elastic" }},
	{key: "elasticsearch.password", value: "pw", check: func(c config) bool { return c.Elasticsearch.Password == "pw" }},
	{key: "elasticsearch.api_key", value: "abc", check: func(c config) bool { return c.Elasticsearch.APIKey == "abc" }},
	{key: "elasticsearch.index_prefix", value: "logs", check: func(c config) bool { return c.Elasticsearch.IndexPrefix == "logs" }},
	{key: "elasticsearch.max_request_bytes", value: "1048576", check: func(c config) bool { return c.Elasticsearch.MaxRequestBytes == 1<<20 }},
	// 0 is passed on as such: the store reads it as its own default.
	{key: "elasticsearch.max_request_bytes", value: "0", check: func(c config) bool { return c.Elasticsearch.MaxRequestBytes == 0 }},
	{key: "elasticsearch.warm_up", value: "-1s", check: func(c config) bool { return c.Elasticsearch.WarmUp == -time.Second }},
	{key: "elasticsearch.replicas", value: "2", check: func(c config) bool { return c.Elasticsearch.Replicas == 2 }},
	{key: "elasticsearch.shards", value: "2", check: func(c config) bool { return c.Elasticsearch.Shards == 2 }},
	{key: "sqlite.dir", value: "/var/lib/reqlog", check: func(c config) bool { return c.SQLite.Dir == "/var/lib/reqlog" }},
	{key: "sqlite.max_open_days", value: "3", check: func(c config) bool { return c.SQLite.MaxOpenDays == 3 }},
	{key: "sqlite.backup_dir", value: "/backups/reqlog", check: func(c config) bool { return c.SQLite.BackupDir == "/backups/reqlog" }},
	{key: "sqlite.check_days", value: "7", check: func(c config) bool { return c.SQLite.CheckDays == 7 }},
	{key: "sqlite.check_days", value: "-1", check: func(c config) bool { return c.SQLite.CheckDays == -1 }},
	{key: "sqlite.max_retention", value: "400d", check: func(c config) bool { return c.SQLite.MaxRetention == 400*24*time.Hour }},
	{key: "public_url", value: "https://logs.example.com", check: func(c config) bool { return c.Portal.PublicURL == "https://logs.example.com" }},
	{key: "portal.secret", value: strings.Repeat("s", 32), check: func(c config) bool { return string(c.Portal.Secret) == strings.Repeat("s", 32) }},
	{key: "portal.frame_ancestors", value: "'self', https://app.example.com", check: func(c config) bool {
		return slices.Equal(c.Portal.FrameAncestors, []string{"'self'", "https://app.example.com"})
	}},
	{key: "group_commit", value: "false", check: func(c config) bool { return !c.App.GroupCommit.Enabled }},
	{key: "group_commit_max_messages", value: "64", check: func(c config) bool { return c.App.GroupCommit.MaxBatchMessages == 64 }},
	{key: "group_commit_max_bytes", value: "1048576", check: func(c config) bool { return c.App.GroupCommit.MaxBatchBytes == 1<<20 }},
	{key: "group_commit_linger", value: "2ms", check: func(c config) bool { return c.App.GroupCommit.Linger == 2*time.Millisecond }},
	{key: "group_commit_max_wait", value: "5s", check: func(c config) bool { return c.App.GroupCommit.MaxWait == 5*time.Second }},
	{key: "group_commit_writers", value: "8", check: func(c config) bool { return c.App.GroupCommit.Writers == 8 }},
	{key: "group_commit_queue_messages", value: "100", check: func(c config) bool { return c.App.GroupCommit.MaxQueueMessages == 100 }},
	{key: "group_commit_queue_bytes", value: "1000", check: func(c config) bool { return c.App.GroupCommit.MaxQueueBytes == 1000 }},
	{key: "proxy.upstream", value: "http://127.0.0.1:3000", check: func(c config) bool { return c.Proxy.Upstream == "http://127.0.0.1:3000" }},
	{key: "proxy.addr", value: "127.0.0.1:9998", check: func(c config) bool { return c.Proxy.Addr == "127.0.0.1:9998" }},
	{key: "proxy.name", value: "shop", check: func(c config) bool { return c.Proxy.Name == "shop" }},
	{key: "proxy.trusted_proxies", value: "10.0.0.0/8, ::1", check: func(c config) bool {
		return proxy.FormatPrefixes(c.Proxy.TrustedProxies) == "10.0.0.0/8,::1/128"
	}},
	{key: "proxy.max_body_bytes", value: "1024", check: func(c config) bool { return c.Proxy.MaxBodyBytes == 1024 }},
	{key: "proxy.buffer_size", value: "10", check: func(c config) bool { return c.Proxy.BufferSize == 10 }},
	{key: "proxy.response_header_timeout", value: "90s", check: func(c config) bool { return c.Proxy.ResponseHeaderTimeout == 90*time.Second }},
	{key: "proxy.read_header_timeout", value: "5s", check: func(c config) bool { return c.Proxy.ReadHeaderTimeout == 5*time.Second }},
	{key: "proxy.body_read_timeout", value: "30s", check: func(c config) bool { return c.Proxy.BodyReadTimeout == 30*time.Second }},
	{key: "proxy.max_body_read_time", value: "90s", check: func(c config) bool { return c.Proxy.MaxBodyReadTime == 90*time.Second }},
	{key: "proxy.max_in_flight", value: "64", check: func(c config) bool { return c.Proxy.MaxInFlight == 64 }},
	{key: "proxy.reqlog_url", value: "https://logs.example.com", check: func(c config) bool { return c.Proxy.ReqlogURL == "https://logs.example.com" }},
	{key: "proxy.api_key", value: "rk_proxy_key", check: func(c config) bool { return c.Proxy.APIKey == "rk_proxy_key" }},
	{key: "otlp.max_body_bytes", value: "1024", check: func(c config) bool { return c.OTLP.MaxBodyBytes == 1024 }},
	{key: "otlp.max_spans", value: "10", check: func(c config) bool { return c.OTLP.MaxSpans == 10 }},
	{key: "otlp.decoders", value: "37", check: func(c config) bool { return c.OTLP.Decoders == 37 }}, // not a core count: the default is one
	{key: "exports_per_key", value: "3", check: func(c config) bool { return c.HTTP.Exports.PerKey == 3 }},
	{key: "exports_max", value: "40", check: func(c config) bool { return c.HTTP.Exports.Total == 40 }},
	{key: "export_min_rate", value: "0", check: func(c config) bool { return c.HTTP.Exports.MinRate == 0 }},
	{key: "export_stall_timeout", value: "20s", check: func(c config) bool { return c.HTTP.Exports.Stall == 20*time.Second }},
	{key: "alerts.evaluation_interval", value: "30s", check: func(c config) bool { return c.Alerts.EvaluationInterval == 30*time.Second }},
	{key: "alerts.poll_interval", value: "5s", check: func(c config) bool { return c.Alerts.Poll == 5*time.Second }},
	{key: "rules.file", value: "testdata/rules.yaml", check: func(c config) bool {
		return c.RulesFile == "testdata/rules.yaml" && c.App.Rules.File["acme"].Privacy[0].ID == "emails"
	}},
	{key: "rules.hash_key", value: "a-rules-hash-key-16", check: func(c config) bool { return string(c.App.Rules.HashKey) == "a-rules-hash-key-16" }},
	{key: "rules.hash_key_previous", value: "an-older-hash-key-16", check: func(c config) bool { return string(c.App.Rules.PreviousHashKey) == "an-older-hash-key-16" }},
	{key: "rules.poll_interval", value: "250ms", check: func(c config) bool { return c.App.Rules.Poll == 250*time.Millisecond }},
	{key: "rules.rescrub_page", value: "250", check: func(c config) bool { return c.App.Rules.Rescrub.Page == 250 }},
	{key: "rules.rescrub_lease", value: "45s", check: func(c config) bool { return c.App.Rules.Rescrub.Lease == 45*time.Second }},
	{key: "erasure.within", value: "6h", check: func(c config) bool { return c.App.Erasure.Within == 6*time.Hour }},
	{key: "erasure.step", value: "100", check: func(c config) bool { return c.App.Erasure.Step == 100 }},
	{key: "alerts.allow_private_webhooks", value: "true", check: func(c config) bool { return c.Webhook.AllowPrivate }},
	{key: "alerts.webhook_timeout", value: "5s", check: func(c config) bool { return c.Webhook.Timeout == 5*time.Second }},
	{key: "alerts.delivery_lease", value: "2m", check: func(c config) bool { return c.Alerts.DeliveryLease == 2*time.Minute }},
	{key: "alerts.delivery_concurrency", value: "8", check: func(c config) bool { return c.Alerts.DeliveryConcurrency == 8 }},
	{key: "alerts.delivery_per_account", value: "2", check: func(c config) bool { return c.Alerts.DeliveryPerAccount == 2 }},
	{key: "alerts.max_pending_deliveries", value: "500", check: func(c config) bool { return c.Alerts.MaxPendingDeliveries == 500 }},
	{key: "alerts.endpoint_disable_after", value: "6h", check: func(c config) bool { return c.Alerts.EndpointDisableAfter == 6*time.Hour }},
	{key: "alerts.evaluation_budget", value: "5s", check: func(c config) bool { return c.Alerts.EvaluationBudget == 5*time.Second }},
	{key: "alerts.max_rules", value: "100", check: func(c config) bool { return c.Alerts.MaxRules == 100 }},
	{key: "alerts.history_retention", value: "7d", check: func(c config) bool { return c.Alerts.HistoryRetention == 7*24*time.Hour }},
	{key: "alerts.portal_link_ttl", value: "0", check: func(c config) bool { return c.Alerts.PortalLinkTTL == 0 }},
	{key: "read_walks", value: "16", check: func(c config) bool { return c.App.Walks.Walks == 16 }},
	{key: "read_walks_per_account", value: "3", extra: map[string]string{"REQLOG_READ_WALKS": "4"},
		check: func(c config) bool { return c.App.Walks.PerAccount == 3 }},
	{key: "read_walks_waiting", value: "3", check: func(c config) bool { return c.App.Walks.MaxWaiting == 3 }},
}

// Each row names the config field it sets, so that a part's refusal of that field
// reaches the user as the setting: the field must be the one its value changes,
// and every row needs a case above.
func TestEachSettingSetsTheFieldItNames(t *testing.T) {
	defaults := defaultConfig()
	for _, s := range settings {
		if s.fileOf != "" {
			continue // a secret's file: TestSecretFromFile
		}
		i := slices.IndexFunc(settingCases, func(tc settingCase) bool { return tc.key == s.key })
		if i < 0 {
			t.Errorf("setting %s has no case in settingCases", s.key)
			continue
		}
		tc := settingCases[i]
		env := maps.Clone(tc.extra)
		if env == nil {
			env = map[string]string{}
		}
		env[s.env()] = tc.value
		cfg, err := loadConfig(nil, envOf(env))
		if err != nil {
			t.Fatalf("%s: %v", s.key, err)
		}
		if reflect.DeepEqual(fieldOf(t, cfg, s.field), fieldOf(t, defaults, s.field)) {
			t.Errorf("setting %s=%q left %s at its default: the row names another field", s.key, tc.value, s.field)
		}
	}
}

// fieldOf is the value of the dotted field path in c.
func fieldOf(t *testing.T, c config, path string) any {
	t.Helper()
	v := reflect.ValueOf(c)
	for _, name := range strings.Split(path, ".") {
		if v = v.FieldByName(name); !v.IsValid() {
			t.Fatalf("config has no field %s", path)
		}
	}
	return v.Interface()
}

// The defaults are each part's own.
func TestDefaultsAreEachPartsDefaults(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	// The rules' retention cap is the SQLite store's (the default store), set
	// at load; the app's own default has none.
	wantApp := app.DefaultConfig()
	wantApp.Rules.MaxRetention = sqlite.DefaultMaxRetention
	for part, pair := range map[string][2]any{
		"app":     {cfg.App, wantApp},
		"httpapi": {cfg.HTTP, httpapi.DefaultConfig()},
		"portal":  {cfg.Portal, portal.DefaultConfig()},
		"mongo":   {cfg.MongoDB, mongo.DefaultConfig()},
		"elastic": {cfg.Elasticsearch, elastic.DefaultConfig()},
		"keyring": {cfg.Keyring, keyring.Config{}},
		"proxy":   {cfg.Proxy, proxy.DefaultConfig()},
		"otlp":    {cfg.OTLP, otlp.DefaultConfig()},
		"alerts":  {cfg.Alerts, app.DefaultAlertConfig()},
		"webhook": {cfg.Webhook, webhook.DefaultConfig()},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("default %s config %+v, want its DefaultConfig %+v", part, pair[0], pair[1])
		}
	}
	if cfg.Elasticsearch.MaxRequestBytes != elastic.DefaultMaxRequestBytes || cfg.Elasticsearch.IndexPrefix != elastic.DefaultIndexPrefix ||
		cfg.Elasticsearch.Replicas != elastic.DefaultReplicas || cfg.MongoDB.Database != mongo.DefaultDatabase {
		t.Errorf("store defaults %+v, %+v are not the stores' own", cfg.Elasticsearch, cfg.MongoDB)
	}
}

func TestEachSettingFromEachSource(t *testing.T) {
	if defaults, err := loadConfig(nil, envOf(nil)); err != nil {
		t.Fatalf("defaults: %v", err)
	} else {
		for _, tc := range settingCases {
			if tc.check(defaults) {
				t.Fatalf("%s: the test value %q is the default, so this test proves nothing", tc.key, tc.value)
			}
		}
	}
	for _, tc := range settingCases {
		sources := map[string]func(t *testing.T, env map[string]string) []string{
			"environment": func(_ *testing.T, env map[string]string) []string {
				env[envName(tc.key)] = tc.value
				return nil
			},
			"file": func(t *testing.T, env map[string]string) []string {
				env[configFileEnv] = writeYAML(t, tc.key, tc.value)
				return nil
			},
			"flag": func(*testing.T, map[string]string) []string {
				return []string{"-" + flagName(tc.key) + "=" + tc.value}
			},
		}
		for source, set := range sources {
			t.Run(tc.key+"/"+source, func(t *testing.T) {
				env := map[string]string{}
				for k, v := range tc.extra {
					env[k] = v
				}
				args := set(t, env)
				cfg, err := loadConfig(args, envOf(env))
				if err != nil {
					t.Fatal(err)
				}
				if !tc.check(cfg) {
					t.Errorf("%s=%q from the %s was not applied: %+v", tc.key, tc.value, source, cfg)
				}
			})
		}
	}
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "retention: 1d\nmax_batch: 7\n")
	other := writeFile(t, "retention: 9d\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want time.Duration
	}{
		{"default", nil, nil, domain.DefaultRetention},
		{"file over default", map[string]string{configFileEnv: file}, nil, 24 * time.Hour},
		{"environment over file", map[string]string{configFileEnv: file, "REQLOG_RETENTION": "2d"}, nil, 48 * time.Hour},
		{"flag over environment", map[string]string{configFileEnv: file, "REQLOG_RETENTION": "2d"}, []string{"-retention", "3d"}, 72 * time.Hour},
		{"-config over REQLOG_CONFIG", map[string]string{configFileEnv: file}, []string{"-config", other}, 9 * 24 * time.Hour},
		{"empty environment variable is ignored", map[string]string{configFileEnv: file, "REQLOG_RETENTION": ""}, nil, 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.App.Retention != tc.want {
				t.Errorf("retention %s, want %s", cfg.App.Retention, tc.want)
			}
		})
	}
	// Settings a higher layer does not mention keep the lower layer's value.
	cfg, err := loadConfig([]string{"-retention=3d"}, envOf(map[string]string{configFileEnv: file}))
	if err != nil || cfg.App.MaxBatch != 7 {
		t.Errorf("max_batch from the file lost under a flag: %d, %v", cfg.App.MaxBatch, err)
	}
}

func TestFileLists(t *testing.T) {
	path := writeFile(t, "api_keys:\n  - acme:live:k1\n  - acme:test:k2\nmasked_headers: []\nelasticsearch:\n  url: [http://a:9200, http://b:9200]\n")
	cfg, err := loadConfig(nil, envOf(map[string]string{configFileEnv: path}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Keyring.Keys) != 2 || cfg.Keyring.Keys[1].Domain != "test" {
		t.Errorf("api keys %+v", cfg.Keyring.Keys)
	}
	if cfg.App.MaskedHeaders == nil || len(cfg.App.MaskedHeaders) != 0 {
		t.Errorf("masked_headers: [] gave %#v, want an empty list", cfg.App.MaskedHeaders)
	}
	if len(cfg.Elasticsearch.Addresses) != 2 {
		t.Errorf("elasticsearch addresses %q", cfg.Elasticsearch.Addresses)
	}
}

func TestInvalidSettingsNameTheSetting(t *testing.T) {
	const secretKey = "s3cr3t-key-value"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		setting string
		secret  string // must not appear in the message
	}{
		{"addr without port", map[string]string{"REQLOG_ADDR": "localhost"}, nil, "REQLOG_ADDR", ""},
		{"unknown store", map[string]string{"REQLOG_STORE": "postgres"}, nil, "REQLOG_STORE", ""},
		{"key domain", map[string]string{"REQLOG_API_KEYS": "acme:prod:" + secretKey}, nil, "REQLOG_API_KEYS", secretKey},
		{"empty key", map[string]string{"REQLOG_API_KEYS": "acme:live:"}, nil, "REQLOG_API_KEYS", ""},
		{"key with a space", map[string]string{"REQLOG_API_KEYS": "acme:live:" + secretKey + " x"}, nil, "REQLOG_API_KEYS", secretKey},
		{"account characters", map[string]string{"REQLOG_API_KEYS": "ac me:live:" + secretKey}, nil, "REQLOG_API_KEYS", secretKey},
		{"account too long", map[string]string{"REQLOG_API_KEYS": strings.Repeat("a", 65) + ":live:" + secretKey}, nil, "REQLOG_API_KEYS", secretKey},
		{"short digest", map[string]string{"REQLOG_API_KEYS": "acme:live:sha256:abcd"}, nil, "REQLOG_API_KEYS", ""},
		{"digest not hex", map[string]string{"REQLOG_API_KEYS": "acme:live:sha256:" + strings.Repeat("zz", 32)}, nil, "REQLOG_API_KEYS", ""},
		{"duplicate key", map[string]string{"REQLOG_API_KEYS": "acme:live:" + secretKey + ",acme:test:" + secretKey}, nil, "REQLOG_API_KEYS", secretKey},
		{"entry without domain", map[string]string{"REQLOG_API_KEYS": secretKey}, nil, "REQLOG_API_KEYS", secretKey},
		{"empty entry", map[string]string{"REQLOG_API_KEYS": "acme:live:" + secretKey + ","}, nil, "REQLOG_API_KEYS", secretKey},
		// A key typed in the wrong position must not be echoed back either.
		{"key in the domain position", map[string]string{"REQLOG_API_KEYS": "acme:" + secretKey + ":live"}, nil, "REQLOG_API_KEYS", secretKey},
		{"key in the account position", map[string]string{"REQLOG_API_KEYS": secretKey + ":acme:live"}, nil, "REQLOG_API_KEYS", secretKey},
		{"key with base64 characters first", map[string]string{"REQLOG_API_KEYS": "k+y/" + secretKey + "=:live:acme"}, nil, "REQLOG_API_KEYS", secretKey},
		{"key in the account position of a digest", map[string]string{"REQLOG_API_KEYS": secretKey + ":acme:sha256:abcd"}, nil, "REQLOG_API_KEYS", secretKey},
		{"visibility delay syntax", map[string]string{"REQLOG_VISIBILITY_DELAY": "soon"}, nil, "REQLOG_VISIBILITY_DELAY", ""},
		{"negative visibility delay", nil, []string{"-visibility-delay=-1s"}, "REQLOG_VISIBILITY_DELAY", ""},
		{"visibility delay not under retention", map[string]string{"REQLOG_VISIBILITY_DELAY": "2h", "REQLOG_RETENTION": "1h"}, nil, "REQLOG_VISIBILITY_DELAY", ""},
		{"zero retention", map[string]string{"REQLOG_RETENTION": "0d"}, nil, "REQLOG_RETENTION", ""},
		{"retention syntax", map[string]string{"REQLOG_RETENTION": "30days"}, nil, "REQLOG_RETENTION", ""},
		{"zero purge interval", map[string]string{"REQLOG_PURGE_INTERVAL": "0"}, nil, "REQLOG_PURGE_INTERVAL", ""},
		{"body limit with unit", map[string]string{"REQLOG_MAX_BODY_BYTES": "5MB"}, nil, "REQLOG_MAX_BODY_BYTES", ""},
		{"zero body limit", nil, []string{"-max-body-bytes", "0"}, "REQLOG_MAX_BODY_BYTES", ""},
		{"zero batch", map[string]string{"REQLOG_MAX_BATCH": "0"}, nil, "REQLOG_MAX_BATCH", ""},
		{"batch syntax", map[string]string{"REQLOG_MAX_BATCH": "many"}, nil, "REQLOG_MAX_BATCH", ""},
		{"negative batch days", map[string]string{"REQLOG_MAX_BATCH_DAYS": "-1"}, nil, "REQLOG_MAX_BATCH_DAYS", ""},
		{"negative open day files", map[string]string{"REQLOG_SQLITE_MAX_OPEN_DAYS": "-1"}, nil, "REQLOG_SQLITE_MAX_OPEN_DAYS", ""},
		{"retention past the sqlite store's bound", map[string]string{"REQLOG_RETENTION": "400d", "REQLOG_SQLITE_MAX_RETENTION": "365d"}, nil, "REQLOG_SQLITE_MAX_RETENTION", ""},
		{"masked header name", map[string]string{"REQLOG_MASKED_HEADERS": "X-Ok,Bad Header"}, nil, "REQLOG_MASKED_HEADERS", ""},
		{"redacted field of separators", map[string]string{"REQLOG_REDACTED_FIELDS": "password,-_"}, nil, "REQLOG_REDACTED_FIELDS", ""},
		{"rate limit syntax", map[string]string{"REQLOG_RATE_LIMIT": "fast"}, nil, "REQLOG_RATE_LIMIT", ""},
		{"negative decoders", map[string]string{"REQLOG_INGEST_DECODERS": "-1"}, nil, "REQLOG_INGEST_DECODERS", ""},
		{"negative waiting room", nil, []string{"-ingest-max-waiting=-2"}, "REQLOG_INGEST_MAX_WAITING", ""},
		{"no room for bodies", nil, []string{"-ingest-max-bytes=0"}, "REQLOG_INGEST_MAX_BYTES", ""},
		{"rate limit not a number", nil, []string{"-rate-limit=NaN"}, "REQLOG_RATE_LIMIT", ""},
		{"negative rate limit", map[string]string{"REQLOG_RATE_LIMIT": "-1"}, nil, "REQLOG_RATE_LIMIT", ""},
		{"zero burst", map[string]string{"REQLOG_RATE_BURST": "0"}, nil, "REQLOG_RATE_BURST", ""},
		{"huge burst", map[string]string{"REQLOG_RATE_BURST": "1000000000"}, nil, "REQLOG_RATE_BURST", ""},
		{"log level", map[string]string{"REQLOG_LOG_LEVEL": "loud"}, nil, "REQLOG_LOG_LEVEL", ""},
		{"log format", map[string]string{"REQLOG_LOG_FORMAT": "xml"}, nil, "REQLOG_LOG_FORMAT", ""},
		{"zero shutdown timeout", map[string]string{"REQLOG_SHUTDOWN_TIMEOUT": "0s"}, nil, "REQLOG_SHUTDOWN_TIMEOUT", ""},
		{"short portal secret", map[string]string{"REQLOG_PORTAL_SECRET": secretKey}, nil, "REQLOG_PORTAL_SECRET", secretKey},
		{"public url without scheme", map[string]string{"REQLOG_PUBLIC_URL": "logs.example.com"}, nil, "REQLOG_PUBLIC_URL", ""},
		{"frame ancestor", nil, []string{"-portal-frame-ancestors", "'self',https://a.example.com; script-src *"}, "REQLOG_PORTAL_FRAME_ANCESTORS", ""},
		{"mongodb without uri", map[string]string{"REQLOG_STORE": "mongodb"}, nil, "REQLOG_MONGODB_URI", ""},
		{"mongodb database name", map[string]string{"REQLOG_MONGODB_DATABASE": "a.b"}, nil, "REQLOG_MONGODB_DATABASE", ""},
		{"elasticsearch without url", map[string]string{"REQLOG_STORE": "elasticsearch"}, nil, "REQLOG_ELASTICSEARCH_URL", ""},
		{"index prefix", map[string]string{"REQLOG_ELASTICSEARCH_INDEX_PREFIX": "Logs"}, nil, "REQLOG_ELASTICSEARCH_INDEX_PREFIX", ""},
		{"request limit with unit", map[string]string{"REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES": "100mb"}, nil, "REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES", ""},
		{"fractional request limit", nil, []string{"-elasticsearch-max-request-bytes", "1.5"}, "REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES", ""},
		{"negative request limit", nil, []string{"-elasticsearch-max-request-bytes=-1"}, "REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES", ""},
		{"negative request limit in file", map[string]string{configFileEnv: writeYAML(t, "elasticsearch.max_request_bytes", "-1")}, nil, "REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES", ""},
		{"no replicas", map[string]string{"REQLOG_ELASTICSEARCH_REPLICAS": "0"}, nil, "REQLOG_ELASTICSEARCH_REPLICAS", ""},
		{"no shards", map[string]string{"REQLOG_ELASTICSEARCH_SHARDS": "0"}, nil, "REQLOG_ELASTICSEARCH_SHARDS", ""},
		{"too many shards", nil, []string{"-elasticsearch-shards", "1025"}, "REQLOG_ELASTICSEARCH_SHARDS", ""},
		{"proxy upstream without scheme", map[string]string{"REQLOG_PROXY_UPSTREAM": "127.0.0.1:3000"}, nil, "REQLOG_PROXY_UPSTREAM", ""},
		{"proxy addr without port", map[string]string{"REQLOG_PROXY_UPSTREAM": "http://app", "REQLOG_PROXY_ADDR": "localhost"}, nil, "REQLOG_PROXY_ADDR", ""},
		{"empty proxy name", map[string]string{"REQLOG_PROXY_UPSTREAM": "http://app", "REQLOG_PROXY_NAME": " "}, []string{"-proxy-name", " "}, "REQLOG_PROXY_NAME", ""},
		{"trusted proxy not an address", map[string]string{"REQLOG_PROXY_TRUSTED_PROXIES": "10.0.0.0/8,lb.internal"}, nil, "REQLOG_PROXY_TRUSTED_PROXIES", ""},
		{"negative proxy body limit", map[string]string{"REQLOG_PROXY_UPSTREAM": "http://app", "REQLOG_PROXY_MAX_BODY_BYTES": "-1"}, nil, "REQLOG_PROXY_MAX_BODY_BYTES", ""},
		{"negative proxy response header timeout", map[string]string{"REQLOG_PROXY_UPSTREAM": "http://app", "REQLOG_PROXY_RESPONSE_HEADER_TIMEOUT": "-1s"}, nil, "REQLOG_PROXY_RESPONSE_HEADER_TIMEOUT", ""},
		{"negative proxy in-flight bound", map[string]string{"REQLOG_PROXY_UPSTREAM": "http://app", "REQLOG_PROXY_MAX_IN_FLIGHT": "-1"}, nil, "REQLOG_PROXY_MAX_IN_FLIGHT", ""},
		{"remote reqlog without a key", map[string]string{"REQLOG_PROXY_UPSTREAM": "http://app", "REQLOG_PROXY_REQLOG_URL": "http://logs:8080"}, nil, "REQLOG_PROXY_API_KEY", ""},
		{"no OTLP spans", map[string]string{"REQLOG_OTLP_MAX_SPANS": "0"}, nil, "REQLOG_OTLP_MAX_SPANS", ""},
		{"OTLP body limit with unit", map[string]string{"REQLOG_OTLP_MAX_BODY_BYTES": "16MB"}, nil, "REQLOG_OTLP_MAX_BODY_BYTES", ""},
		{"evaluation interval not dividing an hour", map[string]string{"REQLOG_ALERTS_EVALUATION_INTERVAL": "7m"}, nil, "REQLOG_ALERTS_EVALUATION_INTERVAL", ""},
		{"alert poll over the interval", nil, []string{"-alerts-poll-interval", "2m"}, "REQLOG_ALERTS_POLL_INTERVAL", ""},
		{"zero webhook timeout", map[string]string{"REQLOG_ALERTS_WEBHOOK_TIMEOUT": "0s"}, nil, "REQLOG_ALERTS_WEBHOOK_TIMEOUT", ""},
		{"delivery lease under the webhook timeout", map[string]string{"REQLOG_ALERTS_DELIVERY_LEASE": "5s"}, nil, "REQLOG_ALERTS_DELIVERY_LEASE", ""},
		{"no delivery concurrency", map[string]string{"REQLOG_ALERTS_DELIVERY_CONCURRENCY": "0"}, nil, "REQLOG_ALERTS_DELIVERY_CONCURRENCY", ""},
		{"portal link for a month", map[string]string{"REQLOG_ALERTS_PORTAL_LINK_TTL": "30d"}, nil, "REQLOG_ALERTS_PORTAL_LINK_TTL", ""},
		{"allow private webhooks syntax", map[string]string{"REQLOG_ALERTS_ALLOW_PRIVATE_WEBHOOKS": "yes please"}, nil, "REQLOG_ALERTS_ALLOW_PRIVATE_WEBHOOKS", ""},
		{"missing config file", map[string]string{configFileEnv: "/nonexistent/reqlog.yaml"}, nil, configFileEnv, ""},
		{"config file syntax", map[string]string{configFileEnv: writeFile(t, "retention: [1d\n")}, nil, configFileEnv, ""},
		{"unknown key in file", map[string]string{configFileEnv: writeFile(t, "retenton: 1d\n")}, nil, configFileEnv, ""},
		{"key twice in file", map[string]string{configFileEnv: writeFile(t, "retention: 1d\nretention: 2d\n")}, nil, configFileEnv, ""},
		{"nested value in file", map[string]string{configFileEnv: writeFile(t, "retention:\n  days: 1\n")}, nil, configFileEnv, ""},
		{"bad value in file", map[string]string{configFileEnv: writeFile(t, "max_batch: lots\n")}, nil, "REQLOG_MAX_BATCH", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(tc.args, envOf(tc.env))
			var cfgErr *app.ConfigError
			if !errors.As(err, &cfgErr) {
				t.Fatalf("LoadConfig = %v, want a *app.ConfigError", err)
			}
			if cfgErr.Setting != tc.setting {
				t.Errorf("error names %s, want %s: %v", cfgErr.Setting, tc.setting, err)
			}
			if !strings.Contains(err.Error(), tc.setting) {
				t.Errorf("message %q does not name %s", err, tc.setting)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("message %q repeats the key", err)
			}
		})
	}
}

func TestInvalidValueIsQuotedUnlessSecret(t *testing.T) {
	_, err := loadConfig([]string{"-retention", "forever"}, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), `"forever"`) || !strings.Contains(err.Error(), "-retention") {
		t.Errorf("message %v should quote the value and name the flag it came from", err)
	}
	_, err = loadConfig(nil, envOf(map[string]string{"REQLOG_STORE": "mongodb", "REQLOG_ELASTICSEARCH_PASSWORD": "hunter2"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("message %v", err)
	}
}

func TestCommandLineErrors(t *testing.T) {
	if _, err := loadConfig([]string{"-h"}, envOf(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	for _, args := range [][]string{{"-no-such-flag"}, {"extra-argument"}} {
		if _, err := loadConfig(args, envOf(nil)); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	usage := configUsage()
	for _, want := range []string{"-visibility-delay", "REQLOG_VISIBILITY_DELAY", "REQLOG_ELASTICSEARCH_API_KEY", "-elasticsearch-max-request-bytes", configFileEnv} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks %s", want)
		}
	}
}

func TestInvalidGroupCommitSettingsNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ env, value string }{
		{"REQLOG_GROUP_COMMIT", "maybe"},
		{"REQLOG_GROUP_COMMIT_MAX_MESSAGES", "0"},
		{"REQLOG_GROUP_COMMIT_MAX_MESSAGES", "many"},
		{"REQLOG_GROUP_COMMIT_MAX_BYTES", "-1"},
		{"REQLOG_GROUP_COMMIT_LINGER", "-1ms"},
		{"REQLOG_GROUP_COMMIT_LINGER", "5s"},
		{"REQLOG_GROUP_COMMIT_MAX_WAIT", "-1s"},
		{"REQLOG_GROUP_COMMIT_WRITERS", "0"},
		{"REQLOG_GROUP_COMMIT_WRITERS", "100000"},
		{"REQLOG_GROUP_COMMIT_QUEUE_MESSAGES", "0"},
		{"REQLOG_GROUP_COMMIT_QUEUE_BYTES", "0"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			_, err := loadConfig(nil, envOf(map[string]string{tc.env: tc.value}))
			var cfgErr *app.ConfigError
			if !errors.As(err, &cfgErr) || cfgErr.Setting != tc.env || cfgErr.Value != tc.value {
				t.Errorf("loadConfig: %v, want a ConfigError naming %s and %q", err, tc.env, tc.value)
			}
		})
	}
}
