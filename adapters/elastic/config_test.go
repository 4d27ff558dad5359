package elastic

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{Addresses: []string{"http://localhost:9200"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Addresses:       []string{"http://localhost:9200"},
		IndexPrefix:     DefaultIndexPrefix,
		RefreshInterval: DefaultRefreshInterval,
		RequestTimeout:  DefaultRequestTimeout,
		PingTimeout:     DefaultPingTimeout,
		ShardWait:       DefaultShardWait,
		DurabilityWait:  DefaultDurabilityWait,
		MaxRetries:      DefaultMaxRetries,
		MaxRequestBytes: DefaultMaxRequestBytes,
	}
	if cfg.IndexPrefix != want.IndexPrefix || cfg.RefreshInterval != want.RefreshInterval ||
		cfg.RequestTimeout != want.RequestTimeout || cfg.PingTimeout != want.PingTimeout || cfg.MaxRetries != want.MaxRetries ||
		cfg.MaxRequestBytes != want.MaxRequestBytes || cfg.ShardWait != want.ShardWait ||
		cfg.DurabilityWait != want.DurabilityWait {
		t.Errorf("defaults = %+v, want %+v", cfg, want)
	}
	if cfg.Shards != DefaultShards || DefaultConfig().Shards != DefaultShards {
		t.Errorf("shards %d, DefaultConfig's %d, want %d", cfg.Shards, DefaultConfig().Shards, DefaultShards)
	}
}

func TestConfigRoundsRefreshIntervalUp(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
	}{
		{250 * time.Millisecond, 250 * time.Millisecond},
		{1500 * time.Microsecond, 2 * time.Millisecond},
		{time.Nanosecond, time.Millisecond},
	} {
		cfg, err := Config{Addresses: []string{"http://es:9200"}, RefreshInterval: tc.in}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RefreshInterval != tc.want {
			t.Errorf("RefreshInterval %s became %s, want %s", tc.in, cfg.RefreshInterval, tc.want)
		}
	}
}

func TestConfigRefusals(t *testing.T) {
	ok := Config{Addresses: []string{"https://es.example:9200"}}
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		secret string // must not appear in the error
	}{
		{name: "no addresses", edit: func(c *Config) { c.Addresses = nil }},
		{name: "address without scheme", edit: func(c *Config) { c.Addresses = []string{"es:9200"} }},
		{name: "address of another scheme", edit: func(c *Config) { c.Addresses = []string{"ftp://es:9200"} }},
		{name: "address with a password and no host", edit: func(c *Config) { c.Addresses = []string{"http://user:hunter2@"} }, secret: "hunter2"},
		{name: "API key and password", edit: func(c *Config) { c.APIKey, c.Password = "key", "pw" }},
		{name: "upper-case prefix", edit: func(c *Config) { c.IndexPrefix = "Reqlog" }},
		{name: "prefix with a wildcard", edit: func(c *Config) { c.IndexPrefix = "req*" }},
		{name: "prefix starting with a dash", edit: func(c *Config) { c.IndexPrefix = "-reqlog" }},
		{name: "prefix of 65 characters", edit: func(c *Config) { c.IndexPrefix = strings.Repeat("a", 65) }},
		{name: "negative refresh interval", edit: func(c *Config) { c.RefreshInterval = -time.Second }},
		{name: "negative request timeout", edit: func(c *Config) { c.RequestTimeout = -time.Second }},
		{name: "negative ping timeout", edit: func(c *Config) { c.PingTimeout = -time.Second }},
		{name: "negative shard wait", edit: func(c *Config) { c.ShardWait = -time.Second }},
		{name: "negative durability wait", edit: func(c *Config) { c.DurabilityWait = -time.Second }},
		{name: "shard wait under a millisecond", edit: func(c *Config) { c.ShardWait = time.Microsecond }},
		{name: "negative replicas", edit: func(c *Config) { c.Replicas = -1 }},
		{name: "negative shards", edit: func(c *Config) { c.Shards = -1 }},
		{name: "more shards than Elasticsearch allows", edit: func(c *Config) { c.Shards = 1025 }},
		{name: "negative request size", edit: func(c *Config) { c.MaxRequestBytes = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, err := cfg.withDefaults()
			if err == nil {
				t.Fatalf("withDefaults(%+v) = nil error, want one", cfg)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error %q shows the password", err)
			}
		})
	}
	if _, err := ok.withDefaults(); err != nil {
		t.Errorf("the control configuration is refused: %v", err)
	}
}
