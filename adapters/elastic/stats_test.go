package elastic_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// hourStats asks for the statistics of the hour around at, by hour.
func hourStats(at time.Time) stats.Query {
	from := at.Truncate(time.Hour)
	return stats.Query{Scope: scope, From: from, To: from.Add(time.Hour), Interval: stats.Intervals[3],
		Filter: domain.Filter{From: from, To: from.Add(time.Hour)}}
}

// statsOnceCounted polls Stats until its total counts n messages.
func statsOnceCounted(t *testing.T, s *elastic.Store, q stats.Query, now time.Time, n int64) stats.Stats {
	t.Helper()
	var st stats.Stats
	waitFor(t, fmt.Sprintf("Stats counting %d messages", n), time.Minute, func() error {
		var err error
		if st, err = s.Stats(t.Context(), q, now); err != nil {
			return err
		}
		if st.Total.Count != n {
			return fmt.Errorf("total count %d", st.Total.Count)
		}
		return nil
	})
	return st
}

// appendDurations stores one message per duration (in milliseconds), all in
// the hour of at, and returns the statistics of that hour once all count.
func appendDurations(t *testing.T, s *elastic.Store, at time.Time, durations []float64) stats.Stats {
	t.Helper()
	msgs := make([]domain.Message, len(durations))
	for i, ms := range durations {
		msgs[i] = message(t, at.Add(time.Duration(i)*time.Microsecond))
		msgs[i].Duration, msgs[i].HasDuration = time.Duration(math.Round(ms*1000))*time.Microsecond, true
	}
	for batch := range slices.Chunk(msgs, 2000) {
		if err := s.Append(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	return statsOnceCounted(t, s, hourStats(at), at.Add(time.Minute), int64(len(msgs)))
}

// percentiles are a summary's percentiles with their ranks (0 to 1).
func percentiles(d stats.DurationSummary) map[float64]float64 {
	return map[float64]float64{0.50: d.P50, 0.95: d.P95, 0.99: d.P99}
}

// Below 10,000 durations a bucket's percentiles from the aggregation are
// exact, as stats.Percentile interpolates them (to the microsecond), and so
// between the sorted durations at ranks ⌊p·(n−1)⌋ and ⌈p·(n−1)⌉ as the contract
// requires. (From rollups they are exact up to stats.ExactDurations, within
// 1 % past: TestStatsDifferential.)
func TestStatsPercentilesOfSmallSetsAreExact(t *testing.T) {
	s, _ := newStore(t, func(cfg *elastic.Config) { cfg.Statistics.Plan = statsengine.PlanAggregate })
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	for i, n := range []int{1, 2, 3, 10, 1000} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			durations := make([]float64, n)
			for j := range durations {
				// Microsecond values spread over six orders of magnitude.
				durations[j] = math.Round(math.Exp(rng.Float64()*14)) / 1000
			}
			st := appendDurations(t, s, base.Add(time.Duration(i)*time.Hour), durations)
			sorted := slices.Sorted(slices.Values(durations))
			want := stats.Summarise(slices.Clone(sorted))
			got := st.Total.Duration
			if got.Count != int64(n) || st.Buckets[0].Duration != got {
				t.Fatalf("total durations %+v, bucket %+v; want %d durations in both", got, st.Buckets[0].Duration, n)
			}
			for p, v := range percentiles(got) {
				rank := p * float64(n-1)
				lo, hi := sorted[int(math.Floor(rank))], sorted[int(math.Ceil(rank))]
				if v < lo || v > hi {
					t.Errorf("p%g = %g, outside [%g, %g] of %v", p*100, v, lo, hi, sorted)
				}
			}
			// Exact but for the rounding to whole microseconds, which
			// Elasticsearch does on microseconds and the domain on milliseconds.
			wantAt := percentiles(want)
			for p, v := range percentiles(got) {
				if math.Abs(v-wantAt[p]) > 0.0011 { // a microsecond, and the float64 error of its difference
					t.Errorf("p%g = %g, want the exact %g", p*100, v, wantAt[p])
				}
			}
		})
	}
}

// Above 10,000 durations the t-digest merges them; its error stays far inside
// the contract's 1 %.
func TestStatsPercentilesOfLargeSetsWithinOnePercent(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 12,000 messages")
	}
	s, _ := newStore(t)
	rng := rand.New(rand.NewPCG(3, 4))
	durations := make([]float64, 12000)
	for i := range durations {
		durations[i] = math.Round(math.Exp(3+1.5*rng.NormFloat64())*1000) / 1000 // log-normal, as latencies are
	}
	st := appendDurations(t, s, time.Now().UTC().Truncate(time.Hour).Add(-2*time.Hour), durations)
	want := percentiles(stats.Summarise(durations))
	for p, v := range percentiles(st.Total.Duration) {
		if math.Abs(v-want[p]) > 0.01*want[p] {
			t.Errorf("p%g = %g, more than 1%% away from %g", p*100, v, want[p])
		}
	}
}

// A range reaching before 1970, where date_nanos ends, counts what is stored.
func TestStatsRangeBeforeTheEpoch(t *testing.T) {
	s, _ := newStore(t)
	at := time.Unix(90, 0).UTC()
	m := message(t, at)
	m.Duration, m.HasDuration = 1500*time.Microsecond, true
	if err := s.Append(t.Context(), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	from, to := time.Unix(-86400, 0).UTC(), time.Unix(86400, 0).UTC()
	q := stats.Query{Scope: scope, From: from, To: to, Interval: stats.Intervals[5], Filter: domain.Filter{From: from, To: to}}
	st := statsOnceCounted(t, s, q, at.Add(time.Minute), 1)
	if len(st.Buckets) != 2 || st.Buckets[1].Count != 1 || st.Buckets[1].Duration.P50 != 1.5 {
		t.Errorf("buckets %+v, want two days with the message in the second", st.Buckets)
	}
}
