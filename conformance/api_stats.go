package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

const apiStatsText = "successfully computed statistics"

// stats reads GET /v1/stats with query, checks the reply's shape and returns
// its data.
func (e *apiEnv) stats(t *testing.T, key APIKey, query url.Values) map[string]any {
	t.Helper()
	target := "/v1/stats"
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r := e.get(t, key, target)
	r.wantOK(t, apiStatsText, "data")
	data := apiMust[map[string]any](t, r.body, "data")
	keys := []string{"from", "to", "interval", "total", "buckets", "top_paths", "top_names", "top_routes"}
	if _, ok := data["rollups_only_before"]; ok { // part of the range older than retention
		keys = append(keys, "rollups_only_before")
	}
	apiWantKeys(t, data, "", keys...)
	for _, key := range []string{"from", "to", "rollups_only_before"} {
		if _, ok := data[key]; !ok {
			continue
		}
		if s := apiMust[string](t, data, key); !apiTimePattern.MatchString(s) {
			t.Errorf("data.%s %q is not a timestamp with six fractional digits", key, s)
		}
	}
	apiCheckStatsBucket(t, data, "total", false)
	var sum, durations int
	for i := range apiMust[[]any](t, data, "buckets") {
		path := fmt.Sprintf("buckets.%d", i)
		apiCheckStatsBucket(t, data, path, true)
		sum += apiInt(t, data, path+".count")
		if d, _ := apiAt(data, path+".duration_ms"); d != nil {
			durations += apiInt(t, data, path+".duration_ms.count")
		}
	}
	if total := apiInt(t, data, "total.count"); sum != total {
		t.Errorf("the buckets count %d messages, the total %d: %s", sum, total, apiShow(data))
	}
	if d, _ := apiAt(data, "total.duration_ms"); d != nil && apiInt(t, data, "total.duration_ms.count") != durations ||
		d == nil && durations != 0 {
		t.Errorf("the buckets hold %d durations, the total %v: %s", durations, d, apiShow(data))
	}
	for _, rank := range []struct {
		list, key string
		max       int
	}{{"top_paths", "path", stats.TopPaths}, {"top_names", "name", stats.TopNames}, {"top_routes", "route", stats.TopRoutes}} {
		items := apiMust[[]any](t, data, rank.list)
		if len(items) > rank.max {
			t.Errorf("%s holds %d entries, more than %d", rank.list, len(items), rank.max)
		}
		for i := range items {
			path := fmt.Sprintf("%s.%d", rank.list, i)
			if rank.list == "top_routes" {
				apiWantKeys(t, data, path, rank.key, "count", "errors", "duration_ms")
			} else {
				apiWantKeys(t, data, path, rank.key, "count", "errors")
			}
			apiMust[string](t, data, path+"."+rank.key)
			if n, errs := apiInt(t, data, path+".count"), apiInt(t, data, path+".errors"); n < 1 || errs < 0 || errs > n {
				t.Errorf("%s has count %d and errors %d", path, n, errs)
			}
		}
	}
	return data
}

// apiCheckStatsBucket checks one bucket (or the total) of a statistics reply.
func apiCheckStatsBucket(t *testing.T, data map[string]any, path string, hasStart bool) {
	t.Helper()
	keys := []string{"count", "dropped", "status", "duration_ms"}
	if hasStart {
		keys = append(keys, "start")
		if s := apiMust[string](t, data, path+".start"); !apiTimePattern.MatchString(s) {
			t.Errorf("%s.start %q is not a timestamp with six fractional digits", path, s)
		}
	}
	apiWantKeys(t, data, path, keys...)
	apiWantKeys(t, data, path+".status", "1xx", "2xx", "3xx", "4xx", "5xx")
	classes := 0
	for _, class := range []string{"1xx", "2xx", "3xx", "4xx", "5xx"} {
		classes += apiInt(t, data, path+".status."+class)
	}
	if count := apiInt(t, data, path+".count"); classes != count {
		t.Errorf("%s counts %d messages but %d by status class", path, count, classes)
	}
	if dropped := apiInt(t, data, path+".dropped"); dropped < 0 || dropped > apiInt(t, data, path+".count") {
		t.Errorf("%s.dropped is %d: from 0 to the count", path, dropped)
	}
	if d, _ := apiAt(data, path+".duration_ms"); d != nil {
		apiWantKeys(t, data, path+".duration_ms", "count", "p50", "p95", "p99")
		if n := apiInt(t, data, path+".duration_ms.count"); n < 1 || n > apiInt(t, data, path+".count") {
			t.Errorf("%s.duration_ms.count is %d: at least 1 (else null) and at most the messages", path, n)
		}
	}
}

// apiStatsMessage is one seeded message of the statistics tests.
type apiStatsMessage struct {
	offset time.Duration // after the range's start
	path   string
	name   string
	status int
	ms     float64 // < 0: no duration
}

// apiWantBucket compares a bucket (or the total) with the messages it must
// count; percentiles must lie between the ranks the contract allows.
func apiWantBucket(t *testing.T, data map[string]any, path string, msgs []apiStatsMessage) {
	t.Helper()
	var status [5]int
	var durations []float64
	for _, m := range msgs {
		status[m.status/100-1]++
		if m.ms >= 0 {
			durations = append(durations, m.ms)
		}
	}
	if got := apiInt(t, data, path+".count"); got != len(msgs) {
		t.Errorf("%s.count is %d, want %d: %s", path, got, len(msgs), apiShow(apiMust[map[string]any](t, data, path)))
	}
	for i, class := range []string{"1xx", "2xx", "3xx", "4xx", "5xx"} {
		if got := apiInt(t, data, path+".status."+class); got != status[i] {
			t.Errorf("%s.status.%s is %d, want %d", path, class, got, status[i])
		}
	}
	apiWantDurations(t, data, path, durations)
}

// apiWantDurations compares the duration_ms of a bucket, total or route with
// the durations it must summarise: null when there are none, else their
// count and percentiles between the ranks the contract allows.
func apiWantDurations(t *testing.T, data map[string]any, path string, durations []float64) {
	t.Helper()
	d, _ := apiAt(data, path+".duration_ms")
	if len(durations) == 0 {
		if d != nil {
			t.Errorf("%s.duration_ms is %s, want null: no message of it has a duration", path, apiShow(d))
		}
		return
	}
	if d == nil {
		t.Fatalf("%s.duration_ms is null, want %d durations", path, len(durations))
	}
	if got := apiInt(t, data, path+".duration_ms.count"); got != len(durations) {
		t.Errorf("%s.duration_ms.count is %d, want %d", path, got, len(durations))
	}
	slices.Sort(durations)
	for _, p := range []struct {
		key string
		p   float64
	}{{"p50", 0.50}, {"p95", 0.95}, {"p99", 0.99}} {
		got := apiFloat(t, data, path+".duration_ms."+p.key)
		rank := p.p * float64(len(durations)-1)
		lo, hi := durations[int(math.Floor(rank))], durations[int(math.Ceil(rank))]
		const slack = 0.0011 // rounding to the microsecond
		if got < lo-slack || got > hi+slack {
			t.Errorf("%s.duration_ms.%s is %v, want between %v and %v (ranks of %v)", path, p.key, got, lo, hi, durations)
		}
	}
}

func apiFloat(t *testing.T, v any, path string) float64 {
	t.Helper()
	f, err := apiMust[json.Number](t, v, path).Float64()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// apiWantRanking compares top_paths or top_names with want: key, count, errors.
func apiWantRanking(t *testing.T, data map[string]any, list, key string, want [][3]any) {
	t.Helper()
	items := apiMust[[]any](t, data, list)
	var got [][3]any
	for i := range items {
		path := fmt.Sprintf("%s.%d", list, i)
		got = append(got, [3]any{apiMust[string](t, data, path+"."+key), apiInt(t, data, path+".count"), apiInt(t, data, path+".errors")})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s is %v, want %v (count descending, then %s ascending)", list, got, want, key)
	}
}

func apiTestStats(t *testing.T, s apiSuite) {
	e := s.start(t)
	now := e.clock.Now()
	from := now.UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	to := from.Add(3 * time.Hour) // at or before now
	inRange := []apiStatsMessage{
		{10 * time.Minute, "/v1/orders?page=2", "shop", 200, 10},
		{20 * time.Minute, "/v1/orders", "shop", 201, 30},
		{30 * time.Minute, "/v1/orders", "shop", 404, 20},
		{40 * time.Minute, "/v1/users", "billing", 500, -1},
		{65 * time.Minute, "/v1/users", "shop", 302, 100.5},
		{110 * time.Minute, "/health", "billing", 101, -1},
	}
	outside := []apiStatsMessage{
		{-time.Minute, "/v1/orders", "shop", 200, 1},
		{3 * time.Hour, "/v1/orders", "shop", 200, 1}, // at to: [from, to) leaves it out
	}
	var items []any
	for _, m := range slices.Concat(inRange, outside) {
		edits := map[string]any{"path": m.path, "name": m.name, "response.status_code": m.status}
		if m.ms >= 0 {
			edits["duration_ms"] = m.ms
		}
		items = append(items, apiItem(from.Add(m.offset), edits))
	}
	ids := apiIDs(e.ingestBatch(t, apiAcmeLive, items, len(items)))
	e.reveal(t, apiAcmeLive, ids...)
	// Submitted now and not yet visible: never counted.
	e.ingestOne(t, apiAcmeLive, apiItem(now.Add(-time.Second), map[string]any{"name": "late"}))

	t.Run("hourly over three hours", func(t *testing.T) {
		data := e.stats(t, apiAcmeLive, url.Values{"from": {apiRFC3339(from)}, "to": {apiRFC3339(to)}, "interval": {"1h"}})
		if data["from"] != apiWire(from) || data["to"] != apiWire(to) || data["interval"] != "1h" {
			t.Errorf("from %v to %v interval %v, want %s to %s by 1h", data["from"], data["to"], data["interval"], apiWire(from), apiWire(to))
		}
		buckets := apiMust[[]any](t, data, "buckets")
		if len(buckets) != 3 {
			t.Fatalf("%d buckets, want 3: %s", len(buckets), apiShow(buckets))
		}
		for i := range buckets {
			if got := apiMust[string](t, data, fmt.Sprintf("buckets.%d.start", i)); got != apiWire(from.Add(time.Duration(i)*time.Hour)) {
				t.Errorf("bucket %d starts at %s, want %s", i, got, apiWire(from.Add(time.Duration(i)*time.Hour)))
			}
		}
		apiWantBucket(t, data, "total", inRange)
		apiWantBucket(t, data, "buckets.0", inRange[:4])
		apiWantBucket(t, data, "buckets.1", inRange[4:])
		apiWantBucket(t, data, "buckets.2", nil)
		apiWantRanking(t, data, "top_paths", "path", [][3]any{{"/v1/orders", 3, 1}, {"/v1/users", 2, 1}, {"/health", 1, 0}})
		apiWantRanking(t, data, "top_names", "name", [][3]any{{"shop", 4, 1}, {"billing", 2, 1}})
	})

	t.Run("from inside a bucket", func(t *testing.T) {
		start := from.Add(30 * time.Minute)
		data := e.stats(t, apiAcmeLive, url.Values{"from": {fmt.Sprint(start.Unix())}, "to": {apiRFC3339(from.Add(2 * time.Hour))}, "interval": {"1h"}})
		if data["from"] != apiWire(start) {
			t.Errorf("from is %v, want %s as asked", data["from"], apiWire(start))
		}
		if got := apiMust[string](t, data, "buckets.0.start"); got != apiWire(from) {
			t.Errorf("the first bucket starts at %s, want %s (from rounded down to the hour)", got, apiWire(from))
		}
		apiWantBucket(t, data, "buckets.0", inRange[2:4])
		apiWantBucket(t, data, "buckets.1", inRange[4:])
	})

	t.Run("filters", func(t *testing.T) {
		rng := url.Values{"from": {apiRFC3339(from)}, "to": {apiRFC3339(to)}, "interval": {"1h"}}
		for _, c := range []struct {
			param, value string
			want         []apiStatsMessage
		}{
			{"status_code", "2xx", inRange[:2]},
			{"name", "billing", []apiStatsMessage{inRange[3], inRange[5]}},
			{"path_prefix", "/v1/orders", inRange[:3]},
			{"min_duration_ms", "20", []apiStatsMessage{inRange[1], inRange[2], inRange[4]}},
			{"q", "health", inRange[5:]},
		} {
			data := e.stats(t, apiAcmeLive, apiWith(rng, c.param, c.value))
			apiWantBucket(t, data, "total", c.want)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		now := e.clock.Now()
		data := e.stats(t, apiAcmeLive, nil)
		wantFrom := now.Add(-24 * time.Hour).UTC().Truncate(15 * time.Minute)
		if data["interval"] != "15m" || data["to"] != apiWire(now) || data["from"] != apiWire(wantFrom) {
			t.Errorf("the default is %v to %v by %v; want %s to %s (now) by 15m", data["from"], data["to"], data["interval"], apiWire(wantFrom), apiWire(now))
		}
		if n := len(apiMust[[]any](t, data, "buckets")); n < 96 || n > 97 {
			t.Errorf("%d buckets of 15 minutes over 24 hours", n)
		}
		apiWantBucket(t, data, "total", slices.Concat(inRange, outside))
		for _, c := range []struct {
			span time.Duration
			want string
		}{{90 * time.Minute, "1m"}, {6 * time.Hour, "5m"}, {7 * 24 * time.Hour, "6h"}, {30 * 24 * time.Hour, "1d"}} {
			got := e.stats(t, apiAcmeLive, url.Values{"from": {apiRFC3339(now.Add(-c.span))}})
			if got["interval"] != c.want {
				t.Errorf("over %s the default interval is %v, want %s (the narrowest of at most 100 buckets)", c.span, got["interval"], c.want)
			}
		}
	})
}

// apiTestStatsOutliveMessages: on a store that keeps rollups past its
// messages (ports.RollupKeeper), the statistics of a range and application
// still count what expired and was purged, from the rollups alone, and say
// where that part ends (rollups_only_before, the retention's edge rounded up
// to a minute); a query the rollups cannot answer (q) counts the readable
// messages alone and says nothing of it.
func apiTestStatsOutliveMessages(t *testing.T, s apiSuite) {
	e := s.start(t)
	keeper, ok := e.store.(ports.RollupKeeper)
	if !ok || !e.cfg.Policy.KeepsRollups() {
		t.Skip("the store keeps no rollups past its messages (ports.RollupKeeper), or the policy none")
	}
	retention := e.cfg.Policy.Retention
	oldAt, _, fresh := e.oldAndFresh(t)

	e.clock.Set(oldAt.Add(retention).Add(time.Hour))
	if _, err := e.store.PurgeExpired(t.Context(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.awaitListed(t, apiAcmeLive, fresh.ID)
	from := oldAt.Add(-24 * time.Hour).UTC().Truncate(24 * time.Hour)
	edge := stats.AlignUp(e.cfg.Policy.OldestReadable(e.clock.Now()), time.Minute)
	for _, query := range []url.Values{{"from": {apiRFC3339(from)}, "interval": {"1d"}},
		{"from": {apiRFC3339(from)}, "interval": {"1d"}, "name": {"shop"}}} {
		got := e.stats(t, apiAcmeLive, query)
		if n := apiInt(t, got, "total.count"); n != 2 || got["rollups_only_before"] != apiWire(edge) {
			t.Errorf("stats %v count %d, rollups alone before %v; want 2 (the expired one from the rollups), %s", query, n, got["rollups_only_before"], apiWire(edge))
		}
	}
	searched := e.stats(t, apiAcmeLive, url.Values{"from": {apiRFC3339(from)}, "interval": {"1d"}, "q": {"ord_0ld7"}})
	if _, says := searched["rollups_only_before"]; says || apiInt(t, searched, "total.count") != 1 {
		t.Errorf("a q counts %d, rollups alone before %v; want the readable one and nothing said", apiInt(t, searched, "total.count"), searched["rollups_only_before"])
	}
	// As the purge job does, never past the messages' retention: a store may
	// keep its readable messages' rollups with those it keeps past them.
	if _, err := keeper.PurgeRollups(t.Context(), e.cfg.Policy.OldestReadable(e.clock.Now())); err != nil {
		t.Fatal(err)
	}
	if n := apiInt(t, e.stats(t, apiAcmeLive, url.Values{"from": {apiRFC3339(from)}, "interval": {"1d"}}), "total.count"); n != 1 {
		t.Errorf("once the rollups are purged the statistics count %d, want the readable one", n)
	}
}
