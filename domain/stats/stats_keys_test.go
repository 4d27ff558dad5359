package stats

import (
	"fmt"
	"testing"
	"time"
)

// A range of many distinct paths keeps a bounded number of counters, and the
// frequent paths still rank first with their exact counts.
func TestStatsBuilderBoundsItsCounters(t *testing.T) {
	from := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	q := Query{From: from, To: from.Add(time.Hour), Interval: Intervals[0]}
	q.Filter.From, q.Filter.To = q.From, q.To
	b := NewBuilder(q)
	add := func(path string) {
		b.Add(Sample{CreatedAt: from.Add(time.Minute), StatusCode: 500, Path: path, Name: "shop"})
	}
	for i := range 5 * MaxRankedKeys {
		add(fmt.Sprintf("/orders/%d", i))
		if i%1000 == 0 {
			add("/health")
		}
		if b.paths.Len() > 2*MaxRankedKeys {
			t.Fatalf("after %d paths the builder holds %d counters, more than %d", i+1, b.paths.Len(), 2*MaxRankedKeys)
		}
	}
	top := b.Stats().TopPaths[0]
	if want := (KeyCount{Key: "/health", Count: 50, Errors: 50}); top != want {
		t.Errorf("top path %+v, want %+v", top, want)
	}
}
