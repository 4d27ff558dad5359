package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitefx"
	"github.com/reqlog/reqlog/ports"
)

// The module opens the data directory on start, provides the store as
// ports.MessageStore, and releases the directory on stop.
func TestModuleOpensAndReleasesTheDirectory(t *testing.T) {
	dir := t.TempDir()
	var store ports.MessageStore
	app := fxtest.New(t, fx.NopLogger, sqlitefx.Module, fx.Supply(sqlite.Config{Dir: dir}), fx.Populate(&store))
	app.RequireStart()
	if _, err := os.Stat(filepath.Join(dir, "reqlog.lock")); err != nil {
		t.Fatalf("the directory was not opened on start: %v", err)
	}
	if _, err := sqlite.New(opCtx(t), sqlite.Config{Dir: dir}); err == nil {
		t.Fatal("a second store opened the directory the module holds")
	}
	app.RequireStop()
	mustOpen(t, sqlite.Config{Dir: dir}) // released
}
