package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

func statsQuery(t *testing.T, from, to time.Time, interval string) stats.Query {
	t.Helper()
	q, err := stats.ParseQuery(map[string][]string{
		"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "interval": {interval}}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestStatisticsScopesAndClampsTheCountedRange(t *testing.T) {
	retention := 24 * time.Hour
	store := &recordingStore{}
	st := newReader(store, retention).Statistics()
	from, to := testNow.Add(-48*time.Hour), testNow
	q := statsQuery(t, from, to, "1h")
	q.Scope = domain.Scope{Account: "other", Domain: domain.DomainTest}
	q.Filter.Method = "GET" // read from messages: the rollups do not answer it

	got, err := st.Compute(context.Background(), domain.Principal{Scope: acmeLive.Scope, Name: "shop"}, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(store.stats) != 1 {
		t.Fatalf("%d store queries, want 1", len(store.stats))
	}
	asked := store.stats[0]
	if asked.Scope != acmeLive.Scope || asked.Filter.Name != "shop" {
		t.Errorf("store asked for scope %+v name %q, want acme:live and the principal's application", asked.Scope, asked.Filter.Name)
	}
	if oldest := testNow.Add(-retention + time.Microsecond); !asked.Filter.From.Equal(oldest) {
		t.Errorf("counted from %v, want the oldest readable %v", asked.Filter.From, oldest)
	}
	if !asked.From.Equal(from) || !asked.To.Equal(to) || !got.From.Equal(from) || len(got.Buckets) != 48 {
		t.Errorf("range asked %v–%v, reply %v with %d buckets; want %v–%v in 48 buckets", asked.From, asked.To, got.From, len(got.Buckets), from, to)
	}
}

// A query the rollups answer (a range, an application) reaches back to the
// rollup retention, and marks where the messages' retention ends, on a
// minute: the store counts what is older from the rollups alone.
func TestStatisticsOfARangeTheRollupsAnswerReachBackToTheRollupRetention(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Retention, cfg.RollupRetention = 24*time.Hour, 10*24*time.Hour
	store := &recordingStore{}
	st := app.NewReader(store, cfg.Policy(), fixedClock{testNow}).Statistics()
	for name, tc := range map[string]struct {
		from, to         time.Time
		wantFrom, before time.Time
	}{
		"across the edge": {testNow.Add(-48 * time.Hour), testNow, testNow.Add(-48 * time.Hour),
			stats.AlignUp(testNow.Add(-24*time.Hour+time.Microsecond), time.Minute)},
		"wholly expired": {testNow.Add(-72 * time.Hour), testNow.Add(-48 * time.Hour), testNow.Add(-72 * time.Hour),
			stats.AlignUp(testNow.Add(-24*time.Hour+time.Microsecond), time.Minute)},
		"past the rollup retention": {testNow.Add(-20 * 24 * time.Hour), testNow, testNow.Add(-10*24*time.Hour + time.Microsecond),
			stats.AlignUp(testNow.Add(-24*time.Hour+time.Microsecond), time.Minute)},
		"within retention": {testNow.Add(-time.Hour), testNow, testNow.Add(-time.Hour), time.Time{}},
	} {
		store.stats = nil
		if _, err := st.Compute(context.Background(), acmeLive, statsQuery(t, tc.from, tc.to, "1d")); err != nil {
			t.Fatal(err)
		}
		if len(store.stats) != 1 {
			t.Fatalf("%s: %d store queries, want 1", name, len(store.stats))
		}
		asked := store.stats[0]
		if !asked.Filter.From.Equal(tc.wantFrom) || !asked.RollupsOnlyBefore.Equal(tc.before) {
			t.Errorf("%s: counted from %v, rollups alone before %v; want %v and %v", name,
				asked.Filter.From, asked.RollupsOnlyBefore, tc.wantFrom, tc.before)
		}
	}
}

func TestStatisticsOfAnotherApplicationOrAnExpiredRangeAreEmpty(t *testing.T) {
	store := &recordingStore{}
	cfg := app.DefaultConfig()
	cfg.Retention, cfg.RollupRetention = 24*time.Hour, time.Hour // rollups go with their messages
	st := app.NewReader(store, cfg.Policy(), fixedClock{testNow}).Statistics()
	other := statsQuery(t, testNow.Add(-time.Hour), testNow, "5m")
	other.Filter.Name = "billing"
	expired := statsQuery(t, testNow.Add(-72*time.Hour), testNow.Add(-48*time.Hour), "1h")
	for name, tc := range map[string]struct {
		principal domain.Principal
		q         stats.Query
	}{
		"another application":  {domain.Principal{Scope: acmeLive.Scope, Name: "shop"}, other},
		"range wholly expired": {acmeLive, expired},
	} {
		got, err := st.Compute(context.Background(), tc.principal, tc.q)
		if err != nil || got.Total.Count != 0 || len(got.Buckets) != tc.q.BucketCount() || got.TopPaths == nil {
			t.Errorf("%s: %+v, %v; want every bucket, all empty", name, got, err)
		}
	}
	if len(store.stats) != 0 {
		t.Errorf("the store was asked %d times", len(store.stats))
	}
}

func TestStatisticsRefuseAQueryWithoutBuckets(t *testing.T) {
	store := &recordingStore{}
	_, err := newReader(store, time.Hour).Statistics().Compute(context.Background(), acmeLive, stats.Query{})
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) || len(store.stats) != 0 {
		t.Errorf("a zero query gave %v after %d store calls; want a validation error and none", err, len(store.stats))
	}
}

// seedExport stores n messages of acme:live, one a second before testNow, named
// alternately shop and billing; it returns their ids newest first.
func seedExport(t *testing.T, store *memory.Store, n int) []string {
	t.Helper()
	msgs := make([]domain.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		at := testNow.Add(-time.Duration(i+1) * time.Second)
		name := "shop"
		if i%2 == 1 {
			name = "billing"
		}
		ids[i] = fmt.Sprintf("01890000-0000-7000-8000-%012d", n-i)
		msgs[i] = domain.Message{ID: ids[i], Reference: fmt.Sprintf("msg_%012d", i), Account: "acme", Domain: domain.DomainLive,
			Name: name, Method: "GET", Path: "/orders", StatusCode: 200,
			CreatedAt: at, UpdatedAt: at, VisibleAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}
	if err := store.Append(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestExportPagesNewestFirstUpToMax(t *testing.T) {
	store := memory.New()
	ids := seedExport(t, store, 2*app.ExportPageSize+10)
	exporter := app.NewReader(store, app.DefaultConfig().Policy(), fixedClock{testNow}).Exporter()
	for _, tc := range []struct {
		name      string
		principal domain.Principal
		max       int
		want      []string
	}{
		{"everything, in three pages", acmeLive, domain.MaxExport, ids},
		{"cut at max inside a page", acmeLive, app.ExportPageSize + 7, ids[:app.ExportPageSize+7]},
		{"a portal sees its application", domain.Principal{Scope: acmeLive.Scope, Name: "billing"}, domain.MaxExport, everyOther(ids[1:])},
		{"another scope sees nothing", domain.Principal{Scope: domain.Scope{Account: "acme", Domain: domain.DomainTest}}, 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			pages := 0
			res, err := exporter.Export(context.Background(), tc.principal, domain.ExportQuery{Max: tc.max}, func(page []domain.Message) error {
				pages++
				if len(page) > app.ExportPageSize {
					t.Errorf("a page of %d messages, more than %d", len(page), app.ExportPageSize)
				}
				for _, m := range page {
					got = append(got, m.ID)
				}
				return nil
			})
			if err != nil || res.Written != len(got) || !res.ExpiredBefore.IsZero() {
				t.Fatalf("Export = %+v, %v after handing over %d", res, err, len(got))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("exported %d ids, want %d newest first (first %.60v)", len(got), len(tc.want), got)
			}
		})
	}
}

func everyOther(ids []string) []string {
	var out []string
	for i := 0; i < len(ids); i += 2 {
		out = append(out, ids[i])
	}
	return out
}

func TestExportStopsAtTheFirstError(t *testing.T) {
	store := memory.New()
	seedExport(t, store, app.ExportPageSize+1)
	exporter := app.NewExporter(store, app.DefaultConfig().Policy(), fixedClock{testNow})
	stop := errors.New("client gone")
	calls := 0
	res, err := exporter.Export(context.Background(), acmeLive, domain.ExportQuery{Max: domain.MaxExport}, func([]domain.Message) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 || res.Written != 0 {
		t.Errorf("Export = %+v, %v after %d pages; want the writer's error after the first", res, err, calls)
	}

	failing := &recordingStore{err: errors.New("store down")}
	if _, err := app.NewExporter(failing, app.DefaultConfig().Policy(), fixedClock{testNow}).Export(
		context.Background(), acmeLive, domain.ExportQuery{Max: 5}, func([]domain.Message) error { return nil }); !errors.Is(err, failing.err) {
		t.Errorf("a failing store gave %v", err)
	}
}
