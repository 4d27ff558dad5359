package capture_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// never is a flush interval no test waits for.
const never = time.Hour

func requestPaths(t *testing.T, url string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if resp, body := get(t, url+p); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("GET %s: %d %q", p, resp.StatusCode, body)
		}
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	sub := &fakeSubmitter{hold: make(chan struct{}), entered: make(chan struct{}, 10)}
	rec, srv := startRecorder(t, sub, capture.Options{BufferSize: 2, BatchSize: 1, FlushInterval: never}, http.HandlerFunc(okHandler))

	requestPaths(t, srv.URL, "/1")
	<-sub.entered // the background goroutine now waits inside the submitter
	// The queue takes two more; the rest must be dropped, and every reply still
	// arrives (get's client times out if the middleware blocks).
	requestPaths(t, srv.URL, "/2", "/3", "/4", "/5", "/6")
	conformance.WaitFor(t, "six exchanges", func() bool { return rec.Stats().Captured == 6 })
	if s := rec.Stats(); s.Dropped != 3 || s.Submitted != 0 {
		t.Fatalf("stats %+v while the submitter is held: want 3 dropped, none submitted", s)
	}
	close(sub.hold)
	s := closeRecorder(t, rec)
	if want := (capture.Stats{Captured: 6, Submitted: 3, Dropped: 3}); s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
	if got := sub.paths(); !reflect.DeepEqual(got, []string{"/1", "/2", "/3"}) {
		t.Errorf("submitted %v", got)
	}
}

func TestFlushesOnBatchSizeAndOnClose(t *testing.T) {
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{BatchSize: 3, FlushInterval: never}, http.HandlerFunc(okHandler))
	requestPaths(t, srv.URL, "/0", "/1", "/2", "/3", "/4")
	conformance.WaitFor(t, "a full batch", func() bool { return len(sub.sizes()) == 1 })
	conformance.WaitFor(t, "five exchanges", func() bool { return rec.Stats().Captured == 5 })
	if got := sub.sizes(); !reflect.DeepEqual(got, []int{3}) {
		t.Fatalf("batches %v before Close, want one of 3", got)
	}
	closeRecorder(t, rec)
	if got := sub.sizes(); !reflect.DeepEqual(got, []int{3, 2}) {
		t.Errorf("batches %v, want the rest flushed by Close", got)
	}
	if got := sub.paths(); !reflect.DeepEqual(got, []string{"/0", "/1", "/2", "/3", "/4"}) {
		t.Errorf("submitted %v", got)
	}
}

func TestFlushesOnInterval(t *testing.T) {
	sub := &fakeSubmitter{}
	_, srv := startRecorder(t, sub, capture.Options{BatchSize: 100, FlushInterval: 5 * time.Millisecond}, http.HandlerFunc(okHandler))
	requestPaths(t, srv.URL, "/lonely")
	conformance.WaitFor(t, "the interval flush", func() bool { return len(sub.sizes()) == 1 })
	if got := sub.paths(); !reflect.DeepEqual(got, []string{"/lonely"}) {
		t.Errorf("submitted %v", got)
	}
}

func TestBatchesStayUnderMaxBatchBytes(t *testing.T) {
	big := strings.Repeat("x", 1000)
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(big)) })
	for _, tc := range []struct {
		maxBytes int
		want     []int
	}{{2500, []int{1, 1, 1, 1}}, {1 << 20, []int{4}}} {
		sub := &fakeSubmitter{}
		rec, srv := startRecorder(t, sub, capture.Options{MaxBatchBytes: tc.maxBytes, FlushInterval: never}, handler)
		for range 4 {
			get(t, srv.URL)
		}
		conformance.WaitFor(t, "four exchanges", func() bool { return rec.Stats().Captured == 4 })
		closeRecorder(t, rec)
		if got := sub.sizes(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("MaxBatchBytes %d: batches %v, want %v", tc.maxBytes, got, tc.want)
		}
	}
}

func TestSplitsBatchesTooLargeForTheReceiver(t *testing.T) {
	var mu sync.Mutex
	var tried []int
	sub := &fakeSubmitter{reject: func(batch []domain.Exchange) error {
		mu.Lock()
		defer mu.Unlock()
		tried = append(tried, len(batch))
		if len(batch) > 2 {
			return fmt.Errorf("413: %w", domain.ErrTooLarge)
		}
		return nil
	}}
	rec, srv := startRecorder(t, sub, capture.Options{BatchSize: 5, FlushInterval: never}, http.HandlerFunc(okHandler))
	requestPaths(t, srv.URL, "/0", "/1", "/2", "/3", "/4")
	conformance.WaitFor(t, "five exchanges", func() bool { return rec.Stats().Captured == 5 })
	s := closeRecorder(t, rec)
	if s.Submitted != 5 || s.Failed != 0 {
		t.Errorf("stats %+v, want all 5 submitted in smaller batches", s)
	}
	if got := sub.paths(); !reflect.DeepEqual(got, []string{"/0", "/1", "/2", "/3", "/4"}) {
		t.Errorf("stored %v, want each exchange once, in order", got)
	}
	if want := []int{5, 2, 3, 1, 2}; !reflect.DeepEqual(tried, want) {
		t.Errorf("batch sizes tried %v, want %v", tried, want)
	}
}

func TestResubmitsWithoutInvalidItems(t *testing.T) {
	sub := &fakeSubmitter{reject: func(batch []domain.Exchange) error {
		invalid := &domain.ValidationError{Message: "the batch is invalid: nothing was stored"}
		for i, e := range batch {
			if strings.Contains(e.Path, "bad") {
				invalid.Fields = append(invalid.Fields, domain.FieldError{Field: fmt.Sprintf("[%d].path", i), Message: "is bad"})
			}
		}
		if len(invalid.Fields) > 0 {
			return fmt.Errorf("wrapped: %w", invalid)
		}
		return nil
	}}
	var errs []error
	var mu sync.Mutex
	rec, srv := startRecorder(t, sub, capture.Options{BatchSize: 4, FlushInterval: never, OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}}, http.HandlerFunc(okHandler))
	requestPaths(t, srv.URL, "/a", "/bad1", "/b", "/bad2")
	conformance.WaitFor(t, "four exchanges", func() bool { return rec.Stats().Captured == 4 })
	s := closeRecorder(t, rec)
	if s.Submitted != 2 || s.Failed != 2 {
		t.Errorf("stats %+v, want the 2 good ones submitted and the 2 bad ones failed", s)
	}
	if got := sub.paths(); !reflect.DeepEqual(got, []string{"/a", "/b"}) {
		t.Errorf("stored %v", got)
	}
	var invalid *domain.ValidationError
	if len(errs) != 1 || !errors.As(errs[0], &invalid) {
		t.Errorf("OnError heard %v, want the validation error once", errs)
	}
}

func TestSubmitterErrorsAreCounted(t *testing.T) {
	sub := &fakeSubmitter{reject: func([]domain.Exchange) error { return fmt.Errorf("down: %w", ports.ErrUnavailable) }}
	var heard error
	rec, srv := startRecorder(t, sub, capture.Options{FlushInterval: never, OnError: func(err error) { heard = err }}, http.HandlerFunc(okHandler))
	requestPaths(t, srv.URL, "/a", "/b")
	conformance.WaitFor(t, "two exchanges", func() bool { return rec.Stats().Captured == 2 })
	if s := closeRecorder(t, rec); s.Failed != 2 || s.Submitted != 0 {
		t.Errorf("stats %+v, want 2 failed", s)
	}
	if !errors.Is(heard, ports.ErrUnavailable) { // read after Close: the goroutine has ended
		t.Errorf("OnError heard %v", heard)
	}
}

func TestCloseGivesUpWhenItsContextEnds(t *testing.T) {
	sub := &fakeSubmitter{hold: make(chan struct{}), entered: make(chan struct{}, 10)}
	rec, srv := startRecorder(t, sub, capture.Options{BatchSize: 1, FlushInterval: never}, http.HandlerFunc(okHandler))
	requestPaths(t, srv.URL, "/stuck")
	<-sub.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rec.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	if s := rec.Stats(); s.Failed != 1 || s.Captured != 1 {
		t.Errorf("stats %+v, want the held exchange failed", s)
	}
	// After Close the middleware still serves, and counts what it no longer records.
	requestPaths(t, srv.URL, "/late")
	if s := rec.Stats(); s.Dropped != 1 || s.Captured != 2 {
		t.Errorf("stats %+v after a request past Close", s)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
