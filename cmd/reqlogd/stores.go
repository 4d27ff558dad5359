package main

import (
	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/sqlite"
)

// stores maps REQLOG_STORE to the module that provides ports.MessageStore; each
// reads its own Config (sqlite.Config, mongo.Config, elastic.Config) from the graph.
var stores = map[string]fx.Option{
	storeSQLite:        sqlite.Module,
	storeMemory:        memory.Module,
	storeMongoDB:       mongo.Module,
	storeElasticsearch: elastic.Module,
}
