package esquery

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/domain/stats"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// Statistics are one search of size 0 whose aggregations compute everything
// at once, over the messages List would return at now (same filters).
//
// Percentiles use the t-digest of Elasticsearch with a compression of
// percentileCompression: it keeps every value, and so answers exactly as
// stats.Percentile interpolates, below 20 times the compression (10,000
// durations per bucket); above, its error measured on smooth distributions
// stays under 0.2 % (docs/contract.md).
const percentileCompression = 500

// termsShardSize is how many keys each daily index reports for top paths and
// names before they are merged; far above the ten or twenty ranked, so the
// merged counts and ranks are exact unless a day has thousands of keys.
const termsShardSize = 1000

// statusClasses are the buckets of stats.StatusCounts, in its order: below
// 200 counts as 1xx and 500 or more as 5xx, as StatusCounts.Add clamps.
var statusClasses = []object{
	{"key": "1xx", "to": 200},
	{"key": "2xx", "from": 200, "to": 300},
	{"key": "3xx", "from": 300, "to": 400},
	{"key": "4xx", "from": 400, "to": 500},
	{"key": "5xx", "from": 500},
}

// trafficAggs are the aggregations of one bucket.
func trafficAggs(compression int) object {
	aggs := totalAggs(compression)
	aggs["status"] = object{"range": object{"field": "status_code", "keyed": false, "ranges": statusClasses}}
	aggs["durations"] = object{"value_count": object{"field": record.JSONDuration}}
	return aggs
}

// bucketAggs are the aggregations of one bucket of the histogram: its
// traffic, and how many of its documents are tallies (what ingest rules
// dropped, tally: true).
func bucketAggs(compression int) object {
	aggs := trafficAggs(compression)
	aggs["dropped"] = object{"filter": object{"term": object{"tally": true}}}
	return aggs
}

// totalAggs are the aggregations of the whole range: its percentiles only.
// Its counts are the sums of the buckets', which cover the range; counting
// them again cost Elasticsearch a seventh of the search.
func totalAggs(compression int) object {
	return object{"percentiles": object{"percentiles": object{
		"field": record.JSONDuration, "percents": []float64{50, 95, 99}, "keyed": false,
		"tdigest": object{"compression": compression},
	}}}
}

// ranking ranks the values of a keyword field as stats.CompareKeyCounts
// orders them, with the errors among each.
func ranking(field string, size int) object {
	return object{
		"terms": object{
			"field": field, "size": size, "shard_size": max(size, termsShardSize),
			"order": []object{{"_count": "desc"}, {"_key": "asc"}},
		},
		"aggs": object{"errors": object{"filter": object{"range": object{"status_code": object{"gte": 400}}}}},
	}
}

// AggregateStats runs one search over every daily index
// (ports.StatsAggregator). Only buckets holding messages come back
// (min_doc_count 1); stats.New holds the others, empty.
func (s *Queries) AggregateStats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	return s.stats(ctx, q, now, defaultStatsPlan)
}

// statsPlan is how a statistics search asks Elasticsearch for its numbers;
// the benchmarks compare plans.
type statsPlan struct {
	compression int  // of the t-digest percentiles
	cacheable   bool // created_at bounded by two clauses (filters.splitRange)
}

var defaultStatsPlan = statsPlan{compression: percentileCompression, cacheable: true}

// statsSearch is the search body of q's statistics at now; ok is false when no
// stored message can match.
func statsSearch(q stats.Query, now time.Time, plan statsPlan) (body object, ok bool) {
	f := readable(q.Scope, now)
	f.matching(q.Filter)
	f.closeRange("created_at")
	if f.empty {
		return nil, false
	}
	if plan.cacheable {
		f.splitRange("created_at")
	}
	aggs := totalAggs(plan.compression)
	aggs["buckets"] = object{
		"date_histogram": object{
			"field": "created_at",
			// Fixed widths are aligned on the Unix epoch, so on UTC days.
			"fixed_interval": fmt.Sprintf("%dms", q.Interval.Width.Milliseconds()),
			"min_doc_count":  1,
		},
		"aggs": bucketAggs(plan.compression),
	}
	aggs["routes"] = ranking("route", stats.TopPaths)
	aggs["names"] = ranking("name", stats.TopNames)
	// Only documents with a template have the field: the others rank nowhere.
	templates := ranking(record.JSONRouteTemplate, stats.TopRoutes)
	maps.Copy(templates["aggs"].(object), trafficAggs(plan.compression))
	delete(templates["aggs"].(object), "status")
	aggs["templates"] = templates
	return object{
		"size": 0, "track_total_hits": false,
		"query": object{"bool": object{"filter": f.clauses}},
		"aggs":  aggs,
	}, true
}

// stats is Stats by the given plan.
func (s *Queries) stats(ctx context.Context, q stats.Query, now time.Time, plan statsPlan) (stats.Stats, error) {
	if err := ctx.Err(); err != nil {
		return stats.Stats{}, fmt.Errorf("elastic: stats: %w", err)
	}
	body, ok := statsSearch(q, now, plan)
	if !ok {
		return stats.New(q), nil
	}
	reader, err := esclient.JSONBody(body)
	if err != nil {
		return stats.Stats{}, err
	}
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	var reply trafficReply
	if err := s.client.Do(ctx, "stats", esapi.SearchRequest{
		Index:                     []string{s.names.ReadPattern()},
		Body:                      reader,
		IgnoreUnavailable:         esapi.BoolPtr(true),
		AllowNoIndices:            esapi.BoolPtr(true),
		AllowPartialSearchResults: esapi.BoolPtr(false),
	}, &reply); err != nil {
		return stats.Stats{}, err
	}
	st := stats.New(q)
	if err := reply.fill(q, &st); err != nil {
		return stats.Stats{}, fmt.Errorf("elastic: stats: %w", err)
	}
	return st, nil
}

// trafficReply is the part of the reply Stats reads. With no index at all the
// aggregations are absent: every count is zero.
type trafficReply struct {
	Aggregations struct {
		traffic
		Buckets struct {
			Buckets []struct {
				Key int64 `json:"key"` // epoch milliseconds
				traffic
				Dropped struct {
					DocCount int64 `json:"doc_count"`
				} `json:"dropped"`
			} `json:"buckets"`
		} `json:"buckets"`
		Routes    rankingReply `json:"routes"`
		Names     rankingReply `json:"names"`
		Templates struct {
			Buckets []struct {
				rankedKey
				traffic
			} `json:"buckets"`
		} `json:"templates"`
	} `json:"aggregations"`
}

type traffic struct {
	Status struct {
		Buckets []struct {
			Key      string `json:"key"`
			DocCount int64  `json:"doc_count"`
		} `json:"buckets"`
	} `json:"status"`
	Durations struct {
		Value int64 `json:"value"`
	} `json:"durations"`
	Percentiles struct {
		Values []struct {
			Key   float64  `json:"key"`
			Value *float64 `json:"value"` // null without durations
		} `json:"values"`
	} `json:"percentiles"`
}

type rankingReply struct {
	Buckets []rankedKey `json:"buckets"`
}

// rankedKey is one bucket of a ranking: a key, its count and its errors.
type rankedKey struct {
	Key      string `json:"key"`
	DocCount int64  `json:"doc_count"`
	Errors   struct {
		DocCount int64 `json:"doc_count"`
	} `json:"errors"`
}

func (r *trafficReply) fill(q stats.Query, st *stats.Stats) error {
	a := &r.Aggregations
	first, width := q.FirstBucket().UnixMilli(), q.Interval.Width.Milliseconds()
	for _, b := range a.Buckets.Buckets {
		offset := b.Key - first
		i := offset / width
		if offset%width != 0 || offset < 0 || i >= int64(len(st.Buckets)) {
			return fmt.Errorf("a bucket starts at %s, not on a bucket of the range",
				domain.FormatTime(time.UnixMilli(b.Key).UTC()))
		}
		bucket := &st.Buckets[i]
		if err := b.traffic.fill(bucket); err != nil {
			return err
		}
		bucket.Dropped = b.Dropped.DocCount
		st.Total.Count += bucket.Count
		st.Total.Dropped += bucket.Dropped
		st.Total.Duration.Count += bucket.Duration.Count
		for class, n := range bucket.Status {
			st.Total.Status[class] += n
		}
	}
	if err := a.traffic.fillPercentiles(&st.Total); err != nil {
		return err
	}
	st.TopPaths = a.Routes.keyCounts()
	st.TopNames = a.Names.keyCounts()
	for _, b := range a.Templates.Buckets {
		route := stats.Bucket{Count: b.DocCount, Duration: stats.DurationSummary{Count: b.Durations.Value}}
		if err := b.fillPercentiles(&route); err != nil {
			return fmt.Errorf("route %s: %w", b.Key, err)
		}
		st.TopRoutes = append(st.TopRoutes, stats.RouteStats{Route: b.Key, Count: b.DocCount,
			Errors: b.Errors.DocCount, Duration: route.Duration})
	}
	return nil
}

// fill sets bucket's counts and durations; its count is the sum of its status
// classes, which cover every status.
func (t *traffic) fill(bucket *stats.Bucket) error {
	for _, class := range t.Status.Buckets {
		i := slices.IndexFunc(statusClasses, func(c object) bool { return c["key"] == class.Key })
		if i < 0 {
			return fmt.Errorf("unknown status class %q", class.Key)
		}
		bucket.Status[i] = class.DocCount
		bucket.Count += class.DocCount
	}
	bucket.Duration.Count = t.Durations.Value
	return t.fillPercentiles(bucket)
}

// fillPercentiles sets bucket's percentiles, if it has durations (counted).
func (t *traffic) fillPercentiles(bucket *stats.Bucket) error {
	if bucket.Duration.Count == 0 {
		return nil
	}
	for _, p := range t.Percentiles.Values {
		if p.Value == nil {
			return fmt.Errorf("percentile %g is null over %d durations", p.Key, bucket.Duration.Count)
		}
		// Whole microseconds, as stats.Percentile rounds.
		v := math.Round(*p.Value*1000) / 1000
		switch p.Key {
		case 50:
			bucket.Duration.P50 = v
		case 95:
			bucket.Duration.P95 = v
		case 99:
			bucket.Duration.P99 = v
		}
	}
	return nil
}

func (r rankingReply) keyCounts() []stats.KeyCount {
	counts := make([]stats.KeyCount, len(r.Buckets))
	for i, b := range r.Buckets {
		counts[i] = stats.KeyCount{Key: b.Key, Count: b.DocCount, Errors: b.Errors.DocCount}
	}
	return counts
}
