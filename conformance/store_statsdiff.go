package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// RunStatsDifferential is the differential test of a store's statistics:
// for each of worlds fresh stores, random messages (a few to thousands,
// names and paths uniform or skewed, every status, durations of several
// shapes or none, some stored long after their created_at, some expiring or
// not yet visible at the times read) are appended in random batches, a part
// of them again in batches composed otherwise (as a client's retries would),
// in two waves; after each wave random queries (every interval, ranges
// aligned or not, to at now or before, the filter's from narrowed, a name
// or none, or one of the other filters) at random times must give
// stats.Builder's answer over the messages readable then, within the
// contract's bounds (counts and rankings exact, percentiles by rank).
//
// Run it on a store whose statistics do more than stream every message
// (rollups, aggregations); seed fixes the worlds.
func RunStatsDifferential(t *testing.T, newStore StoreMaker, worlds int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 41))
	for w := range worlds {
		t.Run(fmt.Sprintf("world%d", w), func(t *testing.T) {
			s := freshStore(t, newStore)
			world := newStatsWorld(t, rng)
			var stored []domain.Message
			for wave, msgs := range world.waves {
				for _, batch := range world.batches(rng, msgs, stored) {
					mustAppend(t, s, batch)
				}
				stored = append(stored, msgs...)
				waitForStored(t, s, latestVisible(stored), notTallies(stored))
				for range 12 {
					q, now := world.query(rng, stored)
					got := getStats(t, s, q, now)
					assertStats(t, stored, q, now, got)
					if t.Failed() {
						t.Fatalf("wave %d of %d messages (%d in all)", wave, len(msgs), len(stored))
					}
				}
			}
		})
	}
}

// statsWorld is one differential test's messages, in two waves.
type statsWorld struct {
	anchor time.Time
	waves  [2][]domain.Message
	names  []string
}

func latestVisible(msgs []domain.Message) time.Time {
	var latest time.Time
	for _, m := range msgs {
		if m.VisibleAt.After(latest) {
			latest = m.VisibleAt
		}
	}
	return latest
}

// differentialRoutes are the templates of the worlds' messages; some have none.
var differentialRoutes = []string{"/v1/items/{id}", "/v1/items", "/v1/items/{id}/pay", "/health"}

func newStatsWorld(t *testing.T, rng *rand.Rand) *statsWorld {
	f := newFixtures(t)
	w := &statsWorld{anchor: f.anchor}
	n := []int{1, 40, 400, 2500}[rng.IntN(4)]
	span := []time.Duration{20 * time.Minute, 5 * time.Hour, 26 * time.Hour}[rng.IntN(3)]
	// Every message expires in the real future (MongoDB's TTL monitor), and
	// some before the latest times read.
	retention := []time.Duration{30 * time.Hour, 40 * time.Hour, domain.DefaultRetention}[rng.IntN(3)]
	delay := []time.Duration{0, 5 * time.Second}[rng.IntN(2)]
	w.names = []string{"shop", "Shop", "billing", "search", "mobile-ios", "admin"}[:1+rng.IntN(6)]
	paths := []int{3, 40, 900}[rng.IntN(3)]
	skewed := rng.IntN(2) == 0
	pick := func(k int) int {
		if skewed {
			return min(int(rng.ExpFloat64()*float64(k)/6), k-1)
		}
		return rng.IntN(k)
	}
	shape := rng.IntN(3)
	duration := func() time.Duration {
		var ms float64
		switch shape {
		case 0: // log-normal latencies
			ms = math.Exp(3 + 1.2*rng.NormFloat64())
		case 1: // two modes
			ms = []float64{4, 900}[rng.IntN(2)] * (1 + rng.Float64()/10)
		default: // few distinct values
			ms = float64(1 + rng.IntN(4))
		}
		return millis(math.Round(ms*1000) / 1000)
	}
	scopes := []domain.Scope{scopeLive, scopeLive, scopeLive, scopeLive, scopeTest, scopeOtherLive}
	message := func(created time.Time, scope domain.Scope) domain.Message {
		m := f.message(scope, created, func(m *domain.Message) {
			m.Name = w.names[pick(len(w.names))]
			m.Path = fmt.Sprintf("/v1/items/%d", pick(paths))
			if rng.IntN(4) == 0 {
				m.Path += fmt.Sprintf("?page=%d", rng.IntN(9))
			}
			if r := pick(len(differentialRoutes) + 1); r < len(differentialRoutes) {
				m.Route = differentialRoutes[r]
			}
			m.Method = []string{"GET", "GET", "POST", "DELETE"}[rng.IntN(4)]
			m.StatusCode = []int{200, 200, 200, 201, 204, 302, 404, 429, 500, 503, 101}[rng.IntN(11)]
			if rng.IntN(8) != 0 {
				m.Duration, m.HasDuration = duration(), true
			}
			if rng.IntN(5) == 0 {
				m.Response.Body = `{"error":"payment declined"}`
			}
			m.IPAddress = []string{"203.0.113.7", "10.0.0.1", "2001:db8::1"}[rng.IntN(3)]
			m.UpdatedAt = m.CreatedAt.Add(time.Duration(rng.Int64N(2_000_000)) * time.Microsecond)
			if rng.IntN(50) == 0 { // a backfill: stored long after its created_at
				m.UpdatedAt = w.anchor.Add(time.Duration(rng.Int64N(20_000_000)) * time.Microsecond)
			}
			m.VisibleAt = m.UpdatedAt.Add(delay)
			m.ExpiresAt = m.CreatedAt.Add(retention)
		})
		if m.Method == "DELETE" && m.StatusCode >= 400 {
			m = m.AsTally() // what an ingest rule dropped; no draw, so the worlds stay as they were
		}
		return m
	}
	var all []domain.Message
	for range n {
		created := w.anchor.Add(-time.Duration(rng.Int64N(int64(span/time.Microsecond))) * time.Microsecond)
		all = append(all, message(created, scopes[rng.IntN(len(scopes))]))
	}
	if rng.IntN(3) == 0 { // a busy minute: more durations than a digest keeps exact
		minute := w.anchor.Add(-time.Duration(rng.IntN(int(span/time.Minute))) * time.Minute).Truncate(time.Minute)
		for range stats.ExactDurations + 100 {
			all = append(all, message(minute.Add(time.Duration(rng.Int64N(int64(time.Minute/time.Microsecond)))*time.Microsecond), scopeLive))
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	cut := len(all) * 7 / 10
	w.waves = [2][]domain.Message{all[:cut], all[cut:]}
	return w
}

// batches splits msgs into random batches, with some of before (messages
// already stored) mixed in again, and some of msgs twice.
func (w *statsWorld) batches(rng *rand.Rand, msgs, before []domain.Message) [][]domain.Message {
	var items []domain.Message
	items = append(items, msgs...)
	for _, m := range before {
		if rng.IntN(4) == 0 {
			items = append(items, m)
		}
	}
	for _, m := range msgs {
		if rng.IntN(6) == 0 {
			items = append(items, m)
		}
	}
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	var out [][]domain.Message
	for len(items) > 0 {
		n := min(len(items), 1+rng.IntN(300))
		batch := slices.Clone(items[:n])
		// A batch holds an id once: the group committer's batches do.
		slices.SortFunc(batch, func(a, b domain.Message) int { return compareIDs(a.ID, b.ID) })
		batch = slices.CompactFunc(batch, func(a, b domain.Message) bool { return a.ID == b.ID })
		out = append(out, batch)
		items = items[n:]
	}
	return out
}

func compareIDs(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// query is a random statistics query of the live scope at a random time.
func (w *statsWorld) query(rng *rand.Rand, stored []domain.Message) (stats.Query, time.Time) {
	now := w.anchor.Add(time.Duration(rng.Int64N(int64(32*time.Hour/time.Microsecond))) * time.Microsecond)
	if rng.IntN(2) == 0 { // around the latest writes, some not visible yet
		now = latestVisible(stored).Add(time.Duration(rng.Int64N(12_000_000)-8_000_000) * time.Microsecond)
	}
	now = domain.Micro(now)
	var from, to time.Time
	switch rng.IntN(3) {
	case 0: // to at now, over up to 27 hours
		to = now
		from = to.Add(-time.Duration(1+rng.Int64N(int64(27*time.Hour/time.Microsecond))) * time.Microsecond)
	case 1: // whole minutes
		from = w.anchor.Truncate(time.Minute).Add(time.Duration(rng.IntN(28*60)-27*60) * time.Minute)
		to = from.Add(time.Duration(1+rng.IntN(28*60)) * time.Minute)
	default:
		from = w.anchor.Add(-time.Duration(rng.Int64N(int64(27*time.Hour/time.Microsecond))) * time.Microsecond)
		to = from.Add(time.Duration(1+rng.Int64N(int64(3*time.Hour/time.Microsecond))) * time.Microsecond)
	}
	var usable []string
	for _, iv := range stats.Intervals {
		if statsQuery(scopeLive, from, to, iv.Name, domain.Filter{}).BucketCount() <= stats.MaxBuckets {
			usable = append(usable, iv.Name)
		}
	}
	var filter domain.Filter
	switch rng.IntN(12) {
	case 0:
		filter.StatusMin, filter.StatusMax = 400, 499
	case 1:
		filter.Method = "POST"
	case 2:
		filter.PathPrefix = "/v1/items/1"
	case 3:
		filter.Text = "payment declined"
	case 4:
		d := millis(20)
		filter.MinDuration = &d
	case 5:
		filter.Route = differentialRoutes[rng.IntN(len(differentialRoutes))]
	}
	if rng.IntN(3) == 0 {
		filter.Name = w.names[rng.IntN(len(w.names))]
	}
	q := statsQuery(scopeLive, from, to, usable[rng.IntN(len(usable))], filter)
	if oldest := now.Add(-time.Duration(rng.Int64N(int64(30*time.Hour/time.Microsecond))) * time.Microsecond); rng.IntN(3) == 0 && oldest.After(from) {
		q.Filter.From = oldest // narrowed to retention
	}
	return q, now
}

// AssertStats fails t unless got is q's statistics at now over msgs (of
// any scope) by the contract: stats.Builder's counts and rankings, each
// percentile between the durations of its neighbouring ranks (within 1 %
// past stats.ExactDurations). For a store's own statistics tests.
func AssertStats(t testing.TB, msgs []domain.Message, q stats.Query, now time.Time, got stats.Stats) {
	t.Helper()
	assertStats(t, msgs, q, now, got)
}

// StatsQuery is the statistics query of scope over [from, to) in buckets of
// interval (a name of stats.Intervals), filter's range set to the query's as
// the service sets it: for adapters' own statistics tests.
func StatsQuery(scope domain.Scope, from, to time.Time, interval string, filter domain.Filter) stats.Query {
	return statsQuery(scope, from, to, interval, filter)
}

// MessageSeries builds n messages of scope's application name, one every
// step from first, readable from their creation for the default retention:
// seven paths, the four status classes 200 to 500 in turn, durations of 1 to
// 50 ms but for one in nine. For adapters' own statistics tests.
func MessageSeries(tb testing.TB, scope domain.Scope, name string, n int, first time.Time, step time.Duration) []domain.Message {
	tb.Helper()
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = NewMessage(tb, scope, first.Add(time.Duration(i)*step), func(m *domain.Message) {
			m.Name = name
			m.Path = fmt.Sprintf("/v1/items/%d", i%7)
			m.StatusCode = 200 + 100*(i%4)
			m.Duration, m.HasDuration = time.Duration(1+i%50)*time.Millisecond, i%9 != 0
		})
	}
	return msgs
}

// notTallies are msgs but the tallies, which no read returns.
func notTallies(msgs []domain.Message) []domain.Message {
	return slices.DeleteFunc(slices.Clone(msgs), func(m domain.Message) bool { return m.Tally })
}
