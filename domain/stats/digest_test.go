package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// durationShapes are ways durations come, in microseconds: spread, tied, tiny
// (where rounding to the microsecond is the whole error), at the limit.
var durationShapes = map[string]func(rng *rand.Rand) int64{
	"1 ms to 2 s":  func(rng *rand.Rand) int64 { return int64(1000 * math.Exp(rng.Float64()*math.Log(2000))) },
	"0 to a day":   func(rng *rand.Rand) int64 { return int64(math.Exp(rng.Float64() * math.Log(float64(maxDigestMicros)))) },
	"under 200 µs": func(rng *rand.Rand) int64 { return rng.Int64N(200) },
	"few values":   func(rng *rand.Rand) int64 { return []int64{0, 1, 999, 1000, 120_000}[rng.IntN(5)] },
	"all equal":    func(*rand.Rand) int64 { return 42_424 },
	"a day":        func(rng *rand.Rand) int64 { return maxDigestMicros - rng.Int64N(3) },
}

// digestOf adds micros to a digest in random pieces merged in random order.
func digestOf(rng *rand.Rand, micros []int64) *DurationDigest {
	var parts []*DurationDigest
	for rest := micros; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(2*ExactDurations))
		p := &DurationDigest{}
		for _, v := range rest[:n] {
			p.Add(time.Duration(v) * time.Microsecond)
		}
		parts = append(parts, p)
		rest = rest[n:]
	}
	rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	for len(parts) > 1 { // merge neighbours, a tree of random shape
		i := rng.IntN(len(parts) - 1)
		parts[i].Merge(parts[i+1])
		parts = slices.Delete(parts, i+1, i+2)
	}
	if len(parts) == 0 {
		return &DurationDigest{}
	}
	return parts[0]
}

// assertWithinContract fails unless got holds the count of micros and each
// percentile is Summarise's to the bit when the digest is exact, and otherwise
// within 1 % of the durations at the neighbouring ranks.
func assertWithinContract(t *testing.T, what string, micros []int64, got DurationSummary) {
	t.Helper()
	ms := make([]float64, len(micros))
	for i, v := range micros {
		ms[i] = float64(v) / 1000
	}
	want := Summarise(ms) // sorts ms
	if len(micros) <= ExactDurations {
		if got != want {
			t.Errorf("%s, %d durations: %+v, want %+v", what, len(micros), got, want)
		}
		return
	}
	if got.Count != want.Count {
		t.Errorf("%s: %d durations, want %d", what, got.Count, want.Count)
	}
	for _, p := range []struct {
		p   float64
		got float64
	}{{0.50, got.P50}, {0.95, got.P95}, {0.99, got.P99}} {
		lo, hi, _ := percentileRanks(len(ms), p.p)
		if low, high := ms[lo]*0.99-0.0005, ms[hi]*1.01+0.0005; p.got < low || p.got > high {
			t.Errorf("%s, %d durations: p%.0f = %v, want within 1 %% of %v to %v", what, len(ms), p.p*100, p.got, ms[lo], ms[hi])
		}
	}
}

func TestDurationDigestKeepsTheContractsBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, shape := range durationShapes {
		for _, n := range []int{0, 1, 2, 3, ExactDurations - 1, ExactDurations, ExactDurations + 1, 5000, 60_000} {
			micros := make([]int64, n)
			for i := range micros {
				micros[i] = shape(rng)
			}
			d := digestOf(rng, micros)
			if d.Exact() != (n <= ExactDurations) {
				t.Errorf("%s, %d durations: Exact() = %v", name, n, d.Exact())
			}
			assertWithinContract(t, name, micros, d.Summary())
		}
	}
}

// Below 125 µs each microsecond has a bucket of its own: a sketch gives the
// exact neighbouring ranks back.
func TestDurationDigestSketchIsExactForTinyDurations(t *testing.T) {
	for v := int64(1); v < 125; v++ {
		if sketchBucket(v) == sketchBucket(v+1) {
			t.Fatalf("%d µs and %d µs share a bucket", v, v+1)
		}
		if got := math.Round(sketchValue(sketchBucket(v))); got != float64(v) {
			t.Fatalf("%d µs reads back as %v", v, got)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		micros := make([]int64, ExactDurations+1+rng.IntN(2000))
		for i := range micros {
			micros[i] = rng.Int64N(125)
		}
		got := digestOf(rng, micros).Summary()
		slices.Sort(micros)
		for _, p := range []struct {
			p   float64
			got float64
		}{{0.50, got.P50}, {0.95, got.P95}, {0.99, got.P99}} {
			lo, hi, _ := percentileRanks(len(micros), p.p)
			if p.got < float64(micros[lo])/1000 || p.got > float64(micros[hi])/1000 {
				t.Fatalf("p%.0f = %v, want between %d µs and %d µs", p.p*100, p.got, micros[lo], micros[hi])
			}
		}
	}
}

// A digest is a function of the durations it holds, not of the order of Add
// and Merge: what it holds (and so encodes) is the same whatever the order.
func TestDurationDigestIgnoresOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{7, ExactDurations, 3000} {
		micros := make([]int64, n)
		for i := range micros {
			micros[i] = durationShapes["1 ms to 2 s"](rng)
		}
		first := digestState(digestOf(rng, micros))
		rng.Shuffle(n, func(i, j int) { micros[i], micros[j] = micros[j], micros[i] })
		if again := digestState(digestOf(rng, micros)); first != again {
			t.Errorf("%d durations: two orders encode differently", n)
		}
	}
}

func TestDurationDigestEdges(t *testing.T) {
	var d DurationDigest
	if d.Summary() != (DurationSummary{}) || d.Count() != 0 {
		t.Errorf("empty digest summarised as %+v", d.Summary())
	}
	d.Add(-time.Second)
	d.Add(domain.MaxDuration + time.Hour)
	if got := d.Summary(); got.Count != 2 || got.P50 != 43_200_000 || got.P99 != 85_536_000 {
		t.Errorf("durations outside 0 to a day: %+v, want them counted as 0 and a day", got)
	}
	d.Merge(&d) // doubles
	if got := d.Summary(); got.Count != 4 || got.P50 != 43_200_000 {
		t.Errorf("merged with itself: %+v", got)
	}
	var big DurationDigest
	for i := range 2 * ExactDurations {
		big.Add(time.Duration(i) * time.Millisecond)
	}
	big.Merge(&big)
	if got := big.Summary(); got.Count != 4*ExactDurations || math.Abs(got.P50-511.5) > 0.01*511.5 {
		t.Errorf("a sketch merged with itself: %+v", got)
	}
}

// digestState is what d holds, as an encoding writes it.
func digestState(d *DurationDigest) string {
	first, buckets := d.Sketch()
	return fmt.Sprint(d.Count(), d.Sorted(), first, buckets)
}
