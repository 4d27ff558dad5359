package sqlite_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitefx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// openAlertStore opens the alert store in s's directory, closed when t ends
// (before s, whose cleanup was registered first).
func openAlertStore(ctx context.Context, t *testing.T, s *sqlite.Store) (*sqlite.AlertStore, error) {
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

// storeWithAlerts is a message store that keeps alert rules too, as the
// service runs it: the HTTP suite then runs alerting on SQLite.
type storeWithAlerts struct {
	*sqlite.Store
	*sqlite.AlertStore
}

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
