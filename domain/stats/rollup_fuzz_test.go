package stats

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// rollupSeeds are encodings of rollups of every shape the differential test
// makes: empty, small, sketched, pruned.
func rollupSeeds() [][]byte {
	rng := rand.New(rand.NewPCG(11, 12))
	var seeds [][]byte
	for range 6 {
		w := newRollupWorld(rng)
		for _, r := range w.rollups {
			data, _ := r.MarshalBinary()
			seeds = append(seeds, data)
			if len(seeds)%8 == 0 {
				break
			}
		}
	}
	var empty, pruned Rollup
	pruned.Paths.capacity = 2
	for i := range 50 {
		pruned.Add(Sample{Path: fmt.Sprintf("/p/%d", i%7), StatusCode: 200 + i, Duration: time.Duration(i), HasDuration: true})
	}
	for _, r := range []*Rollup{&empty, &pruned} {
		data, _ := r.MarshalBinary()
		seeds = append(seeds, data)
	}
	return seeds
}

// Decoding never panics; what it accepts re-encodes to a fixed point and is
// summarised, ranked and merged as anything built by Add.
func FuzzRollupUnmarshal(f *testing.F) {
	for _, seed := range rollupSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Rollup
		if err := r.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidEncoding) || r.Count != 0 || r.Durations.Count() != 0 || r.Paths.Len() != 0 {
				t.Fatalf("refused with %v, keeping %+v", err, r)
			}
			return
		}
		assertFixedPoint(t, &r, &Rollup{})
		checkSummary(t, r.Durations.Summary())
		var sum Rollup
		sum.Add(Sample{Path: "/x", StatusCode: 500, Duration: time.Second, HasDuration: true})
		sum.Merge(&r)
		sum.Merge(&r)
		if sum.Count != 1+2*r.Count || sum.Durations.Count() != 1+2*r.Durations.Count() {
			t.Fatalf("merged twice: %d messages, %d durations", sum.Count, sum.Durations.Count())
		}
		checkSummary(t, sum.Durations.Summary())
		_ = sum.Paths.Top(TopPaths)
	})
}

func FuzzDurationDigestUnmarshal(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 1, 40, ExactDurations, ExactDurations + 1, 5000} {
		micros := make([]int64, n)
		for i := range micros {
			micros[i] = durationShapes["0 to a day"](rng)
		}
		data, _ := digestOf(rng, micros).MarshalBinary()
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d DurationDigest
		if err := d.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidEncoding) || d.Count() != 0 {
				t.Fatalf("refused with %v, keeping %d durations", err, d.Count())
			}
			return
		}
		assertFixedPoint(t, &d, &DurationDigest{})
		checkSummary(t, d.Summary())
		var sum DurationDigest
		sum.Add(time.Millisecond)
		sum.Merge(&d)
		if sum.Count() != 1+d.Count() {
			t.Fatalf("merged: %d durations, want %d", sum.Count(), 1+d.Count())
		}
		checkSummary(t, sum.Summary())
	})
}

func FuzzKeyCounterUnmarshal(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, capacity := range []int{2, 100} {
		data, _ := counterOf(rng, capacity, randomKeyEvents(rng, 300, 40, true)).MarshalBinary()
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c KeyCounter
		if err := c.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidEncoding) || c.Len() != 0 {
				t.Fatalf("refused with %v, keeping %d keys", err, c.Len())
			}
			return
		}
		assertFixedPoint(t, &c, &KeyCounter{})
		sum := KeyCounter{capacity: 2}
		sum.Add("/x", true)
		sum.Merge(&c)
		if sum.Len() > 4 {
			t.Fatalf("a counter of capacity 2 holds %d keys", sum.Len())
		}
		_ = sum.Top(TopPaths)
	})
}

type binaryCodec interface {
	AppendBinary([]byte) ([]byte, error)
	UnmarshalBinary([]byte) error
}

// assertFixedPoint fails unless decoded's encoding decodes, into empty, to
// the same encoding.
func assertFixedPoint(t *testing.T, decoded, empty binaryCodec) {
	t.Helper()
	once, err := decoded.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.UnmarshalBinary(once); err != nil {
		t.Fatalf("its own encoding %x is refused: %v", once, err)
	}
	if twice, _ := empty.AppendBinary(nil); !bytes.Equal(once, twice) {
		t.Fatalf("encodes as %x, then as %x", once, twice)
	}
}

// checkSummary fails unless s is a summary the API could send: percentiles
// ordered, within a day.
func checkSummary(t *testing.T, s DurationSummary) {
	t.Helper()
	limit := float64(domain.MaxDuration.Milliseconds()) * 1.01
	if s.Count < 0 || s.P50 < 0 || s.P50 > s.P95 || s.P95 > s.P99 || s.P99 > limit {
		t.Fatalf("summary %+v", s)
	}
}
