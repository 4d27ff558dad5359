package elastic_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/elasticfx"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// openAlertStore is an alert store on a fresh index prefix, whose alert indices
// are deleted when t ends.
func openAlertStore(ctx context.Context, t *testing.T, s *elastic.Store, cfg elastic.Config) (*elastic.AlertStore, error) {
	t.Helper()
	c := newCluster(t)
	t.Cleanup(func() {
		if names := c.indices(cfg.IndexPrefix + "-alert-*"); len(names) > 0 {
			c.must(http.MethodDelete, "/"+strings.Join(names, ","), nil, nil)
		}
	})
	return elastic.NewAlertStore(ctx, s)
}

func TestAlertStoreConformance(t *testing.T) {
	conformance.RunAlertStoreTests(t, func(ctx context.Context, t *testing.T) (ports.AlertStore, error) {
		cfg := testConfig(t)
		return openAlertStore(ctx, t, openStore(ctx, t, cfg), cfg)
	})
}

func TestRuleSetStoreConformance(t *testing.T) {
	conformance.RunRuleSetStoreTests(t, func(ctx context.Context, t *testing.T) (ports.RuleSetStore, error) {
		cfg := testConfig(t)
		return openAlertStore(ctx, t, openStore(ctx, t, cfg), cfg)
	})
}

func TestErasureJournalConformance(t *testing.T) {
	conformance.RunErasureJournalTests(t, func(ctx context.Context, t *testing.T) (ports.ErasureJournal, error) {
		cfg := testConfig(t)
		return openAlertStore(ctx, t, openStore(ctx, t, cfg), cfg)
	})
}

// storeWithAlerts is a message store that keeps alert rules too, as the
// service runs it: the HTTP suite then runs alerting on Elasticsearch.
type storeWithAlerts struct {
	*elastic.Store
	*elastic.AlertStore
}

// The HTTP suite runs alerting and rule sets on the store's own, not on
// memory stores (httpapitest.Fallbacks).
var (
	_ ports.AlertStore     = storeWithAlerts{}
	_ ports.RuleSetStore   = storeWithAlerts{}
	_ ports.Eraser         = storeWithAlerts{}
	_ ports.ErasureJournal = storeWithAlerts{}
)

func alertingStoreMaker(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
	cfg := testConfig(t)
	s := openStore(ctx, t, cfg)
	a, err := openAlertStore(ctx, t, s, cfg)
	if err != nil {
		return nil, err
	}
	return storeWithAlerts{s, a}, nil
}

// AlertModule provides an alert store on the started store's cluster and
// prefix, its indices made on start.
func TestAlertModule(t *testing.T) {
	cfg := testConfig(t)
	c := newCluster(t)
	t.Cleanup(func() {
		if names := c.indices(cfg.IndexPrefix + "-alert-*"); len(names) > 0 {
			c.must(http.MethodDelete, "/"+strings.Join(names, ","), nil, nil)
		}
	})
	cfg.WarmUp = -time.Second // not what this is about
	var alerts ports.AlertStore
	var journal ports.ErasureJournal
	app := fxtest.New(t, fx.Supply(cfg), elasticfx.Module, elasticfx.AlertModule, fx.Populate(&alerts, &journal), fx.StartTimeout(time.Minute))
	app.RequireStart()
	defer app.RequireStop()
	r := alerting.DefaultRule()
	r.ID, r.Scope, r.Metric, r.CreatedAt = "alr_0123456789abcdef", scope, alerting.MetricErrorRate, time.Now().UTC().Truncate(time.Microsecond)
	if err := alerts.CreateRule(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if got, err := alerts.Rules(t.Context(), scope); err != nil || len(got) != 1 || got[0].ID != r.ID {
		t.Errorf("Rules = %+v, %v", got, err)
	}
	// The journal of erasures is there too, for the erasure endpoints.
	e := erasure.Erasure{ID: "0193a0c4-0000-7000-8000-000000000001", Account: scope.Account, State: erasure.StateHidden, At: r.CreatedAt}
	if err := journal.SaveErasure(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if got, err := journal.Erasure(t.Context(), e.Account, e.ID); err != nil || got.State != e.State {
		t.Errorf("Erasure = %+v, %v", got, err)
	}
}

func TestRescrubJobStoreConformance(t *testing.T) {
	conformance.RunRescrubJobStoreTests(t, func(ctx context.Context, t *testing.T) (ports.RescrubJobStore, error) {
		cfg := testConfig(t)
		return openAlertStore(ctx, t, openStore(ctx, t, cfg), cfg)
	})
}

// An index of re-scrub jobs made before jobs had a kind (its strict mapping
// without the field) is given it at start: a backfill's job, of kind
// subjects, is then written and read back, and the jobs of before read as
// re-scrubs.
func TestARescrubJobsIndexOfBeforeKindsGainsTheField(t *testing.T) {
	ctx := t.Context()
	cfg := testConfig(t)
	c := newCluster(t)
	index := cfg.IndexPrefix + "-alert-rescrub-jobs"
	t.Cleanup(func() {
		if names := c.indices(cfg.IndexPrefix + "-alert-*"); len(names) > 0 {
			c.must(http.MethodDelete, "/"+strings.Join(names, ","), nil, nil)
		}
	})
	keyword, long := map[string]any{"type": "keyword"}, map[string]any{"type": "long"}
	kept := map[string]any{"type": "keyword", "index": false, "doc_values": false}
	before := map[string]any{"account": keyword, "number": long, "version": long, "from": long, "to": long,
		"applications": map[string]any{"type": "object", "enabled": false}, "key_id": kept, "state": keyword,
		"cursor_domain": kept, "cursor_at": long, "cursor_id": kept, "scanned": long, "changed": long, "skipped": long,
		"error": kept, "created_at": long, "updated_at": long, "finished_at": long, "owner": kept, "lease_until": long, "revision": long}
	c.must(http.MethodPut, "/"+index, map[string]any{"mappings": map[string]any{"dynamic": "strict", "properties": before}}, nil)
	old := map[string]any{"account": "acme", "number": 1, "version": 1, "state": "done", "revision": 2}
	c.must(http.MethodPut, "/"+index+"/_doc/acme:1?refresh=true", old, nil)

	alerts, err := elastic.NewAlertStore(ctx, openStore(ctx, t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	job, err := alerts.CreateRescrubJob(ctx, rules.RescrubJob{Account: "acme", Kind: rules.KindSubjects, Version: 1,
		From: time.Now().Add(-time.Hour), To: time.Now()})
	if err != nil {
		t.Fatalf("a backfill's job on the index of before: %v", err)
	}
	jobs, err := alerts.RescrubJobs(ctx, "acme", 10)
	if err != nil || len(jobs) != 2 || jobs[0].Number != job.Number || jobs[0].Kind != rules.KindSubjects || jobs[1].Kind != rules.KindRescrub {
		t.Errorf("the jobs = %+v, %v; want the backfill's (kind subjects), then the re-scrub of before", jobs, err)
	}
}
