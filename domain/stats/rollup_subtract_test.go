package stats

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// The complement's differential test: a store counts the messages of a q
// that most of a range's messages match as the rollups less the messages
// that do not match (RollupBuilder.Subtract). Where Subtract reports
// true, the statistics equal those of the matching messages added alone;
// it reports false exactly where a bucket's or a route's durations were
// sketched and the rest is small enough to be kept exact.
func TestRollupStatsSubtractTheRest(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 27))
	var told, refused, sketched int
	for round := range 300 {
		w := newRollupWorld(rng)
		for range 4 {
			q, now := w.query(rng)
			q.Filter.Route = "" // what rollups answer
			what := fmt.Sprintf("round %d, %d messages, [%s, %s) by %s, name %q, now %s", round, len(w.msgs),
				domain.FormatTime(q.From), domain.FormatTime(q.To), q.Interval.Name, q.Filter.Name, domain.FormatTime(now))
			holds := holdingRule(rng)
			whole, rest, part := NewRollupBuilder(q, now), NewRollupBuilder(q, now), NewRollupBuilder(q, now)
			match := q.Filter.Matcher()
			var inWhole, held []domain.Message // what whole counts, and the rest
			for key, r := range w.rollups {
				accepted := whole.AddRollup(key.start, key.start.Add(time.Minute), key.name, r)
				for _, m := range w.byMinute[key] {
					if !m.Readable(now) || !match(m) {
						continue
					}
					switch {
					case holds(m):
						rest.Add(SampleOf(m))
						held = append(held, m)
						if !accepted {
							whole.Add(SampleOf(m))
						}
						inWhole = append(inWhole, m)
					case accepted:
						part.Add(SampleOf(m))
						inWhole = append(inWhole, m)
					}
				}
			}
			want := rest.Stats()
			if want.Total.Duration.Count > ExactDurations {
				sketched++
			}
			cannot := cannotSubtract(q, inWhole, held)
			if ok := whole.Subtract(part); ok == (cannot != "") {
				t.Fatalf("%s: Subtract reports %v, but %s", what, ok, cmp.Or(cannot, "every digest can be told"))
			} else if !ok {
				refused++
				continue
			}
			told++
			if got := whole.Stats(); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: the rollups less the rest count\n%+v\nbut the rest alone\n%+v", what, got, want)
			}
		}
	}
	if told < 300 || refused < 5 || sketched < 40 {
		t.Errorf("only %d subtractions told, %d refused, %d past %d durations", told, refused, sketched, ExactDurations)
	}
	t.Logf("%d told, %d refused, %d past %d durations", told, refused, sketched, ExactDurations)
}

// holdingRule picks which messages hold a q's word: none, all, a share of
// them at random, or all but one route's.
func holdingRule(rng *rand.Rand) func(domain.Message) bool {
	switch share := []float64{0, 0.03, 0.5, 0.97, 1, -1}[rng.IntN(6)]; share {
	case -1:
		lacking := rollupRoutes[rng.IntN(len(rollupRoutes))]
		return func(m domain.Message) bool { return m.Route != lacking }
	default:
		return func(m domain.Message) bool {
			// The same answer for the same message: a hash of what it holds.
			h := uint64(m.CreatedAt.UnixNano()) ^ uint64(m.Duration)<<7 ^ uint64(len(m.Path))
			h *= 0x9E3779B97F4A7C15
			return float64(h>>11)/(1<<53) < share
		}
	}
}

// cannotSubtract says which bucket or route of q's statistics has sketched
// durations over the messages counted whole, while those of the messages
// held are 1 to ExactDurations; or "".
func cannotSubtract(q Query, whole, held []domain.Message) string {
	buckets, routes := map[int]*durationTally{}, map[string]*durationTally{}
	from, to := q.CountedRange()
	for k, messages := range [][]domain.Message{whole, held} {
		for _, m := range messages {
			if !m.HasDuration || m.CreatedAt.Before(from) || !m.CreatedAt.Before(to) {
				continue
			}
			for _, t := range []*durationTally{tallyOf(buckets, q.BucketIndex(m.CreatedAt)), tallyOf(routes, m.Route)} {
				t.all += 1 - k
				t.held += k
			}
		}
	}
	for i, t := range buckets {
		if t.all > ExactDurations && t.held >= 1 && t.held <= ExactDurations {
			return fmt.Sprintf("bucket %d has %d durations, %d held", i, t.all, t.held)
		}
	}
	for route, t := range routes {
		if route != "" && t.all > ExactDurations && t.held >= 1 && t.held <= ExactDurations {
			return fmt.Sprintf("route %q has %d durations, %d held", route, t.all, t.held)
		}
	}
	return ""
}

// durationTally counts the durations of a bucket or a route, and those of
// the messages holding the word.
type durationTally struct{ all, held int }

func tallyOf[K comparable](m map[K]*durationTally, k K) *durationTally {
	if m[k] == nil {
		m[k] = &durationTally{}
	}
	return m[k]
}

// Rankings a store keeps and adds through AddKeptRankings count as the same
// rankings merged in through AddRankings: in Stats, and in a builder that
// merges or subtracts one holding them.
func TestRollupKeptRankingsCountAsMerged(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 28))
	for round := range 200 {
		w := newRollupWorld(rng)
		q, now := w.query(rng)
		q.Filter.Route = ""
		merged, kept, none := NewRollupBuilder(q, now), NewRollupBuilder(q, now), NewRollupBuilder(q, now)
		var keptRankings Rollup
		for key, r := range w.rollups {
			end := key.start.Add(time.Minute)
			if !merged.AddSeries(key.start, end, key.name, r) || !kept.AddSeries(key.start, end, key.name, r) {
				continue
			}
			merged.AddRankings(r)
			if rng.IntN(2) == 0 {
				keptRankings.Merge(r)
			} else {
				kept.AddRankings(r)
			}
		}
		if rng.IntN(2) == 0 {
			keptRankings.Paths.SortByCount() // as a store's cache keeps them
		}
		kept.AddKeptRankings(&keptRankings)
		want := merged.Stats()
		if got := kept.Stats(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: kept rankings count\n%+v\nmerged\n%+v", round, got, want)
		}
		sum := NewRollupBuilder(q, now)
		sum.Merge(kept)
		if got := sum.Stats(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: a builder merging kept rankings counts\n%+v\nwant\n%+v", round, got, want)
		}
		if !kept.Subtract(none) {
			t.Fatalf("round %d: subtracting nothing refused", round)
		}
		if got := kept.Stats(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: kept rankings less nothing count\n%+v\nwant\n%+v", round, got, want)
		}
	}
}
