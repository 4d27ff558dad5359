package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// Statistics with a q of one word come from the word index and the
// statistics index alone (no message is read whole) and equal
// domain.StatsBuilder's over the messages domain.Search finds, for a word of
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
		before := sqlite.StatsMessagesRead()
		got := statsEqualBuilders(t, s, all, at, map[string][]string{"q": {tc.q},
			"from": {yesterday.Format(time.RFC3339)}, "to": {yesterday.Add(24 * time.Hour).Format(time.RFC3339)}})
		if read := sqlite.StatsMessagesRead() - before; (read > 0) != tc.checked {
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

// Whole hours kept between calls answer the next call over them, and stop
// answering once a message is added to the hour (a backfill), the others
// still answering: every answer equals StatsBuilder's.
func TestStatsCountWholeHoursFromTheCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 26))
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	now := time.Now().UTC()
	yesterday := now.Truncate(24 * time.Hour).Add(-24 * time.Hour)
	var all []domain.Message
	// At most domain.ExactDurations durations, so percentiles compare exactly.
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
	check := func(name string) domain.Stats {
		t.Helper()
		values := map[string][]string{"from": {yesterday.Format(time.RFC3339)}, "to": {yesterday.Add(24 * time.Hour).Format(time.RFC3339)}}
		if name != "" {
			values["name"] = []string{name}
		}
		return statsEqualBuilders(t, s, all, at, values)
	}
	kept := func(name string, want int64) {
		t.Helper()
		before := sqlite.KeptHours()
		check(name)
		if n := sqlite.KeptHours() - before; n != want {
			t.Fatalf("name %q: %d hours counted from the cache, not %d", name, n, want)
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
	before := sqlite.KeptHours()
	if top := check("").TopPaths[0]; top.Key != "/v1/backfill" {
		t.Fatalf("after the backfill the top path is %+v", top)
	}
	if n := sqlite.KeptHours() - before; n != 0 {
		t.Fatalf("after a backfill into every hour, %d hours counted from the cache", n)
	}
	kept("billing", 0)
	kept("billing", 24)
}

// statsEqualBuilders returns s's statistics of scope for the query values at
// at, and fails unless they equal domain.StatsBuilder's over the messages of
// all readable then.
func statsEqualBuilders(t *testing.T, s *sqlite.Store, all []domain.Message, at time.Time, values map[string][]string) domain.Stats {
	t.Helper()
	q, err := domain.ParseStatsQuery(values, at)
	if err != nil {
		t.Fatal(err)
	}
	q.Scope = scope
	want := domain.NewStatsBuilder(q)
	for _, m := range all {
		if m.Readable(at) && q.Filter.Matches(m) {
			want.Add(domain.SampleOf(m))
		}
	}
	got, err := s.Stats(opCtx(t), q, at)
	if err != nil {
		t.Fatal(err)
	}
	if w := want.Stats(); !reflect.DeepEqual(got, w) {
		t.Fatalf("%v: the store's statistics\n%+v\ndiffer from StatsBuilder's\n%+v", values, got, w)
	}
	return got
}
