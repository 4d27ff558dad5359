package main

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/elastic/elasticfx"
	"github.com/reqlog/reqlog/adapters/memory/memoryfx"
	"github.com/reqlog/reqlog/adapters/mongo/mongofx"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitefx"
)

// stores maps REQLOG_STORE to the modules that provide ports.MessageStore and,
// where the store keeps alert rules, ports.AlertStore; each reads its own
// Config (sqlite.Config, mongo.Config, elastic.Config) from the graph.
var stores = map[string]fx.Option{
	storeSQLite:        fx.Options(sqlitefx.Module, sqlitefx.AlertModule),
	storeMemory:        fx.Options(memoryfx.Module, memoryfx.AlertModule),
	storeMongoDB:       fx.Options(mongofx.Module, mongofx.AlertModule),
	storeElasticsearch: fx.Options(elasticfx.Module, elasticfx.AlertModule),
}
