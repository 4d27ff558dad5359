package elastic_test

import (
	"net/http"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/ports"
)

func TestModuleProvidesTheStore(t *testing.T) {
	cfg := testConfig(t)
	var (
		store  ports.MessageStore
		health ports.HealthChecker
		self   *elastic.Store
	)
	app := fxtest.New(t, fx.NopLogger, elastic.Module, fx.Supply(cfg), fx.Populate(&store, &health, &self))
	app.RequireStart()
	if store != ports.MessageStore(self) || health != ports.HealthChecker(self) {
		t.Errorf("the module provides %T and %T, want the one *elastic.Store %p", store, health, self)
	}
	// Start installed the template.
	newCluster(t).must(http.MethodGet, "/_index_template/"+cfg.IndexPrefix+"-messages", nil, nil)
	if err := health.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	app.RequireStop()
}

func TestModuleRefusesBadConfig(t *testing.T) {
	app := fx.New(fx.NopLogger, elastic.Module, fx.Supply(elastic.Config{}), fx.Invoke(func(ports.MessageStore) {}))
	if app.Err() == nil {
		t.Error("the module accepted a configuration without addresses")
	}
}
