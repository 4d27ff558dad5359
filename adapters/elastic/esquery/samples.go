package esquery

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// The statistics engine reads messages narrow: StreamSamples and Recount
// read the few fields the statistics count from doc values, never _source
// (kilobytes of bodies each), in pages of samplePage sorted newest first as
// the indices are (search_after on created_at and id).
const samplePage = 10_000

// nanosFormat is the docvalue format of the times: exact to the nanosecond.
const nanosFormat = "strict_date_optional_time_nanos"

var sampleFields = []object{
	{"field": "created_at", "format": nanosFormat}, {"field": "status_code"}, {"field": record.JSONDuration},
	{"field": "path"}, {"field": "name"}, {"field": record.JSONRouteTemplate},
	{"field": "visible_at", "format": nanosFormat}, {"field": "expires_at", "format": nanosFormat},
	{"field": "tally"}, // what ingest rules dropped, counted as dropped
}

// StreamSamples yields the sample of each of scope's messages readable at now
// that passes f (ports.SampleStreamer).
func (s *Queries) StreamSamples(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, yield func(stats.Sample) error) error {
	filter := readable(scope, now)
	filter.matching(f)
	return s.eachNarrow(ctx, "stats: samples", filter, func(m *domain.Message) error { return yield(stats.SampleOf(*m)) })
}

// Recount yields every message of scope created in [from, to), of the
// application name alone when not "", readable or not, with the fields a
// rollup counts (statsengine.MarkStore: the minutes it is asked for are
// settled, their messages searchable).
func (s *Queries) Recount(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(*domain.Message) error) error {
	f := &filters{}
	f.term("account", scope.Account)
	f.term("domain", scope.Domain)
	f.matching(domain.Filter{Name: name, From: from, To: to})
	return s.eachNarrow(ctx, "stats: recount", f, yield)
}

// eachNarrow yields the narrow message of each hit of f, page after page.
func (s *Queries) eachNarrow(ctx context.Context, op string, f *filters, yield func(*domain.Message) error) error {
	if f.empty {
		return nil
	}
	body := object{
		"size": samplePage, "sort": newestFirst, "_source": false, "docvalue_fields": sampleFields,
		"track_total_hits": false, "query": object{"bool": object{"filter": f.clauses}},
	}
	for {
		reader, err := esclient.JSONBody(body)
		if err != nil {
			return err
		}
		page := &narrowReader{yield: yield}
		err = func() error {
			ctx, cancel := s.client.Bounded(ctx)
			defer cancel()
			return s.client.Do(ctx, op, esapi.SearchRequest{
				Index: []string{s.names.ReadPattern()}, Body: reader,
				IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true),
				AllowPartialSearchResults: esapi.BoolPtr(false),
			}, page)
		}()
		switch {
		case page.yieldErr != nil:
			return page.yieldErr
		case err != nil:
			return err
		case page.hits < samplePage:
			return nil
		}
		body["search_after"] = page.last
	}
}

// narrowReader reads the hits of a search for narrow messages and yields
// each, keeping the last one's sort values for the next page.
type narrowReader struct {
	yield    func(*domain.Message) error
	yieldErr error
	hits     int
	last     []string
	m        domain.Message
}

func (r *narrowReader) DecodeReply(rd io.Reader) error {
	w := esclient.NewReplyReader(rd)
	defer w.Release()
	return w.Object(func(key string) error {
		if key != "hits" {
			return w.Skip()
		}
		return w.Object(func(key string) error {
			if key != "hits" {
				return w.Skip()
			}
			return w.Array(r.readHit(w))
		})
	})
}

func (r *narrowReader) readHit(w *esclient.ReplyReader) func() error {
	return func() error {
		r.m = domain.Message{}
		err := w.Object(func(key string) error {
			switch key {
			case "fields":
				return w.Object(func(field string) error { return r.readField(w, field) })
			case "sort":
				r.last = w.ReadStrings()
				return w.Err()
			}
			return w.Skip()
		})
		if err != nil {
			return err
		}
		r.hits++
		if r.yieldErr == nil {
			r.yieldErr = r.yield(&r.m)
		}
		return nil
	}
}

// readField reads one docvalue field: an array of one value.
func (r *narrowReader) readField(w *esclient.ReplyReader, field string) error {
	var err error
	read := func() error {
		switch field {
		case "created_at":
			r.m.CreatedAt, err = parseNanos(w.ReadString())
		case "visible_at":
			r.m.VisibleAt, err = parseNanos(w.ReadString())
		case "expires_at":
			r.m.ExpiresAt, err = parseNanos(w.ReadString())
		case "status_code":
			r.m.StatusCode = int(w.ReadInt64())
		case record.JSONDuration:
			var ms float64
			ms, err = strconv.ParseFloat(string(w.ReadNumber()), 64)
			r.m.Duration, r.m.HasDuration = time.Duration(math.Round(ms*1000))*time.Microsecond, true
		case "path":
			r.m.Path = w.ReadString()
		case "name":
			r.m.Name = w.ReadString()
		case record.JSONRouteTemplate:
			r.m.Route = w.ReadString()
		case "tally":
			r.m.Tally = w.ReadBool()
		default:
			return w.Skip()
		}
		if err != nil {
			return w.Malformed(fmt.Errorf("%s: %w", field, err))
		}
		return w.Err()
	}
	return w.Array(read)
}

func parseNanos(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
