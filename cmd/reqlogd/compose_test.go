package main

import (
	"reflect"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/otlp"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
)

// The graph gives each part the Config the settings made: read back from a
// graph built (not started) on the Elasticsearch store.
func TestEachPartGetsItsConfigFromTheSettings(t *testing.T) {
	cfg, err := loadConfig([]string{"-addr", "127.0.0.1:9999", "-max-body-bytes", "1234", "-rate-limit", "2.5", "-rate-burst", "7"},
		envOf(map[string]string{
			"REQLOG_STORE":                           storeElasticsearch,
			"REQLOG_API_KEYS":                        "acme:live:rk_compose_test_key",
			"REQLOG_VISIBILITY_DELAY":                "3s",
			"REQLOG_PORTAL_SECRET":                   "a-portal-secret-of-at-least-32-bytes",
			"REQLOG_PUBLIC_URL":                      "https://logs.example.com",
			"REQLOG_MONGODB_DATABASE":                "logs",
			"REQLOG_ELASTICSEARCH_URL":               "http://a:9200,http://b:9200",
			"REQLOG_ELASTICSEARCH_USERNAME":          "elastic",
			"REQLOG_ELASTICSEARCH_PASSWORD":          "pw",
			"REQLOG_ELASTICSEARCH_INDEX_PREFIX":      "logs",
			"REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES": "1048576",
			"REQLOG_ELASTICSEARCH_REPLICAS":          "2",
			"REQLOG_EXPORTS_PER_KEY":                 "5",
		}))
	if err != nil {
		t.Fatal(err)
	}
	graph, err := options(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var (
		appCfg  app.Config
		httpCfg httpapi.Config
		keys    keyring.Config
		site    portal.Config
		mongoDB mongo.Config
		es      elastic.Config
		traces  otlp.Config
	)
	if err := fx.New(fx.NopLogger, graph, fx.Populate(&appCfg, &httpCfg, &keys, &site, &mongoDB, &es, &traces)).Err(); err != nil {
		t.Fatal(err)
	}
	if traces.MaxMessageBytes != 1234 {
		t.Errorf("otlp.Config.MaxMessageBytes %d, want REQLOG_MAX_BODY_BYTES, 1234", traces.MaxMessageBytes)
	}
	exports := httpapi.DefaultExportLimits()
	exports.PerKey = 5
	if want := (httpapi.Config{Addr: "127.0.0.1:9999", MaxBodyBytes: 1234, RateLimit: 2.5, RateBurst: 7, Exports: exports}); httpCfg != want {
		t.Errorf("httpapi.Config %+v, want %+v", httpCfg, want)
	}
	want := elastic.DefaultConfig()
	want.Addresses, want.Username, want.Password = []string{"http://a:9200", "http://b:9200"}, "elastic", "pw"
	want.IndexPrefix, want.MaxRequestBytes, want.Replicas = "logs", 1<<20, 2
	if !reflect.DeepEqual(es, want) {
		t.Errorf("elastic.Config %+v, want %+v", es, want)
	}
	for name, pair := range map[string][2]any{
		"app":     {appCfg, cfg.App},
		"keyring": {keys, cfg.Keyring},
		"portal":  {site, cfg.Portal},
		"mongo":   {mongoDB, cfg.MongoDB},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("the graph's %s config %+v, want the settings' %+v", name, pair[0], pair[1])
		}
	}
	if appCfg.VisibilityDelay != 3*time.Second || len(keys.Keys) != 1 || site.PublicURL != "https://logs.example.com" || mongoDB.Database != "logs" {
		t.Errorf("settings not applied: %+v, %+v, %+v, %+v", appCfg, keys, site, mongoDB)
	}
}
