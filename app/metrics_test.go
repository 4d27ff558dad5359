package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// recordingMetrics keeps every observation.
type recordingMetrics struct {
	mu      sync.Mutex
	appends []int // batch sizes
	errors  []string
}

var _ app.Metrics = (*recordingMetrics)(nil)

func (m *recordingMetrics) ObserveAppend(size int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if took < 0 {
		panic("negative duration")
	}
	m.appends = append(m.appends, size)
}

func (m *recordingMetrics) ObserveStoreError(operation, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors = append(m.errors, operation+"/"+kind)
}

func (m *recordingMetrics) seen() (appends []int, errs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.appends), slices.Clone(m.errors)
}

func TestObserveWithoutMetricsIsTheStoreItself(t *testing.T) {
	store := &recordingStore{}
	if got := app.Observe(store, nil); got != ports.MessageStore(store) {
		t.Errorf("Observe(store, nil) = %T, want the store itself", got)
	}
}

func TestObserveReportsAppendsAndFailures(t *testing.T) {
	ctx := context.Background()
	scope := acmeLive.Scope
	for _, tc := range []struct {
		name       string
		err        error
		wantErrors []string
	}{
		{"success", nil, nil},
		{"outage", fmt.Errorf("dial: %w", ports.ErrUnavailable),
			[]string{"append/unavailable", "list/unavailable", "get/unavailable", "lookup/unavailable", "purge/unavailable"}},
		{"deadline", context.DeadlineExceeded,
			[]string{"append/unavailable", "list/unavailable", "get/unavailable", "lookup/unavailable", "purge/unavailable"}},
		{"busy", fmt.Errorf("elastic: %w", ports.ErrOverloaded),
			[]string{"append/overloaded", "list/overloaded", "get/overloaded", "lookup/overloaded", "purge/overloaded"}},
		{"caller gone", fmt.Errorf("mongo: %w", context.Canceled),
			[]string{"append/canceled", "list/canceled", "get/canceled", "lookup/canceled", "purge/canceled"}},
		{"bug", errors.New("boom"), []string{"append/other", "list/other", "get/other", "lookup/other", "purge/other"}},
		// Not finding a message is an answer, not a failure.
		{"not found", fmt.Errorf("get: %w", ports.ErrNotFound), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics := &recordingMetrics{}
			inner := &recordingStore{err: tc.err,
				purgeHook: func(context.Context) (int64, error) { return 0, tc.err }}
			store := app.Observe(inner, metrics)
			msgs := make([]domain.Message, 3)
			errs := []error{store.Append(ctx, msgs)}
			_, err := store.List(ctx, domain.Query{Scope: scope}, testNow)
			errs = append(errs, err)
			_, err = store.Get(ctx, scope, "msg_x", testNow)
			errs = append(errs, err)
			_, err = store.Lookup(ctx, scope, []string{"x"})
			errs = append(errs, err)
			_, err = store.PurgeExpired(ctx, testNow)
			errs = append(errs, err)
			for i, err := range errs {
				if !errors.Is(err, tc.err) {
					t.Errorf("call %d returned %v, want the store's own %v", i, err, tc.err)
				}
			}

			appends, failures := metrics.seen()
			if !slices.Equal(appends, []int{3}) {
				t.Errorf("append batch sizes %v, want [3]", appends)
			}
			if !slices.Equal(failures, tc.wantErrors) {
				t.Errorf("store errors %q, want %q", failures, tc.wantErrors)
			}
		})
	}
}

// The module reports the use cases' store calls to the graph's Metrics.
func TestModuleReportsToGraphMetrics(t *testing.T) {
	store := &recordingStore{}
	metrics := &recordingMetrics{}
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	var ingester *app.Ingester
	svc := fxtest.New(t, appGraph(store, cfg, &ingester),
		fx.Supply(fx.Annotate(metrics, fx.As(new(app.Metrics)))))
	svc.RequireStart()
	defer svc.RequireStop()

	now := strconv.FormatInt(time.Now().Unix(), 10)
	body := "[" + strings.Repeat(strings.Replace(submitted, "1714564800", now, 1)+",", 4) +
		strings.Replace(submitted, "1714564800", now, 1) + "]"
	if _, err := ingester.Submit(context.Background(), acmeLive, draftsOf(body), ""); err != nil {
		t.Fatal(err)
	}
	if appends, _ := metrics.seen(); !slices.Equal(appends, []int{5}) {
		t.Errorf("append batch sizes %v, want [5]", appends)
	}
}

// The metric's kinds are the classifier's names.
func TestStoreErrorKindsAreTheClassifiersNames(t *testing.T) {
	for kind, name := range map[ports.ErrorKind]string{
		ports.KindUnavailable: app.ErrorUnavailable, ports.KindOverloaded: app.ErrorOverloaded,
		ports.KindCanceled: app.ErrorCanceled, ports.KindOther: app.ErrorOther,
	} {
		if kind.String() != name {
			t.Errorf("%v is named %q in the metrics", kind, name)
		}
	}
}
