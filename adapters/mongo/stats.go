package mongo

import (
	"context"
	"fmt"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// How Stats computes, chosen once at start-up by statsMethodOf.
const (
	// statsPipeline: one aggregation does it all (MongoDB 7.0+: $percentile).
	statsPipeline = "pipeline"
	// statsStreaming: the matching messages' few needed fields are streamed
	// into stats.Builder (FerretDB, which has no $percentile; MongoDB
	// before 7.0; Config.StreamStats).
	statsStreaming = "streaming"
)

// serverInfo is what buildInfo tells of the server.
type serverInfo struct {
	VersionArray []int32 `bson:"versionArray"`
	// FerretDBVersion is set by FerretDB, which reports a MongoDB version of
	// its own too, so it is checked first.
	FerretDBVersion string `bson:"ferretdbVersion"`
}

// statsMethodOf picks the statistics' method for a server from its
// buildInfo; detectStatsMethod then checks that $percentile really runs.
func statsMethodOf(info serverInfo, streamAnyway bool) string {
	if streamAnyway || info.FerretDBVersion != "" || len(info.VersionArray) == 0 || info.VersionArray[0] < 7 {
		return statsStreaming
	}
	return statsPipeline
}

// detectStatsMethod asks the server what it is.
func (s *Store) detectStatsMethod(ctx context.Context) error {
	var info serverInfo
	err := s.client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info)
	if err != nil {
		return storeError(ctx, "buildInfo", err)
	}
	s.statsMethod = statsMethodOf(info, s.cfg.StreamStats)
	if s.statsMethod != statsPipeline {
		return nil
	}
	// A 7.0 server still on an older featureCompatibilityVersion refuses
	// $percentile: one tiny aggregation tells.
	probe := bson.A{
		bson.D{{Key: "$limit", Value: 1}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "p", Value: bson.D{{Key: "$percentile", Value: bson.D{
			{Key: "input", Value: "$" + fieldDuration}, {Key: "p", Value: percentiles}, {Key: "method", Value: "approximate"}}}}}}}},
	}
	cur, err := s.coll.Aggregate(ctx, probe)
	switch {
	case err == nil:
		return cur.Close(ctx)
	case unavailable(err) || ctx.Err() != nil:
		return storeError(ctx, "probing $percentile", err)
	default:
		s.statsMethod = statsStreaming
		return nil
	}
}

// StatsMethod says how the store aggregates statistics itself: "pipeline"
// (one aggregation, MongoDB 7.0+), or "streaming" when it cannot (the
// engine then counts from rollups or from the messages streamed).
func (s *Store) StatsMethod() string { return s.statsMethod }

// Stats answers through the statistics engine, from the rollups kept by
// marks (rollups.go), the pipeline where the server runs it, or the
// messages' samples, whichever its plan costs least (statsengine).
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	st, _, err := s.engine.Stats(ctx, q, now)
	return st, err
}

// StatsTraced is Stats with what it read, for tests and benchmarks.
func (s *Store) StatsTraced(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, statsengine.Trace, error) {
	return s.engine.Stats(ctx, q, now)
}

// MarkExisting marks the messages an earlier version stored without marks
// and keeps their minutes' rollups, so that the statistics count them from
// rollups too; a no-op once done. The service runs it in the background at
// start.
func (s *Store) MarkExisting(ctx context.Context) error {
	return s.rollups.MarkExisting(ctx, func(ctx context.Context, span statsengine.ScopeSpan) error {
		return s.marked.KeepAll(ctx, span.Scope, span.From, span.To)
	})
}

// AggregateStats computes q's statistics over the messages readable at now
// in one aggregation (ports.StatsAggregator): the engine's source only where
// the server runs $percentile (StatsMethod "pipeline").
func (s *Store) AggregateStats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	filter, possible := statsFilter(q, now)
	if !possible {
		return stats.New(q), nil
	}
	return s.aggregateStats(ctx, q, filter)
}

// statsFilter is List's filter over the statistics' range, [q.From, q.To)
// within the filter's own range.
func statsFilter(q stats.Query, now time.Time) (bson.D, bool) {
	f := q.Filter
	if f.From.IsZero() || f.From.Before(q.From) {
		f.From = q.From
	}
	if f.To.IsZero() || f.To.After(q.To) {
		f.To = q.To
	}
	if !f.From.Before(f.To) {
		return nil, false
	}
	return listFilter(domain.Query{Scope: q.Scope, Filter: f}, now)
}

// aggregateStats runs statsPipeline and reads its one result document.
func (s *Store) aggregateStats(ctx context.Context, q stats.Query, filter bson.D) (stats.Stats, error) {
	cur, err := s.coll.Aggregate(ctx, statsPipelineOf(q, filter), options.Aggregate().SetAllowDiskUse(true))
	if err != nil {
		return stats.Stats{}, storeError(ctx, "stats", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var result facetResult
	if cur.Next(ctx) {
		if err := cur.Decode(&result); err != nil {
			return stats.Stats{}, storeError(ctx, "stats", err)
		}
	}
	if err := cur.Err(); err != nil {
		return stats.Stats{}, storeError(ctx, "stats", err)
	}
	return result.stats(q)
}

// percentiles are the ranks the statistics report, in DurationSummary's order.
var percentiles = bson.A{0.5, 0.95, 0.99}

// statsPipelineOf is the aggregation of q's statistics over the messages
// filter selects: every message gets its bucket index (computed from the int64
// createdAt micros, which needs neither $dateTrunc nor a BSON date), its status
// class and its route; one $facet then groups by bucket (counts per class,
// duration count and $percentile), the whole range (percentiles), route and
// name (counts and errors, sorted and cut to the top), and route template
// (counts, errors and percentiles of the messages that have one, likewise).
// Tallies are documents like the messages (tally: true, no content): they
// count as any, and as dropped.
func statsPipelineOf(q stats.Query, filter bson.D) bson.A {
	first := q.FirstBucket().UnixMicro()
	width := q.Interval.Width.Microseconds()
	sinceFirst := bson.D{{Key: "$subtract", Value: bson.A{"$" + fieldCreatedAt, first}}}
	// Whole-number division without a double: (x - x mod w) / w is exact.
	bucket := bson.D{{Key: "$toLong", Value: bson.D{{Key: "$divide", Value: bson.A{
		bson.D{{Key: "$subtract", Value: bson.A{sinceFirst, bson.D{{Key: "$mod", Value: bson.A{sinceFirst, width}}}}}},
		width,
	}}}}}
	// stats.StatusCounts.Add: the class clamped to 1xx..5xx.
	class := bson.D{{Key: "$min", Value: bson.A{5, bson.D{{Key: "$max", Value: bson.A{1,
		bson.D{{Key: "$floor", Value: bson.D{{Key: "$divide", Value: bson.A{"$" + fieldStatus, 100}}}}},
	}}}}}}
	// Documents stored before route was added: the path up to its '?'.
	route := bson.D{{Key: "$ifNull", Value: bson.A{"$" + fieldRoute,
		bson.D{{Key: "$arrayElemAt", Value: bson.A{bson.D{{Key: "$split", Value: bson.A{"$" + fieldPath, "?"}}}, 0}}}}}}
	countIf := func(cond any) bson.D {
		return bson.D{{Key: "$sum", Value: bson.D{{Key: "$cond", Value: bson.A{cond, 1, 0}}}}}
	}
	durationStats := bson.D{
		{Key: "durations", Value: countIf(bson.D{{Key: "$isNumber", Value: "$d"}})},
		{Key: "p", Value: bson.D{{Key: "$percentile", Value: bson.D{
			{Key: "input", Value: "$d"}, {Key: "p", Value: percentiles}, {Key: "method", Value: "approximate"}}}}},
	}
	byBucket := bson.D{{Key: "_id", Value: "$b"}, {Key: "count", Value: bson.D{{Key: "$sum", Value: 1}}}}
	for c := 1; c <= 5; c++ {
		byBucket = append(byBucket, bson.E{Key: fmt.Sprintf("c%d", c), Value: countIf(bson.D{{Key: "$eq", Value: bson.A{"$c", c}}})})
	}
	byBucket = append(byBucket, bson.E{Key: "dropped", Value: countIf(bson.D{{Key: "$eq", Value: bson.A{"$x", true}}})})
	byBucket = append(byBucket, durationStats...)
	top := func(key string, n int, more ...bson.E) bson.A {
		return bson.A{
			bson.D{{Key: "$group", Value: append(bson.D{{Key: "_id", Value: "$" + key}, {Key: "count", Value: bson.D{{Key: "$sum", Value: 1}}},
				{Key: "errors", Value: countIf(bson.D{{Key: "$gte", Value: bson.A{"$" + fieldStatus, 400}}})}}, more...)}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "count", Value: -1}, {Key: "_id", Value: 1}}}},
			bson.D{{Key: "$limit", Value: n}},
		}
	}
	// Only messages with a template rank in top_routes.
	routes := append(bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "t", Value: bson.D{{Key: "$type", Value: "string"}}}}}}},
		top("t", stats.TopRoutes, durationStats...)...)
	return bson.A{
		bson.D{{Key: "$match", Value: filter}},
		bson.D{{Key: "$project", Value: bson.D{
			{Key: "_id", Value: 0}, {Key: "b", Value: bucket}, {Key: "c", Value: class}, {Key: fieldStatus, Value: 1},
			{Key: "d", Value: "$" + fieldDuration}, {Key: "r", Value: route}, {Key: fieldName, Value: 1},
			{Key: "t", Value: "$" + fieldTemplate}, {Key: "x", Value: "$" + fieldTally},
		}}},
		bson.D{{Key: "$facet", Value: bson.D{
			{Key: "buckets", Value: bson.A{bson.D{{Key: "$group", Value: byBucket}}}},
			{Key: "total", Value: bson.A{bson.D{{Key: "$group", Value: append(bson.D{{Key: "_id", Value: nil}}, durationStats...)}}}},
			{Key: "paths", Value: top("r", stats.TopPaths)},
			{Key: "names", Value: top(fieldName, stats.TopNames)},
			{Key: "routes", Value: routes},
		}}},
	}
}

// facetResult is the pipeline's one result document.
type facetResult struct {
	Buckets []struct {
		Index              int64 `bson:"_id"`
		Count              int64
		Dropped            int64
		C1, C2, C3, C4, C5 int64
		Durations          int64
		P                  []*float64
	}
	Total []struct {
		Durations int64
		P         []*float64
	}
	Paths  []keyGroup
	Names  []keyGroup
	Routes []struct {
		keyGroup  `bson:",inline"`
		Durations int64
		P         []*float64
	}
}

type keyGroup struct {
	Key    string `bson:"_id"`
	Count  int64  `bson:"count"`
	Errors int64  `bson:"errors"`
}

// stats turns the pipeline's result into q's statistics.
func (r facetResult) stats(q stats.Query) (stats.Stats, error) {
	s := stats.New(q)
	for _, g := range r.Buckets {
		if g.Index < 0 || g.Index >= int64(len(s.Buckets)) {
			return stats.Stats{}, fmt.Errorf("mongo: stats: the pipeline gave bucket %d of %d", g.Index, len(s.Buckets))
		}
		b := &s.Buckets[g.Index]
		b.Count, b.Dropped = g.Count, g.Dropped
		b.Status = stats.StatusCounts{g.C1, g.C2, g.C3, g.C4, g.C5}
		b.Duration = durationSummary(g.Durations, g.P)
		s.Total.Count += b.Count
		s.Total.Dropped += b.Dropped
		for c := range b.Status {
			s.Total.Status[c] += b.Status[c]
		}
	}
	if len(r.Total) == 1 {
		s.Total.Duration = durationSummary(r.Total[0].Durations, r.Total[0].P)
	}
	s.TopPaths, s.TopNames = keyCounts(r.Paths), keyCounts(r.Names)
	for _, g := range r.Routes {
		s.TopRoutes = append(s.TopRoutes, stats.RouteStats{Route: g.Key, Count: g.Count, Errors: g.Errors,
			Duration: durationSummary(g.Durations, g.P)})
	}
	return s, nil
}

// durationSummary reads a group's duration count and its percentiles in
// microseconds ($percentile gives null for a group without a duration).
func durationSummary(count int64, p []*float64) stats.DurationSummary {
	if count == 0 || len(p) != len(percentiles) || p[0] == nil || p[1] == nil || p[2] == nil {
		return stats.DurationSummary{}
	}
	ms := func(us *float64) float64 { return math.Round(*us) / 1000 }
	return stats.DurationSummary{Count: count, P50: ms(p[0]), P95: ms(p[1]), P99: ms(p[2])}
}

func keyCounts(groups []keyGroup) []stats.KeyCount {
	out := make([]stats.KeyCount, len(groups))
	for i, g := range groups {
		out[i] = stats.KeyCount{Key: g.Key, Count: g.Count, Errors: g.Errors}
	}
	return out
}
