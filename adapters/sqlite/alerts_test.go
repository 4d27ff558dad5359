package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitefx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// openAlertStore opens the alert store in s's directory, closed when t ends
// (before s, whose cleanup was registered first).
func openAlertStore(ctx context.Context, t *testing.T, s *sqlite.Store) (*sqlitealert.AlertStore, error) {
	a, err := sqlite.NewAlertStore(ctx, s)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("closing the alert store: %v", err)
		}
	})
	return a, nil
}

// Every subtest gets a fresh data directory.
func TestAlertStoreConformance(t *testing.T) {
	conformance.RunAlertStoreTests(t, func(ctx context.Context, t *testing.T) (ports.AlertStore, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		return openAlertStore(ctx, t, s)
	})
}

// Every subtest gets a fresh data directory.
func TestRuleSetStoreConformance(t *testing.T) {
	conformance.RunRuleSetStoreTests(t, func(ctx context.Context, t *testing.T) (ports.RuleSetStore, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		return openAlertStore(ctx, t, s)
	})
}

func TestErasureJournalConformance(t *testing.T) {
	conformance.RunErasureJournalTests(t, func(ctx context.Context, t *testing.T) (ports.ErasureJournal, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		return openAlertStore(ctx, t, s)
	})
}

// storeWithAlerts is a message store that keeps alert rules too, as the
// service runs it: the HTTP suite then runs alerting on SQLite.
type storeWithAlerts struct {
	*sqlite.Store
	*sqlitealert.AlertStore
}

// The HTTP suite runs alerting and rule sets on the store's own, not on
// memory stores (httpapitest.Fallbacks).
var (
	_ ports.AlertStore   = storeWithAlerts{}
	_ ports.RuleSetStore = storeWithAlerts{}
)

func alertingStoreMaker() conformance.StoreMaker {
	return func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		a, err := openAlertStore(ctx, t, s)
		if err != nil {
			return nil, err
		}
		return storeWithAlerts{s, a}, nil
	}
}

// The alert file lives in the data directory through restarts: a rule
// created before a restart is there after it, and the message store still
// opens the directory (the file is not taken for a day file).
func TestAlertsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	start := func() (ports.AlertStore, *fxtest.App) {
		var alerts ports.AlertStore
		app := fxtest.New(t, fx.Supply(sqlite.Config{Dir: dir}), sqlitefx.Module, sqlitefx.AlertModule, fx.Populate(&alerts))
		app.RequireStart()
		return alerts, app
	}
	alerts, app := start()
	r := alerting.DefaultRule()
	r.ID, r.Metric, r.CreatedAt = "alr_0123456789abcdef", alerting.MetricErrorRate, time.Now().UTC().Truncate(time.Microsecond)
	r.Scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}
	if err := alerts.CreateRule(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	app.RequireStop()
	alerts, app = start()
	defer app.RequireStop()
	if got, err := alerts.Rules(t.Context(), r.Scope); err != nil || len(got) != 1 || got[0].ID != r.ID {
		t.Errorf("after a restart: %+v, %v", got, err)
	}
}

// An alert file of a reqlog before alert files had a schema version (its
// tables, no marks) opens with its records and is marked version 1; an
// alert file of a newer version is refused, naming it, and left as it was.
func TestAlertFileVersions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reqlog-alerts.sqlite")
	s := mustOpen(t, sqlite.Config{Dir: dir})
	a, err := sqlite.NewAlertStore(opCtx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	r := alerting.DefaultRule()
	r.ID, r.Metric, r.CreatedAt = "alr_0123456789abcdef", alerting.MetricErrorRate, time.Now().UTC().Truncate(time.Microsecond)
	r.Scope = scope
	if err := a.CreateRule(opCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// marks runs set on the file, then reads its application_id and
	// user_version.
	marks := func(set string) (app, version int) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(set); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT * FROM pragma_application_id, pragma_user_version").Scan(&app, &version); err != nil {
			t.Fatal(err)
		}
		return app, version
	}
	app, version := marks("")
	if app == 0 || version != 4 {
		t.Fatalf("a new alert file is marked %#x, version %d; want reqlog's mark, 4", app, version)
	}

	marks("PRAGMA application_id=0; PRAGMA user_version=0") // as a reqlog before versions wrote it
	a, err = openAlertStore(opCtx(t), t, s)
	if err != nil {
		t.Fatalf("an alert file without marks: %v", err)
	}
	if rules, err := a.Rules(opCtx(t), scope); err != nil || len(rules) != 1 || rules[0].ID != r.ID {
		t.Fatalf("its rules after opening: %+v, %v; want the one stored", rules, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if gotApp, gotVersion := marks(""); gotApp != app || gotVersion != 4 {
		t.Fatalf("an alert file without marks is marked %#x, version %d after opening; want %#x, 4", gotApp, gotVersion, app)
	}

	marks("PRAGMA user_version=5")
	before := snapshot(t, dir)
	_, err = sqlite.NewAlertStore(opCtx(t), s)
	wantNamed(t, err, path)
	if after := snapshot(t, dir); after != before {
		t.Errorf("a refused alert file changed the directory:\nbefore %s\nafter  %s", before, after)
	}
}

// Every subtest gets a fresh data directory.
func TestRescrubJobStoreConformance(t *testing.T) {
	conformance.RunRescrubJobStoreTests(t, func(ctx context.Context, t *testing.T) (ports.RescrubJobStore, error) {
		s, err := openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		return openAlertStore(ctx, t, s)
	})
}
