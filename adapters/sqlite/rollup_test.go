package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// The statistics the rollups answer equal stats.Builder's over the
// messages themselves, for random messages (some not visible yet, some
// expired, some appended twice, over two UTC days) and random queries of a
// scope or one application whose range edges fall inside minutes; and the
// rollups were used.
func TestRollupStatsEqualStatsBuilder(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	s := mustOpen(t, sqlite.Config{Dir: t.TempDir()})
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	base := midnight.Add(-90 * time.Minute) // the range straddles two day files
	now := base.Add(3 * time.Hour)
	names := []string{"shop", "billing", "admin"}
	other := domain.Scope{Account: "globex", Domain: domain.DomainLive}
	var all []domain.Message
	for range 400 {
		sc := scope
		if rng.IntN(10) == 0 {
			sc = other
		}
		created := base.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))
		m := conformance.NewMessage(t, sc, created, func(m *domain.Message) {
			m.Name = names[rng.IntN(len(names))]
			m.Path = fmt.Sprintf("/v1/items/%d?x=%d", rng.IntN(5), rng.IntN(3))
			m.StatusCode = []int{200, 201, 302, 404, 500}[rng.IntN(5)]
			if rng.IntN(4) > 0 {
				m.Duration, m.HasDuration = time.Duration(rng.Int64N(2_000_000))*time.Microsecond, true
			}
			m.VisibleAt = created.Add(time.Duration(rng.Int64N(int64(10 * time.Minute))))
			m.ExpiresAt = created.Add(2*time.Hour + time.Duration(rng.Int64N(int64(2*time.Hour))))
		})
		all = append(all, m)
	}
	for start := 0; start < len(all); {
		end := min(len(all), start+1+rng.IntN(40))
		if err := s.Append(opCtx(t), all[start:end]); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 { // a retry: nothing counts twice
			if err := s.Append(opCtx(t), all[start:end]); err != nil {
				t.Fatal(err)
			}
		}
		start = end
	}

	var trace daystats.Trace // of every call below
	ctx := daystats.WithTrace(opCtx(t), &trace)
	for i := range 60 {
		at := now.Add(-time.Duration(rng.Int64N(int64(90 * time.Minute))))
		from := base.Add(time.Duration(rng.Int64N(int64(time.Hour))) + time.Duration(rng.IntN(60))*time.Second)
		to := at.Add(-time.Duration(rng.Int64N(int64(30 * time.Minute))))
		if !from.Before(to) {
			continue
		}
		values := map[string][]string{"from": {domain.FormatTime(from)}, "to": {domain.FormatTime(to)}}
		if i%3 == 0 {
			values["name"] = []string{names[rng.IntN(len(names))]}
		}
		if i%4 == 0 {
			values["interval"] = []string{"1h"}
		}
		q, err := stats.ParseQuery(values, at)
		if err != nil {
			t.Fatal(err)
		}
		q.Scope = scope
		if i%5 == 0 { // the service narrows the filter to retention
			q.Filter.From = q.From.Add(time.Duration(rng.Int64N(int64(20 * time.Minute))))
		}
		if !q.RollupsAnswer() {
			t.Fatalf("query %d: %v is not one the rollups answer", i, values)
		}
		want := stats.NewBuilder(q)
		for _, m := range all {
			if m.Scope() == q.Scope && m.Readable(at) && q.Filter.Matches(m) {
				want.Add(stats.SampleOf(m))
			}
		}
		got, err := s.Stats(ctx, q, at)
		if err != nil {
			t.Fatal(err)
		}
		if w := want.Stats(); !reflect.DeepEqual(got, w) {
			t.Fatalf("query %d (%v at %s): the store's statistics\n%+v\ndiffer from StatsBuilder's\n%+v", i, values, domain.FormatTime(at), got, w)
		}
	}
	if trace.Engine.Rollups == 0 {
		t.Fatal("no minute was answered from a rollup")
	}
	t.Logf("%d minutes answered from rollups", trace.Engine.Rollups)
}
