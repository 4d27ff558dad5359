package main

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/app"
)

// stores maps REQLOG_STORE to the module that provides ports.MessageStore, with
// the store's own configuration taken from app.Config.
var stores = map[string]fx.Option{
	app.StoreMemory: memory.Module,
	app.StoreMongoDB: fx.Options(mongo.Module, fx.Provide(func(c app.Config) mongo.Config {
		return mongo.Config{URI: c.MongoDB.URI, Database: c.MongoDB.Database}
	})),
	app.StoreElasticsearch: fx.Options(elastic.Module, fx.Provide(elasticConfig)),
}

// elasticConfig is the Elasticsearch store's configuration; app.Config.Validate
// has refused a negative MaxRequestBytes, and 0 stays the store's default, and
// Replicas below 1.
func elasticConfig(c app.Config) elastic.Config {
	es := c.Elasticsearch
	return elastic.Config{Addresses: es.Addresses, Username: es.Username, Password: es.Password,
		APIKey: es.APIKey, IndexPrefix: es.IndexPrefix, MaxRequestBytes: int(es.MaxRequestBytes), Replicas: es.Replicas}
}
