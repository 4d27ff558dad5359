package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// heldStore holds every statistics call and list of account "acme" until the
// test lets it go, and answers the others at once. It counts acme's walks
// (statistics, searches, export pages) running at once.
type heldStore struct {
	recordingStore
	held chan chan struct{} // each held call sends the channel that lets it go

	mu               sync.Mutex
	walks, mostWalks int
}

func (s *heldStore) hold(account string, walk bool) {
	if account != acmeLive.Account {
		return
	}
	if walk {
		s.mu.Lock()
		s.walks++
		s.mostWalks = max(s.mostWalks, s.walks)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.walks--
			s.mu.Unlock()
		}()
	}
	release := make(chan struct{})
	s.held <- release
	<-release
}

func (s *heldStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	s.hold(q.Scope.Account, true)
	return s.recordingStore.Stats(ctx, q, now)
}

func (s *heldStore) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	s.hold(q.Scope.Account, q.Filter.Text != "" || q.Limit == app.ExportPageSize)
	return s.recordingStore.List(ctx, q, now)
}

// One account's walks run one at a time under PerAccount 1, on every use case
// that walks, while another account's statistics run at once; a plain list is
// no walk and does not wait for one.
func TestOneAccountsWalksDoNotHoldUpAnothers(t *testing.T) {
	store := &heldStore{held: make(chan chan struct{})}
	reader := app.NewReaderWith(store, app.DefaultConfig().Policy(), fixedClock{testNow},
		app.WalkLimits{Walks: 2, PerAccount: 1, MaxWaiting: 4})
	st, exporter := reader.Statistics(), reader.Exporter()
	q := statsQuery(t, testNow.Add(-time.Hour), testNow, "5m")
	done := make(chan error, 4)
	go func() {
		_, err := st.Compute(t.Context(), acmeLive, q)
		done <- err
	}()
	running := <-store.held
	go func() {
		_, err := reader.List(t.Context(), acmeLive, domain.Query{Filter: domain.Filter{Text: "needle"}})
		done <- err
	}()
	go func() {
		_, err := exporter.Export(t.Context(), acmeLive, domain.ExportQuery{}, func([]domain.Message) error { return nil })
		done <- err
	}()
	other := domain.Principal{Scope: domain.Scope{Account: "globex", Domain: domain.DomainLive}}
	// A deadline, so that waiting behind acme fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := st.Compute(ctx, other, q); err != nil {
		t.Fatalf("another account's statistics while acme's run: %v", err)
	}
	go func() {
		_, err := reader.List(t.Context(), acmeLive, domain.Query{})
		done <- err
	}()
	// Four calls of acme reach the store in turn: the plain list at any time,
	// the three walks one after the other.
	for range 3 {
		close(running)
		running = <-store.held
	}
	close(running)
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if store.mostWalks != 1 {
		t.Errorf("acme ran %d walks at once, want 1", store.mostWalks)
	}
}
