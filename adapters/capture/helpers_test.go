package capture_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// fakeSubmitter records batches. With hold set, each call waits until hold is
// closed or its context ends; reject, if set, decides a batch's error.
type fakeSubmitter struct {
	hold    chan struct{}
	entered chan struct{} // gets a signal as each call starts, when not nil
	reject  func([]domain.Exchange) error

	mu      sync.Mutex
	batches [][]domain.Exchange
}

var _ ports.ExchangeSubmitter = (*fakeSubmitter)(nil)

func (f *fakeSubmitter) SubmitExchanges(ctx context.Context, exchanges []domain.Exchange) ([]domain.Identity, error) {
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.reject != nil {
		if err := f.reject(exchanges); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, slices.Clone(exchanges))
	return make([]domain.Identity, len(exchanges)), nil
}

func (f *fakeSubmitter) sizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	sizes := make([]int, len(f.batches))
	for i, b := range f.batches {
		sizes[i] = len(b)
	}
	return sizes
}

func (f *fakeSubmitter) exchanges() []domain.Exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Concat(f.batches...)
}

func (f *fakeSubmitter) paths() []string {
	var paths []string
	for _, e := range f.exchanges() {
		paths = append(paths, e.Path)
	}
	return paths
}

// startRecorder serves handler wrapped by a new recorder; the recorder is closed
// when the test ends if the test has not closed it.
func startRecorder(t *testing.T, sub ports.ExchangeSubmitter, opts capture.Options, handler http.Handler) (*capture.Recorder, *httptest.Server) {
	t.Helper()
	rec := capture.New(sub, opts)
	srv := httptest.NewServer(rec.Middleware(handler))
	t.Cleanup(func() {
		srv.Close()
		if err := rec.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return rec, srv
}

// get sends a request and returns the whole reply; a client timeout guards against
// a middleware that blocks.
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", req.Method, req.URL, err)
	}
	return resp, string(body)
}

// closeRecorder flushes rec and checks that nothing is left unaccounted for.
func closeRecorder(t *testing.T, rec *capture.Recorder) capture.Stats {
	t.Helper()
	if err := rec.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	s := rec.Stats()
	if s.Captured != s.Submitted+s.Dropped+s.Failed {
		t.Errorf("after Close: %+v does not add up", s)
	}
	return s
}

func okHandler(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
