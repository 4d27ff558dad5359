package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitefx"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
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

// The module's store before its start hook opened the directory is a closed
// one: a write is refused as unavailable, a read finds nothing, and none
// panics.
func TestModuleStoreBeforeStartIsClosed(t *testing.T) {
	var store ports.MessageStore
	fxtest.New(t, fx.NopLogger, sqlitefx.Module, fx.Supply(sqlite.Config{Dir: t.TempDir()}), fx.Populate(&store))
	now := time.Now()
	if err := store.Append(opCtx(t), []domain.Message{newMessage(t, now, 10)}); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Append before start: %v; want ErrUnavailable", err)
	}
	if page, err := store.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, now); err != nil || len(page.Messages) != 0 {
		t.Errorf("List before start: %d messages, %v", len(page.Messages), err)
	}
	q, err := stats.ParseQuery(map[string][]string{}, now)
	if err != nil {
		t.Fatal(err)
	}
	q.Scope = scope
	if st, err := store.Stats(opCtx(t), q, now); err != nil || st.Total.Count != 0 {
		t.Errorf("Stats before start: %d counted, %v", st.Total.Count, err)
	}
}
