package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func TestPurgerRunsRepeatedlyAtTheClocksTime(t *testing.T) {
	store := &recordingStore{}
	core, logs := observer.New(zap.DebugLevel)
	p := app.NewPurger(store, fixedClock{testNow}, time.Millisecond, zap.New(core))
	p.Start()
	p.Start() // a second Start must not start a second loop
	conformance.WaitFor(t, "three purges", func() bool { return store.purgeCount() >= 3 })
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := store.purgeCount()
	for _, now := range store.purges {
		if !now.Equal(testNow) {
			t.Fatalf("purged at %s, want the clock's %s", now, testNow)
		}
	}
	if logs.FilterMessage("no expired messages to purge").Len() == 0 {
		t.Error("purges were not logged")
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if store.purgeCount() != stopped {
		t.Error("the job purged after Stop returned")
	}
}

func TestPurgerStopCancelsARunningPurge(t *testing.T) {
	entered := make(chan struct{})
	store := &recordingStore{purgeHook: func(ctx context.Context) (int64, error) {
		close(entered)
		<-ctx.Done()
		return 0, ctx.Err()
	}}
	p := app.NewPurger(store, fixedClock{testNow}, time.Hour, zap.NewNop())
	p.Start()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop with a purge in flight: %v", err)
	}
}

func TestPurgerLogsCountsAndErrors(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	results := []struct {
		n   int64
		err error
	}{{42, nil}, {0, ports.ErrUnavailable}, {-1, nil}}
	i := 0
	store := &recordingStore{purgeHook: func(context.Context) (int64, error) {
		r := results[i]
		i++
		return r.n, r.err
	}}
	p := app.NewPurger(store, fixedClock{testNow}, time.Hour, zap.New(core))
	for range results {
		p.PurgeOnce(context.Background())
	}
	deleted := logs.FilterMessage("purged expired messages").All()
	if len(deleted) != 2 || deleted[0].ContextMap()["deleted"] != int64(42) || deleted[1].ContextMap()["deleted"] != int64(-1) {
		t.Errorf("count logs: %+v", deleted)
	}
	failed := logs.FilterMessage("purging expired messages failed").All()
	if len(failed) != 1 || failed[0].Level != zap.ErrorLevel {
		t.Fatalf("error logs: %+v", failed)
	}
	if logged, _ := failed[0].ContextMap()["error"].(string); logged != ports.ErrUnavailable.Error() {
		t.Errorf("the error is not in the log entry: %+v", failed[0].ContextMap())
	}
}

func TestCheckReadLag(t *testing.T) {
	policy := app.DefaultConfig().Policy()
	if err := app.CheckReadLag(policy, &recordingStore{readLag: policy.VisibilityDelay}); err != nil {
		t.Errorf("lag equal to the delay refused: %v", err)
	}
	err := app.CheckReadLag(policy, &recordingStore{readLag: policy.VisibilityDelay + time.Second})
	var cfgErr *app.ConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Setting != "REQLOG_VISIBILITY_DELAY" {
		t.Fatalf("CheckReadLag = %v, want a ConfigError naming REQLOG_VISIBILITY_DELAY", err)
	}
}

// A nil logger means no logs: an embedder may pass none.
func TestNilLoggerLogsNothing(t *testing.T) {
	p := app.NewPurger(&recordingStore{err: ports.ErrUnavailable}, fixedClock{testNow}, time.Hour, nil)
	p.PurgeOnce(context.Background()) // logs its failure, to nowhere
	cfg := app.DefaultAlertConfig()
	statistics := app.NewReader(memory.New(), domain.DefaultPolicy(), fixedClock{testNow}).Statistics()
	app.NewAlertEvaluator(nil, statistics, fixedClock{testNow}, nil, "replica", cfg, nil)
	app.NewAlertDeliverer(nil, nil, fixedClock{testNow}, "replica", cfg, nil)
}
