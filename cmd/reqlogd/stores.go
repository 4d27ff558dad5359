package main

import (
	"fmt"
	"strings"

	"go.uber.org/fx"

	"github.com/reqlog/reqlog/adapters/elastic/elasticfx"
	"github.com/reqlog/reqlog/adapters/memory/memoryfx"
	"github.com/reqlog/reqlog/adapters/mongo/mongofx"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitefx"
	"github.com/reqlog/reqlog/app"
)

// Store names REQLOG_STORE accepts.
const (
	storeSQLite        = "sqlite"
	storeMemory        = "memory"
	storeMongoDB       = "mongodb"
	storeElasticsearch = "elasticsearch"
)

// storeEntry is one storage backend reqlogd offers: everything reqlogd says
// of a store is here, and docs/contributing.md lists what lives elsewhere
// (settings rows, the chart, the load tool).
type storeEntry struct {
	name  string
	about string // REQLOG_STORE's help for it
	// modules provide ports.MessageStore and, where the store keeps alert
	// rules and the accounts' rule sets, ports.AlertStore and
	// ports.RuleSetStore; each reads its own Config from the graph.
	modules fx.Option
	// requires names a setting the store cannot run without and says why,
	// or returns "" when the settings hold what it needs.
	requires func(c *config) (key, reason string)
	// dataDir is where the store keeps its files on this machine, which
	// also keeps the secrets reqlogd generates; nil for none.
	dataDir func(c *config) string
}

// storeRegistry lists the stores, the default first.
var storeRegistry = []storeEntry{
	{name: storeSQLite, about: "a directory of files, see sqlite.dir",
		modules: fx.Options(sqlitefx.Module, sqlitefx.AlertModule),
		dataDir: func(c *config) string { return c.SQLite.Dir }},
	{name: storeMemory, about: "lost on restart",
		modules: fx.Options(memoryfx.Module, memoryfx.AlertModule)},
	{name: storeMongoDB, about: "see mongodb.uri",
		modules: fx.Options(mongofx.Module, mongofx.AlertModule),
		requires: func(c *config) (string, string) {
			if c.MongoDB.URI == "" {
				return "mongodb.uri", "is required with REQLOG_STORE=mongodb"
			}
			return "", ""
		}},
	{name: storeElasticsearch, about: "see elasticsearch.url",
		modules: fx.Options(elasticfx.Module, elasticfx.AlertModule),
		requires: func(c *config) (string, string) {
			if len(c.Elasticsearch.Addresses) == 0 {
				return "elasticsearch.url", "is required with REQLOG_STORE=elasticsearch"
			}
			return "", ""
		}},
}

// storeNamed returns the registry's entry of name.
func storeNamed(registry []storeEntry, name string) (storeEntry, bool) {
	for _, e := range registry {
		if e.name == name {
			return e, true
		}
	}
	return storeEntry{}, false
}

// storeNames is the registry's names, for messages: "sqlite, memory, mongodb or elasticsearch".
func storeNames(registry []storeEntry) string {
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.name
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// storeHelp is REQLOG_STORE's help: each store with what it is.
func storeHelp(registry []storeEntry) string {
	parts := make([]string, len(registry))
	for i, e := range registry {
		parts[i] = fmt.Sprintf("%s (%s)", e.name, e.about)
	}
	return "storage backend: " + strings.Join(parts, ", ")
}

// storeModule returns the modules of the store named, or a configuration
// error when this build has no such store.
func storeModule(name string, registry []storeEntry) (fx.Option, error) {
	if e, ok := storeNamed(registry, name); ok {
		return e.modules, nil
	}
	return nil, &app.ConfigError{Setting: "REQLOG_STORE", Value: name,
		Reason: fmt.Sprintf("store %s is not available in this build", name)}
}
