package app_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// warmingStore is a store with the StatsWarmer capability.
type warmingStore struct {
	*recordingStore
	warmed chan time.Time
}

func (s warmingStore) WarmStats(_ context.Context, now time.Time) error {
	s.warmed <- now
	return nil
}

func TestCoreWarmsTheStoresStatisticsAtStart(t *testing.T) {
	store := warmingStore{&recordingStore{}, make(chan time.Time, 1)}
	c, err := app.NewCore(app.DefaultConfig(), app.CoreDeps{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	select {
	case <-store.warmed:
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not warm the store's statistics")
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// blockedStore holds every Append until released, and says when one began.
type blockedStore struct {
	*recordingStore
	began, release chan struct{}
}

func (s blockedStore) Append(ctx context.Context, msgs []domain.Message) error {
	s.began <- struct{}{}
	<-s.release
	return s.recordingStore.Append(ctx, msgs)
}

// Stop writes what the ingest queue holds before it returns: a submission
// acknowledged during shutdown is stored.
func TestCoreStopWritesWhatIsQueued(t *testing.T) {
	store := blockedStore{&recordingStore{}, make(chan struct{}, 1), make(chan struct{})}
	cfg := app.DefaultConfig()
	c, err := app.NewCore(cfg, app.CoreDeps{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	done := make(chan error, 1)
	go func() {
		body := strings.Replace(submitted, "1714564800", strconv.FormatInt(time.Now().Unix(), 10), 1)
		_, err := c.Ingester.Submit(context.Background(), acmeLive, draftsOf(body), "")
		done <- err
	}()
	<-store.began
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(context.Background()) }()
	close(store.release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-done; err != nil || len(store.appended) != 1 {
		t.Fatalf("the submission in flight at Stop: %v, %d stored", err, len(store.appended))
	}
}

func TestCoreAlerting(t *testing.T) {
	off, err := app.NewCore(app.DefaultConfig(), app.CoreDeps{Store: &recordingStore{}})
	if err != nil || off.Alerts != nil {
		t.Errorf("without an alert store: Alerts %v, %v; want nil", off.Alerts, err)
	}
	if _, err := app.NewCore(app.DefaultConfig(), app.CoreDeps{Store: &recordingStore{},
		Alerting: app.AlertingDeps{Store: memory.NewAlertStore()}}); err == nil {
		t.Error("alerting without a webhook sender was accepted")
	}
	if _, err := app.NewCore(app.DefaultConfig(), app.CoreDeps{}); err == nil {
		t.Error("a core without a store was accepted")
	}
}
