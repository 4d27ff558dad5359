package domain

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// SummariseMicros gives Summarise's summary to the bit, on inputs shaped to
// trouble a selection: repeats, runs already sorted either way, organ pipes,
// and sizes around the point where it sorts instead.
func TestSummariseMicrosIsSummarise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	shapes := map[string]func(i, n int) int64{
		"random":      func(int, int) int64 { return rng.Int64N(2_000_000) },
		"few values":  func(int, int) int64 { return rng.Int64N(4) * 1000 },
		"all equal":   func(int, int) int64 { return 1234 },
		"ascending":   func(i, _ int) int64 { return int64(i) },
		"descending":  func(i, n int) int64 { return int64(n - i) },
		"organ pipe":  func(i, n int) int64 { return int64(min(i, n-i)) },
		"log-uniform": func(int, int) int64 { return int64(1000*(1<<rng.IntN(11))) + rng.Int64N(1000) },
		"huge":        func(int, int) int64 { return rng.Int64N(1<<53) + 1<<52 },
	}
	sizes := []int{1, 2, 3, 31, 32, 33, 34, 100, 101, 1000, 4097, 20_000}
	for name, shape := range shapes {
		for _, n := range sizes {
			micros := make([]int64, n)
			ms := make([]float64, n)
			for i := range micros {
				micros[i] = shape(i, n)
				ms[i] = float64(micros[i]) / 1000
			}
			before := slices.Clone(micros)
			got, want := SummariseMicros(micros), Summarise(ms)
			if got != want {
				t.Errorf("%s, %d values: SummariseMicros = %+v, Summarise = %+v", name, n, got, want)
			}
			slices.Sort(before)
			slices.Sort(micros)
			if !slices.Equal(before, micros) {
				t.Errorf("%s, %d values: SummariseMicros changed the values, not only their order", name, n)
			}
		}
	}
	if got := SummariseMicros(nil); got != (DurationSummary{}) {
		t.Errorf("SummariseMicros(nil) = %+v, want the zero summary", got)
	}
}

// selectRank puts the value of rank k at k, no greater before and no smaller
// after, for every k.
func TestSelectRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{1, 5, 33, 64, 257, 1000} {
		for range 20 {
			a := make([]int64, n)
			for i := range a {
				a[i] = rng.Int64N(int64(n/3 + 1))
			}
			sorted := slices.Sorted(slices.Values(a))
			k := rng.IntN(n)
			selectRank(a, k)
			if a[k] != sorted[k] {
				t.Fatalf("%d values: rank %d holds %d, want %d", n, k, a[k], sorted[k])
			}
			for i, v := range a {
				if (i < k && v > a[k]) || (i > k && v < a[k]) {
					t.Fatalf("%d values, rank %d: %d at %d is on the wrong side of %d", n, k, v, i, a[k])
				}
			}
		}
	}
}
