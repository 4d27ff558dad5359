package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Statistics with a q of one word come from the word index and the
// statistics index alone (no message is read whole) and equal
// stats.Builder's over the messages domain.Search finds, for a word of
// few messages (read by seq) and of many ("omni", more than the store reads
// by seq); a q of two words is still checked on each message, and equal too.
func TestStatsOfOneWordFromTheIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	now := time.Now().UTC()
	// One day file: a day's word index decides how its messages are read.
	yesterday := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	vocabulary := []string{"alpha", "Beta", "gamma", "ord_8f7d", "example.com", "zürich"}
	var all []domain.Message
	const omniFrom = 2600 // of the messages holding "omni", more than maxWordCandidates
	for i := range 4000 {
		created := yesterday.Add(2*time.Hour + time.Duration(rng.Int64N(int64(20*time.Hour))))
		m := conformance.NewMessage(t, scope, created, func(m *domain.Message) {
			var words []string
			for range rng.IntN(4) {
				words = append(words, vocabulary[rng.IntN(len(vocabulary))])
			}
			if i%3 != 0 {
				words = append(words, "omni")
			}
			m.Response.Body = `{"note":"` + strings.Join(words, " ") + `"}`
			m.StatusCode = []int{200, 404, 500}[rng.IntN(3)]
			m.Duration, m.HasDuration = time.Duration(rng.Int64N(900_000))*time.Microsecond, rng.IntN(4) > 0
		})
		all = append(all, m)
	}
	if err := s.Append(opCtx(t), all); err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Minute)
	for _, tc := range []struct {
		q       string
		checked bool // read whole and checked with domain.Search
	}{
		{"alpha", false}, {"BETA", false}, {"ord_8f7d", false}, {"example.com", false}, {"ZÜRICH", false},
		{"omni", false}, {"absent", false}, {"alpha beta", true}, {"ord_8f7d\"", true},
	} {
		got, trace := statsEqualBuilders(t, s, all, at, map[string][]string{"q": {tc.q},
			"from": {yesterday.Format(time.RFC3339)}, "to": {yesterday.Add(24 * time.Hour).Format(time.RFC3339)}})
		if read := trace.MessagesRead; (read > 0) != tc.checked {
			t.Errorf("q=%q: %d messages read whole; want them read: %v", tc.q, read, tc.checked)
		}
		if tc.q != "absent" && got.Total.Count == 0 {
			t.Errorf("q=%q counted nothing: the test proves little", tc.q)
		}
		if tc.q == "omni" && got.Total.Count < omniFrom {
			t.Errorf("q=omni counted %d: fewer than a word of many", got.Total.Count)
		}
	}
}

// Statistics with a q of a word nearly every message holds count a day as
// its rollups less the messages lacking the word, and equal a
// stats.RollupBuilder's over the messages holding it (stats.Builder's within
// its bounds: TestRollupStatsAreStatsBuilders); other filters, and a word of
// few messages, walk and equal stats.Builder's. Where a route's durations
// cannot be told as the rollups less the rest, every day is walked and the
// answer is stats.Builder's.
func TestStatsOfAWordMostMessagesHold(t *testing.T) {
	// Reads by seq are taken whatever a lookup costs here (the race detector,
	// a loaded machine): the test is of their answers.
	warm := sqlite.Config{Stats: daystats.Config{Probe: daystats.FixedProbe(true)}}
	rng := rand.New(rand.NewPCG(27, 11))
	now := time.Now().UTC()
	yesterday := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	at := now.Add(time.Minute)
	// from and to inside a minute: the rollups of the edges are refused, and
	// their messages holding the word walked.
	from, to := yesterday.Add(3*time.Hour+17*time.Minute+30*time.Second), yesterday.Add(21*time.Hour+2*time.Minute+15*time.Second)
	// The first messages are in those minutes, in the range.
	edges := []time.Time{from.Add(5 * time.Second), from.Add(20 * time.Second), to.Add(-10 * time.Second), to.Add(-3 * time.Second)}
	values := func(more ...string) map[string][]string {
		v := map[string][]string{"q": {"omni"}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
		for i := 0; i+1 < len(more); i += 2 {
			if more[i+1] != "" {
				v[more[i]] = []string{more[i+1]}
			}
		}
		return v
	}
	store := func(n int, lacks func(i int, m *domain.Message) bool) (*sqlite.Store, []domain.Message) {
		cfg := warm
		cfg.Dir = t.TempDir()
		s := mustOpen(t, cfg)
		var all []domain.Message
		for i := range n {
			created := yesterday.Add(2*time.Hour + time.Duration(rng.Int64N(int64(20*time.Hour))))
			if i < len(edges) {
				created = edges[i]
			}
			all = append(all, conformance.NewMessage(t, scope, created, func(m *domain.Message) {
				m.Name = []string{"shop", "billing", "search"}[rng.IntN(3)]
				m.Path = fmt.Sprintf("/v1/orders/%d", rng.IntN(300))
				m.Route = []string{"/v1/orders/{id}", "/v1/carts", ""}[rng.IntN(3)]
				m.StatusCode = []int{200, 404, 500}[rng.IntN(3)]
				m.Duration, m.HasDuration = time.Duration(rng.Int64N(900_000))*time.Microsecond, rng.IntN(3) == 0
				m.Response.Body = `{"note":"omni"}`
				if rng.IntN(40) == 0 {
					m.Response.Body = `{"note":"rare"}`
				}
				if lacks(i, m) {
					m.Response.Body = `{"note":"other"}`
				}
			}))
			// Tallies, what ingest rules dropped: found by a q in their path
			// alone, in every read of the plan.
			switch i % 13 {
			case 7:
				all[i].Path = fmt.Sprintf("/v1/omni/%d", i%5)
				all[i] = all[i].AsTally()
			case 8:
				all[i] = all[i].AsTally()
			}
		}
		if err := s.Append(opCtx(t), all); err != nil {
			t.Fatal(err)
		}
		return s, all
	}
	s, all := store(3000, func(i int, m *domain.Message) bool {
		return i%25 == 0 || i < len(edges) && i%2 == 0 || m.Route == "/v1/carts" && m.Name == "search" && i%3 == 0
	})
	// A word all messages and most tallies hold: the rollups less the rest,
	// tallies of it; more words: each read whole, and the tallies matched.
	for _, name := range []string{"", "shop"} {
		if _, trace := statsEqualRollupBuilder(t, s, all, at, values("q", "orders", "name", name)); trace.DaysLessTheRest != 1 {
			t.Errorf("q orders, name %q: %d day files counted less the rest, want 1", name, trace.DaysLessTheRest)
		}
	}
	statsEqualBuilders(t, s, all, at, values("q", "v1 omni"))
	for _, name := range []string{"", "billing"} {
		got, trace := statsEqualRollupBuilder(t, s, all, at, values("name", name))
		if n := trace.DaysLessTheRest; n != 1 || got.Total.Count < 500 {
			t.Errorf("name %q: %d day files counted less the rest, %d messages; want 1, and hundreds", name, n, got.Total.Count)
		}
	}
	// The day's rollups are counted through the engine's cache, as the
	// view without q is: the whole hours of the range (04:00 to 21:00) the
	// first call kept answer the next.
	if _, trace := statsEqualRollupBuilder(t, s, all, at, values()); trace.Engine.KeptHours != 17 {
		t.Errorf("a second call counted %d hours from the engine's cache; want the range's 17 whole hours", trace.Engine.KeptHours)
	}
	for _, v := range []map[string][]string{values("status_code", "404"), values("q", "rare")} {
		_, trace := statsEqualBuilders(t, s, all, at, v)
		if n := trace.DaysLessTheRest; n != 0 {
			t.Errorf("%v: %d day files counted less the rest; the rollups cannot answer it", v, n)
		}
	}
	// On a disk whose pages are never in memory, reading by seq would cost
	// more than the walk: every day is walked.
	t.Run("cold", func(t *testing.T) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		cold := mustOpen(t, sqlite.Config{Dir: s.Dir(), Stats: daystats.Config{Probe: daystats.FixedProbe(false)}})
		_, trace := statsEqualBuilders(t, cold, all, at, values())
		if n := trace.DaysLessTheRest; n != 0 {
			t.Errorf("%d day files counted less the rest on a cold disk", n)
		}
	})
	// A word of a quarter of 9,000 messages, more than a word of few: read
	// by seq, and equal to stats.Builder's.
	s, all = store(9000, func(i int, m *domain.Message) bool { return i%4 != 0 })
	got, trace := statsEqualBuilders(t, s, all, at, values())
	if got.Total.Count < 1500 {
		t.Errorf("a quarter of 9,000 messages counted %d", got.Total.Count)
	}
	if n := trace.DaysBySeq; n != 1 {
		t.Errorf("%d day files read by seq; want 1", n)
	}
	// One route of 800 durations, 300 of them held: a sketch cannot give the
	// 300 back exactly.
	s, all = store(3000, func(i int, m *domain.Message) bool {
		if i < 800 {
			m.Route, m.HasDuration = "/v1/big", true
			return i >= 300
		}
		return false
	})
	_, trace = statsEqualBuilders(t, s, all, at, values())
	if n := trace.DaysLessTheRest; n != 1 {
		t.Errorf("%d day files counted less the rest before the walk; want 1", n)
	}
}

// A word every message of a day holds leaves no message to take out of the
// day's rollups: the day is counted from them alone, equal to
// stats.RollupBuilder's (the probe of the lacking messages once divided by
// their number, zero, and the call panicked).
func TestStatsOfAWordEveryMessageHolds(t *testing.T) {
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	now := time.Now().UTC()
	yesterday := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	var all []domain.Message
	for i := range 2400 { // more than a word of few
		all = append(all, conformance.NewMessage(t, scope, yesterday.Add(time.Duration(i)*30*time.Second), func(m *domain.Message) {
			m.Response.Body = `{"note":"omni"}`
		}))
	}
	if err := s.Append(opCtx(t), all); err != nil {
		t.Fatal(err)
	}
	got, _ := statsEqualRollupBuilder(t, s, all, now.Add(time.Minute), map[string][]string{"q": {"omni"},
		"from": {yesterday.Format(time.RFC3339)}, "to": {yesterday.Add(24 * time.Hour).Format(time.RFC3339)}})
	if got.Total.Count != int64(len(all)) {
		t.Errorf("counted %d, want the %d stored", got.Total.Count, len(all))
	}
}

// Whole hours kept between calls answer the next call over them, and stop
// answering once a message is added to the hour (a backfill), the others
// still answering: every answer equals stats.Builder's.
func TestStatsCountWholeHoursFromTheCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 26))
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	now := time.Now().UTC()
	yesterday := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	var all []domain.Message
	// At most stats.ExactDurations durations, so percentiles compare exactly.
	add := func(n int, withDurations bool, path func(i int) string) {
		t.Helper()
		var batch []domain.Message
		for i := range n {
			created := yesterday.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
			batch = append(batch, conformance.NewMessage(t, scope, created, func(m *domain.Message) {
				m.Name = []string{"shop", "billing", "search"}[rng.IntN(3)]
				m.Path = path(i)
				m.StatusCode = []int{200, 404, 500}[rng.IntN(3)]
				m.Duration, m.HasDuration = time.Duration(rng.Int64N(900_000))*time.Microsecond, withDurations
			}))
		}
		if err := s.Append(opCtx(t), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	add(480, true, func(i int) string { return fmt.Sprintf("/v1/orders/%d", rng.IntN(400)) })
	at := now.Add(time.Minute)
	check := func(name string) (stats.Stats, daystats.Trace) {
		t.Helper()
		values := map[string][]string{"from": {yesterday.Format(time.RFC3339)}, "to": {yesterday.Add(24 * time.Hour).Format(time.RFC3339)}}
		if name != "" {
			values["name"] = []string{name}
		}
		return statsEqualBuilders(t, s, all, at, values)
	}
	kept := func(name string, want int) {
		t.Helper()
		if _, trace := check(name); trace.Engine.KeptHours != want {
			t.Fatalf("name %q: %d hours counted from the cache, not %d", name, trace.Engine.KeptHours, want)
		}
	}
	for _, name := range []string{"", "billing"} {
		check(name)
		kept(name, 24)
	}
	// One message in one hour: that hour is read again, the others kept.
	one := conformance.NewMessage(t, scope, yesterday.Add(5*time.Hour+time.Minute), func(m *domain.Message) { m.Name = "billing" })
	if err := s.Append(opCtx(t), []domain.Message{one}); err != nil {
		t.Fatal(err)
	}
	all = append(all, one)
	kept("", 23)
	kept("", 24)
	// A backfill into every hour: the cache must not answer for them.
	add(240, false, func(i int) string { return "/v1/backfill" })
	got, trace := check("")
	if top := got.TopPaths[0]; top.Key != "/v1/backfill" {
		t.Fatalf("after the backfill the top path is %+v", top)
	}
	if n := trace.Engine.KeptHours; n != 0 {
		t.Fatalf("after a backfill into every hour, %d hours counted from the cache", n)
	}
	kept("billing", 0)
	kept("billing", 24)
}

// statsEqualBuilders returns s's statistics of scope for the query values at
// at, and fails unless they equal stats.Builder's over the messages of
// all readable then.
func statsEqualBuilders(t *testing.T, s *sqlite.Store, all []domain.Message, at time.Time, values map[string][]string) (stats.Stats, daystats.Trace) {
	t.Helper()
	return statsEqualTo(t, s, all, at, values, "StatsBuilder's", func(q stats.Query) statsCounter { return stats.NewBuilder(q) })
}

// statsEqualRollupBuilder is statsEqualBuilders with a
// stats.RollupBuilder given each message.
func statsEqualRollupBuilder(t *testing.T, s *sqlite.Store, all []domain.Message, at time.Time, values map[string][]string) (stats.Stats, daystats.Trace) {
	t.Helper()
	return statsEqualTo(t, s, all, at, values, "RollupStatsBuilder's", func(q stats.Query) statsCounter { return stats.NewRollupBuilder(q, at) })
}

// statsCounter is a builder of statistics from samples.
type statsCounter interface {
	Add(stats.Sample)
	Stats() stats.Stats
}

// statsEqualTo returns s's statistics of scope for the query values at at,
// and the trace of the call, and fails unless they equal those of the
// builder (named whose) given each message of all readable then that the
// query's filter matches.
func statsEqualTo(t *testing.T, s *sqlite.Store, all []domain.Message, at time.Time, values map[string][]string,
	whose string, builder func(stats.Query) statsCounter) (stats.Stats, daystats.Trace) {
	t.Helper()
	q, err := stats.ParseQuery(values, at)
	if err != nil {
		t.Fatal(err)
	}
	q.Scope = scope
	want := builder(q)
	for _, m := range all {
		if m.Readable(at) && q.Filter.Matches(m) {
			want.Add(stats.SampleOf(m))
		}
	}
	var trace daystats.Trace
	got, err := s.Stats(daystats.WithTrace(opCtx(t), &trace), q, at)
	if err != nil {
		t.Fatal(err)
	}
	if w := want.Stats(); !reflect.DeepEqual(got, w) {
		t.Fatalf("%v: the store's statistics\n%+v\ndiffer from %s\n%+v", values, got, whose, w)
	}
	return got, trace
}

// WarmStats keeps the default view's hours of the busiest scopes, at most
// eight: the next call over the view counts them from the cache, equal to
// stats.Builder's; the ninth scope's first call reads every minute.
func TestWarmStatsKeepsTheBusiestScopes(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 9))
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	at := time.Now().UTC().Add(time.Minute)
	scopes := []domain.Scope{scope}
	for i := 1; i < 9; i++ {
		scopes = append(scopes, domain.Scope{Account: fmt.Sprintf("account-%d", i), Domain: scope.Domain})
	}
	var all []domain.Message
	for i, sc := range scopes {
		var batch []domain.Message
		for range (len(scopes) - i) * 60 { // the last scope writes the fewest minutes
			created := at.Add(-time.Minute - time.Duration(rng.Int64N(int64(23*time.Hour))))
			batch = append(batch, conformance.NewMessage(t, sc, created, func(m *domain.Message) {
				m.Path = fmt.Sprintf("/v1/orders/%d", rng.IntN(50))
			}))
		}
		if err := s.Append(opCtx(t), batch); err != nil {
			t.Fatal(err)
		}
		if sc == scope {
			all = batch
		}
	}
	if err := s.WarmStats(opCtx(t), at); err != nil {
		t.Fatal(err)
	}
	if _, trace := statsEqualBuilders(t, s, all, at, map[string][]string{}); trace.Engine.KeptHours < 22 {
		t.Errorf("after WarmStats the busiest scope's first call counted %d hours from the cache; want the day's whole hours", trace.Engine.KeptHours)
	}
	q, err := stats.ParseQuery(map[string][]string{}, at)
	if err != nil {
		t.Fatal(err)
	}
	q.Scope = scopes[len(scopes)-1]
	var trace daystats.Trace
	if _, err := s.Stats(daystats.WithTrace(opCtx(t), &trace), q, at); err != nil {
		t.Fatal(err)
	}
	if n := trace.Engine.KeptHours; n != 0 {
		t.Errorf("the ninth scope's first call counted %d hours from the cache; WarmStats keeps eight", n)
	}
}
