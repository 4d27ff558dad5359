package mongo_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongofx"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func TestModuleLifecycle(t *testing.T) {
	t.Parallel()
	uri, db := mongotest.NewDatabase(t)
	var store ports.MessageStore
	var concrete *mongo.Store
	app := fxtest.New(t,
		fx.Supply(mongo.Config{URI: uri, Database: db}),
		mongofx.Module,
		fx.Populate(&store, &concrete),
	)
	app.RequireStart()
	if store != concrete {
		t.Error("the module's ports.MessageStore and *Store are not the same store")
	}
	health, ok := store.(ports.HealthChecker)
	if !ok {
		t.Fatal("the store is not a ports.HealthChecker")
	}
	if err := health.Ping(opCtx(t)); err != nil {
		t.Errorf("Ping after start: %v", err)
	}
	m := newMessage(t, time.Now())
	if err := store.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Get(opCtx(t), scope, m.ID, m.VisibleAt); err != nil || got.ID != m.ID {
		t.Errorf("Get = %q, %v", got.ID, err)
	}
	app.RequireStop()
	if err := health.Ping(opCtx(t)); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Ping after stop = %v, want ErrUnavailable (disconnected)", err)
	}
}

func TestModuleRefusesBadConfigBeforeStart(t *testing.T) {
	t.Parallel()
	app := fx.New(fx.NopLogger, fx.Supply(mongo.Config{}), mongofx.Module, fx.Invoke(func(ports.MessageStore) {}))
	if app.Err() == nil {
		t.Error("fx.New with an empty Config succeeded, want a configuration error")
	}
}

func TestModuleStartFailsWithoutServer(t *testing.T) {
	t.Parallel()
	app := fx.New(fx.NopLogger,
		fx.Supply(mongo.Config{URI: closedPort(t), ServerSelectionTimeout: 500 * time.Millisecond}),
		mongofx.Module, fx.Invoke(func(ports.MessageStore) {}))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(opCtx(t)); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Start without a server = %v, want ErrUnavailable", err)
	}
}

// A URI the driver refuses is reported without what the driver quotes from it:
// a bad escape in a password, or an option's value, may be part of a secret.
func TestBadURIReasonQuotesNoSecret(t *testing.T) {
	t.Parallel()
	for uri, want := range map[string]string{
		"mongodb://app:Xy%Q7secret@db.example:27017":                         "invalid password",
		"mongodb://u:p@db.example/?connectTimeoutMS=Q7secret":                `"connectTimeoutMS"`,
		"mongodb://a:b/Q7secret@db":                                          "unescaped slash in password",
		`mongodb://db.example/?connectTimeoutMS=ab"Q7secret`:                 `"connectTimeoutMS"`,
		"mongodb://db.example/?tlsCertificateKeyFilePassword=x%zz\"Q7secret": "invalid",
		"mongodb://user:SE:CRETQ7":                                           "too many colons",
		"mongodb://app:p%3AssQ7":                                             "too many colons",
		"mongodb+srv://app:p%3AssQ7":                                         "invalid",
		"mongodb://app:Q7sec%40ret:x":                                        "invalid",
		"mongodb://app:%5BQ7secret":                                          "invalid",
		"mongodb://app:Q7+se:cret":                                           "invalid",
		"mongodb://app:SE:CRETQ7,db2":                                        "invalid",
		"mongodb://app:SE:CRETQ7,db2:27017":                                  "invalid",
	} {
		app := fx.New(fx.NopLogger, fx.Supply(mongo.Config{URI: uri}), mongofx.Module, fx.Invoke(func(ports.MessageStore) {}))
		err := app.Err()
		if err == nil {
			t.Errorf("%s: accepted", uri)
			continue
		}
		if strings.Contains(err.Error(), "Q7") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q in it and nothing of the URI's secret", uri, err, want)
		}
	}
}
