package rollupcodec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Decoding never panics; what it accepts re-encodes to a fixed point and is
// summarised, ranked and merged as anything built by Add.
func FuzzDecodeRollup(f *testing.F) {
	for _, r := range testRollups(rand.New(rand.NewPCG(11, 12))) {
		if data := AppendRollup(nil, r); len(data) < 4096 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r stats.Rollup
		if err := DecodeRollup(data, &r); err != nil {
			if !errors.Is(err, ErrInvalidEncoding) || r.Count != 0 || r.Durations.Count() != 0 || r.Paths.Len() != 0 || r.Routes.Len() != 0 {
				t.Fatalf("refused with %v, keeping %+v", err, r)
			}
			return
		}
		once := AppendRollup(nil, &r)
		var again stats.Rollup
		if err := DecodeRollup(once, &again); err != nil || !bytes.Equal(AppendRollup(nil, &again), once) {
			t.Fatalf("its own encoding %x: %v, or not a fixed point", once, err)
		}
		checkSummary(t, r.Durations.Summary())
		var sum stats.Rollup
		sum.Add(stats.Sample{Path: "/x", Route: "/x", StatusCode: 500, Duration: time.Second, HasDuration: true})
		sum.Merge(&r)
		sum.Merge(&r)
		if sum.Count != 1+2*r.Count || sum.Durations.Count() != 1+2*r.Durations.Count() {
			t.Fatalf("merged twice: %d messages, %d durations", sum.Count, sum.Durations.Count())
		}
		checkSummary(t, sum.Durations.Summary())
		for _, rs := range stats.TopRouteStats(&sum.Routes, stats.TopRoutes) {
			checkSummary(t, rs.Duration)
		}
		_ = sum.Paths.Top(stats.TopRoutes)
	})
}

func FuzzDecodeDigest(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 1, 40, stats.ExactDurations, stats.ExactDurations + 1, 5000} {
		var d stats.DurationDigest
		for range n {
			d.Add(time.Duration(rng.Int64N(int64(domain.MaxDuration))))
		}
		f.Add(AppendDigest(nil, &d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d stats.DurationDigest
		if err := DecodeDigest(data, &d); err != nil {
			if !errors.Is(err, ErrInvalidEncoding) || d.Count() != 0 {
				t.Fatalf("refused with %v, keeping %d durations", err, d.Count())
			}
			return
		}
		once := AppendDigest(nil, &d)
		var again stats.DurationDigest
		if err := DecodeDigest(once, &again); err != nil || !bytes.Equal(AppendDigest(nil, &again), once) {
			t.Fatalf("its own encoding %x: %v, or not a fixed point", once, err)
		}
		checkSummary(t, d.Summary())
		var sum stats.DurationDigest
		sum.Add(time.Millisecond)
		sum.Merge(&d)
		if sum.Count() != 1+d.Count() {
			t.Fatalf("merged: %d durations, want %d", sum.Count(), 1+d.Count())
		}
		checkSummary(t, sum.Summary())
	})
}

func FuzzDecodeKeys(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, keys := range []int{3, 40} {
		var c stats.KeyCounter
		for range 300 {
			c.Add(string(rune('a'+rng.IntN(keys))), rng.IntN(3) == 0)
		}
		f.Add(AppendKeys(nil, &c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var decoder Decoder
		var c stats.KeyCounter
		if err := decoder.Keys(data, &c); err != nil {
			if !errors.Is(err, ErrInvalidEncoding) || c.Len() != 0 {
				t.Fatalf("refused with %v, keeping %d keys", err, c.Len())
			}
			return
		}
		once := AppendKeys(nil, &c)
		var again stats.KeyCounter
		if err := decoder.Keys(once, &again); err != nil || !bytes.Equal(AppendKeys(nil, &again), once) {
			t.Fatalf("its own encoding %x: %v, or not a fixed point", once, err)
		}
		var sum stats.KeyCounter
		sum.Add("/x", true)
		sum.Merge(&c)
		if sum.Len() > 2*stats.MaxRankedKeys {
			t.Fatalf("a counter holds %d keys", sum.Len())
		}
		_ = sum.Top(stats.TopRoutes)
	})
}

// checkSummary fails unless s is a summary the API could send: percentiles
// ordered, within a day.
func checkSummary(t *testing.T, s stats.DurationSummary) {
	t.Helper()
	limit := float64(domain.MaxDuration.Milliseconds()) * 1.01
	if s.Count < 0 || s.P50 < 0 || s.P50 > s.P95 || s.P95 > s.P99 || s.P99 > limit {
		t.Fatalf("summary %+v", s)
	}
}
