package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

type keyEvent struct {
	key     string
	isError bool
}

// counterOf counts events in random pieces merged in a tree of random shape.
func counterOf(rng *rand.Rand, capacity int, events []keyEvent) *KeyCounter {
	var parts []*KeyCounter
	for rest := events; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(200))
		p := &KeyCounter{capacity: capacity}
		for _, e := range rest[:n] {
			p.Add(e.key, e.isError)
		}
		parts = append(parts, p)
		rest = rest[n:]
	}
	for len(parts) > 1 {
		i := rng.IntN(len(parts) - 1)
		parts[i].Merge(parts[i+1])
		parts = slices.Delete(parts, i+1, i+2)
	}
	if len(parts) == 0 {
		return &KeyCounter{capacity: capacity}
	}
	return parts[0]
}

// exactCounts counts events as Builder does.
func exactCounts(events []keyEvent) map[string]*KeyCount {
	counts := map[string]*KeyCount{}
	for _, e := range events {
		kc := counts[e.key]
		if kc == nil {
			kc = &KeyCount{Key: e.key}
			counts[e.key] = kc
		}
		kc.Count++
		if e.isError {
			kc.Errors++
		}
	}
	return counts
}

func randomKeyEvents(rng *rand.Rand, n, keys int, skewed bool) []keyEvent {
	zipf := rand.NewZipf(rng, 1.3, 1, uint64(keys-1))
	events := make([]keyEvent, n)
	for i := range events {
		k := rng.IntN(keys)
		if skewed {
			k = int(zipf.Uint64())
		}
		events[i] = keyEvent{key: fmt.Sprintf("/v1/orders/%d", k), isError: rng.IntN(4) == 0}
	}
	return events
}

// Up to 2·capacity distinct keys the counter is exact: it ranks as Top does.
func TestKeyCounterIsExactWithinCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, keys := range []int{1, 10, 2 * 16} {
		for _, skewed := range []bool{false, true} {
			events := randomKeyEvents(rng, 3000, keys, skewed)
			c := counterOf(rng, 16, events)
			exact := exactCounts(events)
			if got, want := c.Top(len(exact)+1), Top(exact, len(exact)+1); !slices.Equal(got, want) {
				t.Errorf("%d keys, skewed %v: ranked %v, want %v", keys, skewed, got, want)
			}
			if got, want := c.Top(3), Top(exact, 3); !slices.Equal(got, want) {
				t.Errorf("%d keys: Top(3) = %v, want %v", keys, got, want)
			}
		}
	}
	if got := (&KeyCounter{}).Top(10); got == nil || len(got) != 0 {
		t.Errorf("an empty counter ranks %v, want an empty list", got)
	}
}

// Past its capacity, whatever the order of Add and Merge, every count and
// error count is at most the true one and at least the true one less
// n/(capacity+1), and every key of more messages than that is kept.
func TestKeyCounterBoundsPastCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const capacity = 8
	for round := range 40 {
		events := randomKeyEvents(rng, 500+rng.IntN(5000), 20+rng.IntN(400), round%2 == 0)
		c := counterOf(rng, capacity, events)
		if c.Len() > 2*capacity {
			t.Fatalf("holds %d keys, more than %d", c.Len(), 2*capacity)
		}
		bound := int64(len(events)) / (capacity + 1)
		exact := exactCounts(events)
		got := map[string]KeyCount{}
		for _, kc := range c.Top(c.Len()) {
			got[kc.Key] = kc
		}
		for key, want := range exact {
			have, kept := got[key]
			if !kept && want.Count > bound {
				t.Fatalf("round %d: %s of %d messages (bound %d) was dropped", round, key, want.Count, bound)
			}
			if kept && (have.Count > want.Count || have.Count < want.Count-bound ||
				have.Errors > want.Errors || have.Errors < want.Errors-bound) {
				t.Fatalf("round %d: %s counted %d with %d errors, truly %d with %d (bound %d)",
					round, key, have.Count, have.Errors, want.Count, want.Errors, bound)
			}
		}
	}
}

// A key met all along keeps its exact count however many rare keys pass: as
// Builder keeps /health (TestStatsBuilderBoundsItsCounters).
func TestKeyCounterKeepsAFrequentKeyExact(t *testing.T) {
	var c KeyCounter
	for i := range 5 * MaxRankedKeys {
		c.Add(fmt.Sprintf("/orders/%d", i), true)
		if i%1000 == 0 {
			c.Add("/health", true)
		}
	}
	if c.Len() > 2*MaxRankedKeys {
		t.Errorf("holds %d keys", c.Len())
	}
	if top := c.Top(1)[0]; top != (KeyCount{Key: "/health", Count: 50, Errors: 50}) {
		t.Errorf("top key %+v, want /health counted 50 times", top)
	}
}

// A key of the kept counter ties the last ranked one of the other counter
// and ranks before it by key: it is ranked, sorted or not.
func TestKeyCounterTopWithBreaksTiesByKey(t *testing.T) {
	own, kept := &KeyCounter{}, &KeyCounter{}
	own.Add("z", false)
	for _, key := range []string{"c", "a", "b"} {
		kept.Add(key, false)
	}
	want := []KeyCount{{Key: "a", Count: 1}, {Key: "b", Count: 1}}
	if got := own.TopWith(kept, 2); !slices.Equal(got, want) {
		t.Errorf("unsorted: ranked %v, want %v", got, want)
	}
	kept.SortByCount()
	if got := own.TopWith(kept, 2); !slices.Equal(got, want) {
		t.Errorf("sorted: ranked %v, want %v", got, want)
	}
}

// TopWith ranks a counter and a kept one as Top of their merge does while
// the merge counts exactly: keys of either alone or of both, a few or
// every one ranked, and it writes nothing to the kept counter.
func TestKeyCounterTopWithRanksAsTheMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, keys := range []int{1, 10, 200} {
		for _, skewed := range []bool{false, true} {
			kept := counterOf(rng, 1000, randomKeyEvents(rng, 3000, keys, skewed))
			own := counterOf(rng, 1000, randomKeyEvents(rng, 1+rng.IntN(300), keys, !skewed))
			if rng.IntN(3) == 0 {
				own = &KeyCounter{}
			}
			merged := own.Clone()
			merged.Merge(kept)
			for _, sorted := range []bool{false, true} {
				if sorted {
					kept.SortByCount()
				}
				before := slices.Clone(kept.Entries())
				for _, n := range []int{0, 1, 3, 10, keys + 1} {
					if got, want := own.TopWith(kept, n), merged.Top(n); !slices.Equal(got, want) {
						t.Errorf("%d keys, skewed %v, sorted %v, top %d: ranked %v, want %v", keys, skewed, sorted, n, got, want)
					}
				}
				if !slices.Equal(kept.Entries(), before) {
					t.Errorf("%d keys: TopWith changed the kept counter", keys)
				}
			}
		}
	}
}
