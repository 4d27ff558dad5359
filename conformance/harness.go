// Package conformance is the shared proof that a store adapter keeps reqlog's
// contract. It is a normal package, not a _test file, so adapters in other
// repositories can run it too:
//
//	func TestConformance(t *testing.T) {
//		conformance.RunStoreTests(t, newStore)
//		conformance.RunAPITests(t, newStore, httpapitest.Serve)
//	}
//
// Every subtest gets a fresh, empty store from the StoreMaker.
package conformance

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// StoreMaker returns a fresh, empty store for one subtest. It registers its own
// cleanup (closing connections, dropping the database or indices) with t.Cleanup.
type StoreMaker func(ctx context.Context, t *testing.T) (ports.MessageStore, error)

// APIKey is one configured key of the service under test.
type APIKey struct {
	Account, Domain, Key string
}

// APIConfig is what the HTTP suite asks of the service it tests.
type APIConfig struct {
	Keys         []APIKey
	Policy       domain.Policy
	Clock        ports.Clock
	MaxBodyBytes int64
}

// ServeFunc wires the whole service (use cases, HTTP API) on store with cfg and
// returns its handler; the suite serves it on a real listener.
type ServeFunc func(t *testing.T, store ports.MessageStore, cfg APIConfig) http.Handler

// FakeClock is a settable clock shared by a test and the service under test.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock starts a clock at start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var _ ports.Clock = (*FakeClock)(nil)

// WaitFor polls cond every millisecond until it holds, failing t after ten
// seconds: a wait on a background worker with a deadline, not a sleep. The
// test packages of the adapters and of app share it.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}
