package elastic

import (
	"testing"
	"time"
)

// WaitFor polls check until it returns nil or the deadline passes; exported
// for the package's external tests, and used by its benchmarks' set-up.
func WaitFor(t testing.TB, what string, deadline time.Duration, check func() error) {
	t.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: still failing after %s: %v", what, deadline, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v (last error: %v)", what, t.Context().Err(), err)
		case <-tick.C:
		}
	}
}
