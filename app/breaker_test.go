package app_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var errOutage = fmt.Errorf("connection refused: %w", ports.ErrUnavailable)

// downBreaker returns a breaker in front of a one-writer committer on a
// gateStore, after a call found the store unavailable, and the store, open again.
func downBreaker(t *testing.T) (*app.Breaker, *app.GroupCommitter, *gateStore) {
	t.Helper()
	store := newGateStore()
	g := app.NewGroupCommitter(store, app.GroupCommitOptions{Writers: 1, Stamper: testStamper()})
	b := app.NewBreaker(g)
	store.fail = poisonOn("down", errOutage)
	store.open()
	if err := b.Append(t.Context(), msgs("down")); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("Append during the outage: %v, want ErrUnavailable", err)
	}
	return b, g, store
}

// refusedAtOnce fails unless err is the breaker's refusal, not a wait.
func refusedAtOnce(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ports.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%s while a probe is under way: %v, want ErrUnavailable at once", what, err)
	}
}

// Once a call found the store down, one call at a time probes it; the others
// get ErrUnavailable at once instead of each waiting out the store's timeout.
func TestBreakerProbesADownStoreWithOneCall(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b, g, store := downBreaker(t)
	store.shut()
	// Deadlines, so that a wrong refusal or wait fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := b.Refusing(); err != nil {
		t.Errorf("Refusing with the store down and no probe: %v", err)
	}
	probe := appendAsync(ctx, b, "probe")
	enteredStore(t, ctx, store, probe)
	refusedAtOnce(t, "Append", b.Append(ctx, msgs("other")))
	refusedAtOnce(t, "Refusing", b.Refusing())
	_, err := b.Enter()
	refusedAtOnce(t, "Enter", err)
	store.open()
	if err := <-probe.done; err != nil {
		t.Fatalf("the probe, once the store is back: %v", err)
	}
	// The store answered: with a call under way, others get in again.
	store.shut()
	after := appendAsync(ctx, b, "after")
	enteredStore(t, ctx, store, after)
	if err := b.Refusing(); err != nil {
		t.Errorf("Refusing once a call reached the store: %v", err)
	}
	store.open()
	if err := <-after.done; err != nil {
		t.Error(err)
	}
	if store.has("other") {
		t.Error("a refused message was stored")
	}
	closeCommitter(t, g)
}

// A probe whose caller went away tells nothing of the store: the next call probes.
func TestBreakerProbeWhoseCallerWentAway(t *testing.T) {
	store := newGateStore()
	store.open()
	store.fail = poisonOn("down", errOutage)
	b := app.NewBreaker(store) // straight on the store, whose wait ends with the caller's ctx
	if err := b.Append(t.Context(), msgs("down")); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("Append during the outage: %v, want ErrUnavailable", err)
	}
	store.shut()
	ctx, cancel := context.WithCancel(t.Context())
	probe := appendAsync(ctx, b, "gone")
	enteredStore(t, t.Context(), store, probe)
	cancel()
	if err := <-probe.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned probe: %v, want context.Canceled", err)
	}
	store.open()
	if err := b.Append(t.Context(), msgs("next")); err != nil {
		t.Errorf("the next call, the new probe: %v", err)
	}
}

// A busy store (ErrOverloaded) is not down: no call is refused after it.
func TestBreakerBusyStoreIsNotDown(t *testing.T) {
	store := newGateStore()
	store.open()
	store.fail = poisonOn("busy", fmt.Errorf("queue full: %w", ports.ErrOverloaded))
	b := app.NewBreaker(store)
	if err := b.Append(t.Context(), msgs("busy")); !errors.Is(err, ports.ErrOverloaded) {
		t.Fatalf("the busy call: %v, want ErrOverloaded", err)
	}
	pass, err := b.Enter()
	if err != nil {
		t.Fatalf("Enter after a busy store: %v", err)
	}
	if err := b.Refusing(); err != nil {
		t.Errorf("Refusing with a call under way after a busy store: %v", err)
	}
	pass.Done(nil)
}

// With the store down, a keyed submission's Idempotency-Key lookup is the probe:
// a second submission does not wait out a lookup of its own, and is refused
// from its headers.
func TestIngesterProbesBeforeTheIdempotencyLookup(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b, g, _ := downBreaker(t)
	lookup := &blockingLookup{entered: make(chan struct{}, 2), release: make(chan struct{})}
	in, err := app.NewIngesterWith(app.IngestPorts{Queue: g, Breaker: b, Lookup: lookup, Clock: fixedClock{testNow}},
		domain.DefaultPolicy(), app.DefaultAdmissionOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a regression fails, not hangs
	defer cancel()
	probe := make(chan error, 1)
	go func() {
		_, err := in.Submit(ctx, acmeLive, draftsOf(submitted), "key-1")
		probe <- err
	}()
	<-lookup.entered
	_, err = in.Submit(ctx, acmeLive, draftsOf(submitted), "key-2")
	refusedAtOnce(t, "a keyed Submit", err)
	_, err = in.Admit(acmeLive, app.IdempotencyKey{}, 10)
	refusedAtOnce(t, "Admit", err)
	if n := lookup.calls.Load(); n != 1 {
		t.Errorf("%d lookups, want only the probe's", n)
	}
	close(lookup.release)
	if err := <-probe; err != nil {
		t.Errorf("the probing Submit: %v", err)
	}
	closeCommitter(t, g)
}

// Only the latest call to be let through says whether the store is down: an
// older one may finish after it. The test lets a third call reach the store and
// sees whether a fourth is refused at once (the store is down, and the third is
// its probe) or reaches the store too.
func TestBreakerTheNewestCallSaysWhetherTheStoreIsDown(t *testing.T) {
	for _, tc := range []struct {
		name         string
		older, newer error
		downAfter    bool
	}{
		{"older fails after newer succeeded", errOutage, nil, false},
		{"older succeeds after newer failed", nil, errOutage, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			store := newAnsweredStore()
			b := app.NewBreaker(store)
			older := appendAsync(ctx, b, "older")
			store.reached(t, ctx, older)
			newer := appendAsync(ctx, b, "newer")
			store.reached(t, ctx, newer)
			store.answerFor("newer") <- tc.newer
			if err := <-newer.done; !errors.Is(err, tc.newer) {
				t.Fatalf("newer call: %v, want %v", err, tc.newer)
			}
			store.answerFor("older") <- tc.older
			if err := <-older.done; !errors.Is(err, tc.older) {
				t.Fatalf("older call: %v, want %v", err, tc.older)
			}
			third := appendAsync(ctx, b, "third")
			store.reached(t, ctx, third)
			fourth := appendAsync(ctx, b, "fourth")
			select {
			case err := <-fourth.done:
				if !tc.downAfter || !errors.Is(err, ports.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("a call while the third is under way: %v; the store is down: %v", err, tc.downAfter)
				}
			case id := <-store.entered:
				if tc.downAfter {
					t.Errorf("%s reached the store while the third probed a store found down", id)
				}
				store.answerFor(id) <- nil
				if err := <-fourth.done; err != nil {
					t.Error(err)
				}
			case <-ctx.Done():
				t.Fatal("the fourth call was neither refused nor written")
			}
			store.answerFor("third") <- nil
			if err := <-third.done; err != nil {
				t.Error(err)
			}
		})
	}
}

// blockingLookup is a ports.MessageLookup that waits for release, counting calls.
type blockingLookup struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (l *blockingLookup) Lookup(ctx context.Context, _ domain.Scope, _ []string) ([]domain.Message, error) {
	l.calls.Add(1)
	l.entered <- struct{}{}
	select {
	case <-l.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answeredStore holds each Append, by the id of its first message, until the
// test answers it: batches written at the same time finish in the order chosen.
type answeredStore struct {
	mu      sync.Mutex
	answers map[string]chan error
	entered chan string
}

func newAnsweredStore() *answeredStore {
	return &answeredStore{answers: map[string]chan error{}, entered: make(chan string, 10)}
}

func (s *answeredStore) answerFor(id string) chan error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers[id] == nil {
		s.answers[id] = make(chan error, 1)
	}
	return s.answers[id]
}

func (s *answeredStore) Append(ctx context.Context, msgs []domain.Message) error {
	answer := s.answerFor(msgs[0].ID)
	s.entered <- msgs[0].ID
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		return fmt.Errorf("answered store: %w: %w", ports.ErrUnavailable, ctx.Err())
	}
}

// reached waits until c's batch is at the store.
func (s *answeredStore) reached(t *testing.T, ctx context.Context, c call) {
	t.Helper()
	select {
	case id := <-s.entered:
		if id != c.id {
			t.Fatalf("%s reached the store, want %s", id, c.id)
		}
	case err := <-c.done:
		t.Fatalf("Append of %s returned (%v) before reaching the store", c.id, err)
	case <-ctx.Done():
		t.Fatalf("Append of %s never reached the store", c.id)
	}
}
