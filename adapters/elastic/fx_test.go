package elastic_test

import (
	"net/http"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/elasticfx"
	"github.com/reqlog/reqlog/ports"
)

func TestModuleProvidesTheStore(t *testing.T) {
	cfg := testConfig(t)
	var (
		store  ports.MessageStore
		health ports.HealthChecker
		self   *elastic.Store
	)
	app := fxtest.New(t, fx.NopLogger, elasticfx.Module, fx.Supply(cfg), fx.Populate(&store, &health, &self))
	app.RequireStart()
	if store != ports.MessageStore(self) || health != ports.HealthChecker(self) {
		t.Errorf("the module provides %T and %T, want the one *elastic.Store %p", store, health, self)
	}
	// Start installed the template.
	newCluster(t).must(http.MethodGet, "/_index_template/"+cfg.IndexPrefix+"-messages", nil, nil)
	// and created the indices of today and tomorrow (UTC), their primaries active.
	now := time.Now()
	for _, day := range []time.Time{now, now.AddDate(0, 0, 1)} {
		index := cfg.IndexPrefix + "-messages-" + day.UTC().Format("2006.01.02")
		newCluster(t).must(http.MethodGet, "/_cluster/health/"+index+"?wait_for_status=yellow&timeout=1s", nil, nil)
	}
	if err := health.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	app.RequireStop()
}

func TestModuleRefusesBadConfig(t *testing.T) {
	app := fx.New(fx.NopLogger, elasticfx.Module, fx.Supply(elastic.Config{}), fx.Invoke(func(ports.MessageStore) {}))
	if app.Err() == nil {
		t.Error("the module accepted a configuration without addresses")
	}
}
