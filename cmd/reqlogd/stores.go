package main

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/sqlite"
)

// stores maps REQLOG_STORE to the modules that provide ports.MessageStore and,
// where the store keeps alert rules, ports.AlertStore; each reads its own
// Config (sqlite.Config, mongo.Config, elastic.Config) from the graph.
var stores = map[string]fx.Option{
	storeSQLite:        fx.Options(sqlite.Module, sqlite.AlertModule),
	storeMemory:        fx.Options(memory.Module, memory.AlertModule),
	storeMongoDB:       fx.Options(mongo.Module, mongo.AlertModule),
	storeElasticsearch: fx.Options(elastic.Module, elastic.AlertModule),
}
