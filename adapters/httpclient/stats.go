package httpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// StatsOptions select the traffic that Stats summarises.
type StatsOptions struct {
	// ListOptions filter the messages counted, and From and To give the range
	// [From, To) (zero From: the last 24 hours up to To, or now); Limit and
	// Cursor are not used.
	ListOptions
	// Interval is the buckets' width: 1m, 5m, 15m, 1h, 6h or 1d ("": the
	// narrowest that gives at most 100 buckets).
	Interval string
}

// Stats is the shape of the traffic over a range.
type Stats struct {
	From, To time.Time
	Interval string
	// Total is the whole range; its Start is zero.
	Total StatsBucket
	// Buckets cover the range, oldest first, empty ones included.
	Buckets []StatsBucket
	// TopPaths are the 10 most frequent paths (without their query string),
	// TopNames the 20 most frequent applications: by count, then name.
	TopPaths []KeyCount
	TopNames []KeyCount
	// TopRoutes are the 20 most frequent route templates among the messages
	// sent with one, ranked as TopPaths.
	TopRoutes []RouteStats
	// RollupsOnlyBefore, when not zero: what was created before it is
	// counted from the rollups alone, its messages having expired (the
	// server keeps rollups longer than messages).
	RollupsOnlyBefore time.Time
}

// RouteStats is the traffic of one route template: how many messages, how
// many of them have a status of 400 or more, and their durations (nil when
// none had one).
type RouteStats struct {
	Route    string
	Count    int64
	Errors   int64
	Duration *DurationSummary
}

// StatsBucket is the traffic of one bucket, whose messages were created in
// [Start, Start+interval).
type StatsBucket struct {
	Start time.Time
	Count int64
	// Dropped is how many of Count ingest rules dropped: counted, not stored.
	Dropped int64
	Status  StatusCounts
	// Duration summarises the durations; nil when no message had one.
	Duration *DurationSummary
}

// StatusCounts counts messages by the class of their status code.
type StatusCounts struct {
	Informational int64 `json:"1xx"`
	Success       int64 `json:"2xx"`
	Redirection   int64 `json:"3xx"`
	ClientError   int64 `json:"4xx"`
	ServerError   int64 `json:"5xx"`
}

// DurationSummary gives percentiles of the durations of Count messages; the
// service may approximate them.
type DurationSummary struct {
	Count         int64
	P50, P95, P99 time.Duration
}

// KeyCount is a path or an application (Key), with how many messages it has and
// how many of them have a status of 400 or more.
type KeyCount struct {
	Key    string
	Count  int64
	Errors int64
}

// Stats computes traffic statistics (GET /v1/stats).
func (c *Client) Stats(ctx context.Context, opts StatsOptions) (*Stats, error) {
	q := opts.ListOptions
	q.Limit, q.Cursor = 0, ""
	values := q.values()
	if opts.Interval != "" {
		values.Set("interval", opts.Interval)
	}
	u := c.messages.JoinPath("..", "stats")
	u.RawQuery = values.Encode()
	r := call{method: http.MethodGet, url: u}
	raw, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var reply struct {
		replyText
		Data *statsJSON `json:"data"`
	}
	if err := decode(r, raw, &reply, &reply.replyText); err != nil {
		return nil, err
	}
	if reply.Data == nil {
		return nil, fmt.Errorf("httpclient: %s: the reply has no statistics", r)
	}
	stats, err := reply.Data.stats()
	if err != nil {
		return nil, fmt.Errorf("httpclient: %s: %w", r, err)
	}
	return stats, nil
}

// statsJSON and the types below are the wire form of Stats.
type statsJSON struct {
	From      time.Time    `json:"from"`
	To        time.Time    `json:"to"`
	Interval  string       `json:"interval"`
	Total     bucketJSON   `json:"total"`
	Buckets   []bucketJSON `json:"buckets"`
	TopPaths  []keyJSON    `json:"top_paths"`
	TopNames  []keyJSON    `json:"top_names"`
	TopRoutes []routeJSON  `json:"top_routes"`
	// RollupsOnlyBefore is absent unless part of the range is counted
	// from rollups alone.
	RollupsOnlyBefore time.Time `json:"rollups_only_before"`
}

type routeJSON struct {
	Route    string        `json:"route"`
	Count    int64         `json:"count"`
	Errors   int64         `json:"errors"`
	Duration *durationJSON `json:"duration_ms"`
}

type bucketJSON struct {
	Start    time.Time     `json:"start"`
	Count    int64         `json:"count"`
	Dropped  int64         `json:"dropped"`
	Status   StatusCounts  `json:"status"`
	Duration *durationJSON `json:"duration_ms"`
}

type durationJSON struct {
	Count int64       `json:"count"`
	P50   json.Number `json:"p50"`
	P95   json.Number `json:"p95"`
	P99   json.Number `json:"p99"`
}

type keyJSON struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	Count  int64  `json:"count"`
	Errors int64  `json:"errors"`
}

func (s *statsJSON) stats() (*Stats, error) {
	out := &Stats{From: s.From, To: s.To, Interval: s.Interval, Buckets: make([]StatsBucket, len(s.Buckets)),
		RollupsOnlyBefore: s.RollupsOnlyBefore}
	var err error
	if out.Total, err = s.Total.bucket(); err != nil {
		return nil, fmt.Errorf("total: %w", err)
	}
	out.Total.Start = time.Time{}
	for i, b := range s.Buckets {
		if out.Buckets[i], err = b.bucket(); err != nil {
			return nil, fmt.Errorf("bucket %d: %w", i, err)
		}
	}
	for _, k := range s.TopPaths {
		out.TopPaths = append(out.TopPaths, KeyCount{Key: k.Path, Count: k.Count, Errors: k.Errors})
	}
	for _, k := range s.TopNames {
		out.TopNames = append(out.TopNames, KeyCount{Key: k.Name, Count: k.Count, Errors: k.Errors})
	}
	for _, r := range s.TopRoutes {
		durations, err := bucketJSON{Duration: r.Duration}.bucket()
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Route, err)
		}
		out.TopRoutes = append(out.TopRoutes, RouteStats{Route: r.Route, Count: r.Count, Errors: r.Errors, Duration: durations.Duration})
	}
	return out, nil
}

func (b bucketJSON) bucket() (StatsBucket, error) {
	out := StatsBucket{Start: b.Start, Count: b.Count, Dropped: b.Dropped, Status: b.Status}
	if b.Duration == nil {
		return out, nil
	}
	out.Duration = &DurationSummary{Count: b.Duration.Count}
	for _, p := range []struct {
		into *time.Duration
		ms   json.Number
	}{{&out.Duration.P50, b.Duration.P50}, {&out.Duration.P95, b.Duration.P95}, {&out.Duration.P99, b.Duration.P99}} {
		d, err := parseMS(string(p.ms))
		if err != nil {
			return StatsBucket{}, fmt.Errorf("duration_ms: %w", err)
		}
		*p.into = d
	}
	return out, nil
}
