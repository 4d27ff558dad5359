package app_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/app/appfx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func appGraph(store ports.MessageStore, cfg app.Config, populate ...any) fx.Option {
	return fx.Options(
		fx.NopLogger,
		appfx.Module,
		fx.Supply(cfg, zap.NewNop()),
		fx.Provide(func() ports.MessageStore { return store }),
		fx.Populate(populate...),
	)
}

func TestModuleWiresUseCasesAndPurgeJob(t *testing.T) {
	store := &recordingStore{}
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	var (
		ingester *app.Ingester
		reader   *app.Reader
		policy   domain.Policy
	)
	svc := fxtest.New(t, appGraph(store, cfg, &ingester, &reader, &policy))
	svc.RequireStart()
	conformance.WaitFor(t, "the purge job's first run", func() bool { return store.purgeCount() > 0 })

	if policy.VisibilityDelay != 0 || policy.Sniff == nil {
		t.Errorf("policy %+v does not come from the config", policy)
	}
	body := strings.Replace(submitted, "1714564800", strconv.FormatInt(time.Now().Unix(), 10), 1)
	res, err := ingester.Submit(context.Background(), acmeLive, draftsOf(body), "")
	if err != nil || len(store.appended) != 1 {
		t.Fatalf("Submit = %+v, %v; %d stored", res, err, len(store.appended))
	}
	// The system clock: the message was stored just now.
	if age := time.Since(store.appended[0].UpdatedAt); age < 0 || age > time.Minute {
		t.Errorf("updated_at %s is not the system time", store.appended[0].UpdatedAt)
	}
	if _, err := reader.List(context.Background(), acmeLive, domain.Query{}); err != nil || len(store.queries) != 1 {
		t.Errorf("List: %v, %d store queries", err, len(store.queries))
	}
	svc.RequireStop()
}

func TestModuleRefusesAStoreThatLagsTheVisibilityDelay(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = time.Second
	svc := fx.New(appGraph(&recordingStore{readLag: 2 * time.Second}, cfg))
	var cfgErr *app.ConfigError
	if err := svc.Err(); !errors.As(err, &cfgErr) || cfgErr.Setting != "REQLOG_VISIBILITY_DELAY" {
		t.Fatalf("start-up error %v, want one naming REQLOG_VISIBILITY_DELAY", err)
	}
}
