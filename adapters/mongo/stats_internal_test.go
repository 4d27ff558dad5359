package mongo

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

func TestStatsMethodOf(t *testing.T) {
	for _, tc := range []struct {
		info   serverInfo
		stream bool
		want   string
	}{
		{serverInfo{VersionArray: []int32{7, 0, 42, 0}, FerretDBVersion: "v1.24.0"}, false, statsStreaming},
		{serverInfo{VersionArray: []int32{6, 0, 19, 0}}, false, statsStreaming},
		{serverInfo{}, false, statsStreaming},
		{serverInfo{VersionArray: []int32{7, 0, 0, 0}}, false, statsPipeline},
		{serverInfo{VersionArray: []int32{8, 2, 1, 0}}, false, statsPipeline},
		{serverInfo{VersionArray: []int32{8, 2, 1, 0}}, true, statsStreaming},
	} {
		if got := statsMethodOf(tc.info, tc.stream); got != tc.want {
			t.Errorf("statsMethodOf(%+v, stream %v) = %s, want %s", tc.info, tc.stream, got, tc.want)
		}
	}
}

// eval evaluates the aggregation expressions statsPipelineOf's $project uses,
// on doc, as MongoDB defines them.
func eval(t *testing.T, expr any, doc bson.M) any {
	t.Helper()
	switch e := expr.(type) {
	case string:
		if strings.HasPrefix(e, "$") {
			return doc[e[1:]]
		}
		return e
	case int, int64:
		return reflect.ValueOf(e).Int()
	case bson.D:
		if len(e) != 1 {
			t.Fatalf("expression %v has %d keys", e, len(e))
		}
		args := func() []any {
			var out []any
			for _, a := range e[0].Value.(bson.A) {
				out = append(out, eval(t, a, doc))
			}
			return out
		}
		num := func(v any) float64 {
			switch n := v.(type) {
			case int64:
				return float64(n)
			case int32:
				return float64(n)
			case float64:
				return n
			}
			t.Fatalf("%v is not a number", v)
			return 0
		}
		switch e[0].Key {
		case "$subtract":
			a := args()
			return a[0].(int64) - a[1].(int64)
		case "$mod":
			a := args()
			return a[0].(int64) % a[1].(int64)
		case "$divide":
			a := args()
			return num(a[0]) / num(a[1])
		case "$toLong":
			f := num(eval(t, e[0].Value, doc))
			if f != math.Trunc(f) {
				t.Fatalf("$toLong of %v truncates", f)
			}
			return int64(f)
		case "$floor":
			return math.Floor(num(eval(t, e[0].Value, doc)))
		case "$min", "$max":
			a := args()
			x, y := num(a[0]), num(a[1])
			if e[0].Key == "$min" {
				return math.Min(x, y)
			}
			return math.Max(x, y)
		case "$ifNull":
			a := args()
			if a[0] != nil {
				return a[0]
			}
			return a[1]
		case "$split":
			a := args()
			return strings.Split(a[0].(string), a[1].(string))
		case "$arrayElemAt":
			a := args()
			return a[0].([]string)[a[1].(int64)]
		}
	}
	t.Fatalf("eval: unknown expression %#v", expr)
	return nil
}

// The $project stage gives each message the bucket, status class and route
// that stats.Builder gives it.
func TestStatsPipelineProjection(t *testing.T) {
	from := time.Date(2026, 11, 24, 0, 7, 30, 123456000, time.UTC)
	for _, iv := range stats.Intervals {
		q := stats.Query{Scope: domain.Scope{Account: "a", Domain: "live"}, From: from, To: from.Add(40 * iv.Width), Interval: iv}
		q.Filter.From, q.Filter.To = q.From, q.To
		filter, _ := statsFilter(q, q.To)
		pipeline := statsPipelineOf(q, filter)
		if len(pipeline) != 3 {
			t.Fatalf("pipeline has %d stages, want $match, $project, $facet", len(pipeline))
		}
		if got := pipeline[0].(bson.D); got[0].Key != "$match" || !reflect.DeepEqual(got[0].Value, filter) {
			t.Errorf("first stage %v, want $match of the list filter", got)
		}
		project := pipeline[1].(bson.D)[0].Value.(bson.D)
		expr := func(name string) any {
			for _, e := range project {
				if e.Key == name {
					return e.Value
				}
			}
			t.Fatalf("$project has no %s", name)
			return nil
		}
		for i, at := range []time.Time{q.From, q.To.Add(-time.Microsecond), q.From.Add(iv.Width), q.FirstBucket().Add(iv.Width - time.Microsecond),
			q.FirstBucket().Add(17*iv.Width + iv.Width/3)} {
			if at.Before(q.From) {
				continue
			}
			status := []int32{100, 199, 200, 302, 404, 499, 500, 599, 0, 42, 600, 999}[i]
			path := []string{"/v1/orders?x=1", "/", "/a?", "?q", "/b"}[i]
			doc := bson.M{fieldCreatedAt: at.UnixMicro(), fieldStatus: status, fieldPath: path}
			if i%2 == 0 {
				doc[fieldRoute] = stats.PathOf(path)
			}
			if got, want := eval(t, expr("b"), doc), int64(q.BucketIndex(at)); got != want {
				t.Errorf("%s: bucket of %s = %v, want %d", iv.Name, domain.FormatTime(at), got, want)
			}
			var counts stats.StatusCounts
			counts.Add(int(status))
			if got := eval(t, expr("c"), doc).(float64); counts[int(got)-1] != 1 {
				t.Errorf("class of %d = %v, want the index of %v plus one", status, got, counts)
			}
			if got, want := eval(t, expr("r"), doc), stats.PathOf(path); got != want {
				t.Errorf("route of %q (route stored: %v) = %v, want %q", path, i%2 == 0, got, want)
			}
		}
	}
}

// The facet's result document, as the server returns it, reads into
// statistics: buckets by index, totals summed, null percentiles as none,
// microseconds as milliseconds.
func TestFacetResultStats(t *testing.T) {
	from := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	q := stats.Query{From: from, To: from.Add(3 * time.Hour), Interval: stats.Intervals[3]}
	p := func(vs ...any) bson.A { return bson.A(vs) }
	raw, err := bson.Marshal(bson.D{
		{Key: "buckets", Value: bson.A{
			bson.D{{Key: "_id", Value: int64(2)}, {Key: "count", Value: int32(3)}, {Key: "c1", Value: int32(0)}, {Key: "c2", Value: int32(1)},
				{Key: "c3", Value: int32(0)}, {Key: "c4", Value: int32(1)}, {Key: "c5", Value: int32(1)}, {Key: "durations", Value: int32(2)},
				{Key: "p", Value: p(1500.0, 2999.6, 3000.0)}},
			bson.D{{Key: "_id", Value: int64(0)}, {Key: "count", Value: int32(1)}, {Key: "c1", Value: int32(1)}, {Key: "c2", Value: int32(0)},
				{Key: "c3", Value: int32(0)}, {Key: "c4", Value: int32(0)}, {Key: "c5", Value: int32(0)}, {Key: "durations", Value: int32(0)},
				{Key: "p", Value: p(nil, nil, nil)}},
		}},
		{Key: "total", Value: bson.A{bson.D{{Key: "_id", Value: nil}, {Key: "durations", Value: int32(2)}, {Key: "p", Value: p(1500.0, 2999.6, 3000.0)}}}},
		{Key: "paths", Value: bson.A{bson.D{{Key: "_id", Value: "/v1/orders"}, {Key: "count", Value: int32(3)}, {Key: "errors", Value: int32(2)}},
			bson.D{{Key: "_id", Value: "/"}, {Key: "count", Value: int32(1)}, {Key: "errors", Value: int32(0)}}}},
		{Key: "names", Value: bson.A{bson.D{{Key: "_id", Value: "shop"}, {Key: "count", Value: int32(4)}, {Key: "errors", Value: int32(2)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var result facetResult
	if err := bson.Unmarshal(raw, &result); err != nil {
		t.Fatal(err)
	}
	got, err := result.stats(q)
	if err != nil {
		t.Fatal(err)
	}
	want := stats.New(q)
	want.Buckets[0].Count, want.Buckets[0].Status = 1, stats.StatusCounts{1, 0, 0, 0, 0}
	summary := stats.DurationSummary{Count: 2, P50: 1.5, P95: 3, P99: 3}
	want.Buckets[2].Count, want.Buckets[2].Status, want.Buckets[2].Duration = 3, stats.StatusCounts{0, 1, 0, 1, 1}, summary
	want.Total = stats.Bucket{Count: 4, Status: stats.StatusCounts{1, 1, 0, 1, 1}, Duration: summary}
	want.TopPaths = []stats.KeyCount{{Key: "/v1/orders", Count: 3, Errors: 2}, {Key: "/", Count: 1}}
	want.TopNames = []stats.KeyCount{{Key: "shop", Count: 4, Errors: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats:\n got %+v\nwant %+v", got, want)
	}

	result.Buckets[0].Index = 3
	if _, err := result.stats(q); err == nil {
		t.Error("a bucket index past the range was accepted")
	}
}
