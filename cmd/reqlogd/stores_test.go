package main

import (
	"reflect"
	"testing"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/app"
)

func TestElasticConfigFollowsTheSettings(t *testing.T) {
	cfg, err := app.LoadConfig(nil, envOf(map[string]string{
		"REQLOG_STORE":                           app.StoreElasticsearch,
		"REQLOG_ELASTICSEARCH_URL":               "http://a:9200,http://b:9200",
		"REQLOG_ELASTICSEARCH_USERNAME":          "elastic",
		"REQLOG_ELASTICSEARCH_PASSWORD":          "pw",
		"REQLOG_ELASTICSEARCH_INDEX_PREFIX":      "logs",
		"REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES": "1048576",
		"REQLOG_ELASTICSEARCH_REPLICAS":          "2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := elastic.Config{Addresses: []string{"http://a:9200", "http://b:9200"}, Username: "elastic", Password: "pw",
		IndexPrefix: "logs", MaxRequestBytes: 1 << 20, Replicas: 2}
	if got := elasticConfig(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("elastic.Config %+v, want %+v", got, want)
	}
}

// app cannot import the adapter, so its defaults are checked against the
// adapter's here.
func TestElasticDefaultsMatchTheStore(t *testing.T) {
	got := elasticConfig(app.DefaultConfig())
	if got.MaxRequestBytes != elastic.DefaultMaxRequestBytes {
		t.Errorf("default REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES %d, the store's default is %d", got.MaxRequestBytes, elastic.DefaultMaxRequestBytes)
	}
	if got.IndexPrefix != elastic.DefaultIndexPrefix {
		t.Errorf("default REQLOG_ELASTICSEARCH_INDEX_PREFIX %q, the store's default is %q", got.IndexPrefix, elastic.DefaultIndexPrefix)
	}
	if got.Replicas != elastic.DefaultReplicas {
		t.Errorf("default REQLOG_ELASTICSEARCH_REPLICAS %d, the store's default is %d", got.Replicas, elastic.DefaultReplicas)
	}
}
