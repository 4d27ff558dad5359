package elastic

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/internal/record"
	"github.com/reqlog/reqlog/domain"
)

// Statistics are one search of size 0 whose aggregations compute everything
// at once, over the messages List would return at now (same filters).
//
// Percentiles use the t-digest of Elasticsearch with a compression of
// percentileCompression: it keeps every value, and so answers exactly as
// domain.Percentile interpolates, below 20 times the compression (10,000
// durations per bucket); above, its error measured on smooth distributions
// stays under 0.2 % (docs/contract.md).
const percentileCompression = 500

// termsShardSize is how many keys each daily index reports for top paths and
// names before they are merged; far above the ten or twenty ranked, so the
// merged counts and ranks are exact unless a day has thousands of keys.
const termsShardSize = 1000

// statusClasses are the buckets of domain.StatusCounts, in its order: below
// 200 counts as 1xx and 500 or more as 5xx, as StatusCounts.Add clamps.
var statusClasses = []object{
	{"key": "1xx", "to": 200},
	{"key": "2xx", "from": 200, "to": 300},
	{"key": "3xx", "from": 300, "to": 400},
	{"key": "4xx", "from": 400, "to": 500},
	{"key": "5xx", "from": 500},
}

// trafficAggs are the aggregations of one bucket, or of the whole range.
func trafficAggs(compression int) object {
	return object{
		"status":    object{"range": object{"field": "status_code", "keyed": false, "ranges": statusClasses}},
		"durations": object{"value_count": object{"field": record.JSONDuration}},
		"percentiles": object{"percentiles": object{
			"field": record.JSONDuration, "percents": []float64{50, 95, 99}, "keyed": false,
			"tdigest": object{"compression": compression},
		}},
	}
}

// ranking ranks the values of a keyword field as domain.CompareKeyCounts
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

// Stats runs one search over every daily index. Only buckets holding messages
// come back (min_doc_count 1); domain.NewStats holds the others, empty.
func (s *Store) Stats(ctx context.Context, q domain.StatsQuery, now time.Time) (domain.Stats, error) {
	return s.stats(ctx, q, now, percentileCompression)
}

// stats is Stats with percentiles of the given t-digest compression.
func (s *Store) stats(ctx context.Context, q domain.StatsQuery, now time.Time, compression int) (domain.Stats, error) {
	if err := ctx.Err(); err != nil {
		return domain.Stats{}, fmt.Errorf("elastic: stats: %w", err)
	}
	stats := domain.NewStats(q)
	f := readable(q.Scope, now)
	f.matching(q.Filter)
	f.closeRange("created_at")
	if f.empty {
		return stats, nil
	}
	aggs := trafficAggs(compression)
	aggs["buckets"] = object{
		"date_histogram": object{
			"field": "created_at",
			// Fixed widths are aligned on the Unix epoch, so on UTC days.
			"fixed_interval": fmt.Sprintf("%dms", q.Interval.Width.Milliseconds()),
			"min_doc_count":  1,
		},
		"aggs": trafficAggs(compression),
	}
	aggs["routes"] = ranking("route", domain.TopPaths)
	aggs["names"] = ranking("name", domain.TopNames)
	body := object{
		"size": 0, "track_total_hits": false,
		"query": object{"bool": object{"filter": f.clauses}},
		"aggs":  aggs,
	}
	reader, err := jsonBody(body)
	if err != nil {
		return domain.Stats{}, err
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var reply trafficReply
	if err := s.do(ctx, "stats", esapi.SearchRequest{
		Index:                     []string{s.names.ReadPattern()},
		Body:                      reader,
		IgnoreUnavailable:         ptr(true),
		AllowNoIndices:            ptr(true),
		AllowPartialSearchResults: ptr(false),
	}, &reply); err != nil {
		return domain.Stats{}, err
	}
	if err := reply.fill(q, &stats); err != nil {
		return domain.Stats{}, fmt.Errorf("elastic: stats: %w", err)
	}
	return stats, nil
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
			} `json:"buckets"`
		} `json:"buckets"`
		Routes rankingReply `json:"routes"`
		Names  rankingReply `json:"names"`
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
	Buckets []struct {
		Key      string `json:"key"`
		DocCount int64  `json:"doc_count"`
		Errors   struct {
			DocCount int64 `json:"doc_count"`
		} `json:"errors"`
	} `json:"buckets"`
}

func (r *trafficReply) fill(q domain.StatsQuery, stats *domain.Stats) error {
	a := &r.Aggregations
	if err := a.traffic.fill(&stats.Total); err != nil {
		return err
	}
	first, width := q.FirstBucket().UnixMilli(), q.Interval.Width.Milliseconds()
	for _, b := range a.Buckets.Buckets {
		offset := b.Key - first
		i := offset / width
		if offset%width != 0 || offset < 0 || i >= int64(len(stats.Buckets)) {
			return fmt.Errorf("a bucket starts at %s, not on a bucket of the range",
				domain.FormatTime(time.UnixMilli(b.Key).UTC()))
		}
		if err := b.traffic.fill(&stats.Buckets[i]); err != nil {
			return err
		}
	}
	stats.TopPaths = a.Routes.keyCounts()
	stats.TopNames = a.Names.keyCounts()
	return nil
}

// fill sets bucket's counts and durations; its count is the sum of its status
// classes, which cover every status.
func (t *traffic) fill(bucket *domain.StatsBucket) error {
	for _, class := range t.Status.Buckets {
		i := slices.IndexFunc(statusClasses, func(c object) bool { return c["key"] == class.Key })
		if i < 0 {
			return fmt.Errorf("unknown status class %q", class.Key)
		}
		bucket.Status[i] = class.DocCount
		bucket.Count += class.DocCount
	}
	if t.Durations.Value == 0 {
		return nil
	}
	bucket.Duration.Count = t.Durations.Value
	for _, p := range t.Percentiles.Values {
		if p.Value == nil {
			return fmt.Errorf("percentile %g is null over %d durations", p.Key, t.Durations.Value)
		}
		// Whole microseconds, as domain.Percentile rounds.
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

func (r rankingReply) keyCounts() []domain.KeyCount {
	counts := make([]domain.KeyCount, len(r.Buckets))
	for i, b := range r.Buckets {
		counts[i] = domain.KeyCount{Key: b.Key, Count: b.DocCount, Errors: b.Errors.DocCount}
	}
	return counts
}
