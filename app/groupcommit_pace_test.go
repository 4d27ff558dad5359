package app_test

import (
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// A batch holds what the store writes in MaxWait/4 at the pace of its latest
// write: a slow store gets small batches, each written soon after it starts.
func TestGroupCommitPacesBatchesToTheStore(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxWait    time.Duration
		maxBatch   int64         // MaxBatchBytes, in messages: pacing keeps, and learns from, a sixteenth
		firstWrite time.Duration // how long the clock says the first write took
		want       []int         // calls per batch
	}{
		// One message per minute: MaxWait/4 holds a quarter of one, so a
		// batch is one call, the floor.
		{"slow store", time.Minute, 16, time.Minute, []int{1, 1, 1, 1, 1}},
		{"fast store", time.Minute, 16, time.Millisecond, []int{1, 4}},
		{"no MaxWait, no pacing", 0, 16, time.Minute, []int{1, 4}},
		// A write below the floor (two messages here) tells nothing of the pace.
		{"small first write", time.Minute, 32, time.Minute, []int{1, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			clock := conformance.NewFakeClock(testNow)
			one := domain.EstimatedBytes(msgs("a")[0])
			g, store, depth, first := blockedCommitter(t, app.GroupCommitOptions{
				Writers: 1, MaxWait: tc.maxWait, MaxBatchBytes: tc.maxBatch * one, Clock: clock})
			clock.Advance(tc.firstWrite)
			var calls []call
			for _, id := range []string{"a", "b", "c", "d"} {
				calls = append(calls, appendAsync(t.Context(), g, id))
			}
			waitQueued(t, depth, 5)
			store.open() // the later writes take no time on the clock: the pace stays the first's
			for _, c := range append(calls, first) {
				if err := <-c.done; err != nil {
					t.Errorf("Append %s: %v", c.id, err)
				}
			}
			closeCommitter(t, g)
			if got := store.batchSizes(); !slices.Equal(got, tc.want) {
				t.Errorf("messages per batch: %v, want %v", got, tc.want)
			}
		})
	}
}
