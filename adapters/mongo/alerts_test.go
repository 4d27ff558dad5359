package mongo_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongofx"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// Every subtest gets a fresh database, dropped after it.
func TestAlertStoreConformance(t *testing.T) {
	conformance.RunAlertStoreTests(t, func(ctx context.Context, t *testing.T) (ports.AlertStore, error) {
		s, err := openStore(ctx, t)
		if err != nil {
			return nil, err
		}
		return mongo.NewAlertStore(ctx, s)
	})
}

// Every subtest gets a fresh database, dropped after it.
func TestRuleSetStoreConformance(t *testing.T) {
	conformance.RunRuleSetStoreTests(t, func(ctx context.Context, t *testing.T) (ports.RuleSetStore, error) {
		s, err := openStore(ctx, t)
		if err != nil {
			return nil, err
		}
		return mongo.NewAlertStore(ctx, s)
	})
}

func TestErasureJournalConformance(t *testing.T) {
	conformance.RunErasureJournalTests(t, func(ctx context.Context, t *testing.T) (ports.ErasureJournal, error) {
		s, err := openStore(ctx, t)
		if err != nil {
			return nil, err
		}
		return mongo.NewAlertStore(ctx, s)
	})
}

// storeWithAlerts is a message store that keeps alert rules too, as the
// service runs it: the HTTP suite then runs alerting on MongoDB.
type storeWithAlerts struct {
	*mongo.Store
	*mongo.AlertStore
}

// The HTTP suite runs alerting and rule sets on the store's own, not on
// memory stores (httpapitest.Fallbacks).
var (
	_ ports.AlertStore   = storeWithAlerts{}
	_ ports.RuleSetStore = storeWithAlerts{}
)

func alertingStoreMaker(tweaks ...func(*mongo.Config)) conformance.StoreMaker {
	return func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		s, err := openStore(ctx, t, tweaks...)
		if err != nil {
			return nil, err
		}
		a, err := mongo.NewAlertStore(ctx, s)
		if err != nil {
			return nil, err
		}
		return storeWithAlerts{s, a}, nil
	}
}

// AlertModule provides an alert store on the started store's database, its
// indexes made on start.
func TestAlertModule(t *testing.T) {
	uri, db := mongotest.NewDatabase(t)
	var alerts ports.AlertStore
	app := fxtest.New(t, fx.Supply(mongo.Config{URI: uri, Database: db}), mongofx.Module, mongofx.AlertModule, fx.Populate(&alerts))
	app.RequireStart()
	defer app.RequireStop()
	r := alerting.DefaultRule()
	r.ID, r.Scope, r.Metric, r.CreatedAt = "alr_0123456789abcdef", scope, alerting.MetricErrorRate, time.Now().UTC().Truncate(time.Microsecond)
	if err := alerts.CreateRule(opCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if got, err := alerts.Rules(opCtx(t), scope); err != nil || len(got) != 1 || got[0].ID != r.ID {
		t.Errorf("Rules = %+v, %v", got, err)
	}
}

// Every subtest gets a fresh database, dropped after it.
func TestRescrubJobStoreConformance(t *testing.T) {
	conformance.RunRescrubJobStoreTests(t, func(ctx context.Context, t *testing.T) (ports.RescrubJobStore, error) {
		s, err := openStore(ctx, t)
		if err != nil {
			return nil, err
		}
		return mongo.NewAlertStore(ctx, s)
	})
}
