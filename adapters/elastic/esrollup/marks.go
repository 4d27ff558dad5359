package esrollup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// markDoc is the mark of one application's minute, "<prefix>-rollups-<day>"
// under the id statsengine.MarkID("mark", ...). An Append
// writes it whole (a plain index, no read, no script: the test distribution
// has no scripting), with a fresh version: of concurrent Appends to one
// minute the last write stays, and its version is as fresh as any.
type markDoc struct {
	Kind    string `json:"kind"`
	Account string `json:"account"`
	Domain  string `json:"domain"`
	Name    string `json:"name"`
	Minute  int64  `json:"minute"` // Unix seconds
	Version int64  `json:"version"`
	// VLo and VHi are statsengine.VersionParts, summed by hour (MarkHours).
	VLo int64 `json:"vlo"`
	VHi int64 `json:"vhi"`
	// N counts the messages of the Append that wrote the mark, and Settled
	// is when the minute may be counted (statsengine.Mark), in epoch
	// milliseconds.
	N       int64 `json:"n"`
	Settled int64 `json:"settled"`
	// ExpiresAt bounds the expiry of the minute's messages, in epoch
	// milliseconds: the index goes when every document's has passed.
	ExpiresAt int64 `json:"expires_at"`
}

// Mark marks, after msgs are stored, every application and minute they were
// created in, with one fresh version, in one bulk request. It fails unless
// every mark was written.
func (r *Rollups) Mark(ctx context.Context, msgs []domain.Message) error {
	var marks statsengine.MarkSet
	for _, m := range msgs {
		marks.AddMessage(m)
	}
	written, err := r.send(ctx, "append: marks", &marks)
	if err != nil {
		return err
	}
	at := time.Now()
	r.recent.forgetOlder(at.Add(-r.forgetAfter()))
	r.recent.add(written, at)
	return nil
}

// send writes marks, in one bulk request. A minute is settled when its
// last Append's messages are visible and searchable: its messages were
// stored before its marks, and a search sees them a read lag after that;
// settle adds as much again and a second for clocks and refreshes running
// late, since no refresh precedes a recount (refreshing the day's index at
// every statistics call cost the node about 30 ms of CPU each while
// messages arrived).
func (r *Rollups) send(ctx context.Context, op string, marks *statsengine.MarkSet) ([]statsengine.ScopedMark, error) {
	if marks.Len() == 0 {
		return nil, nil
	}
	searchable := time.Now().Add(r.settle)
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	written := marks.Marks()
	for i := range written {
		mk := &written[i]
		lo, hi := statsengine.VersionParts(mk.Version)
		d := markDoc{Kind: "mark", Account: mk.Scope.Account, Domain: mk.Scope.Domain, Name: mk.Name, Minute: mk.Minute.Unix(),
			Version: int64(mk.Version), VLo: lo, VHi: hi, N: mk.Messages, Settled: max(mk.Settled.UnixMilli(), searchable.UnixMilli()) + 1,
			ExpiresAt: mk.Expires.UnixMilli() + 1}
		mk.Settled, mk.Expires = time.UnixMilli(d.Settled).UTC(), time.UnixMilli(d.ExpiresAt).UTC() // as Marks reads them
		action := map[string]any{"index": map[string]string{"_index": r.names.RollupsFor(mk.Minute),
			"_id": statsengine.MarkID("mark", mk.Scope, mk.Name, mk.Minute)}}
		if err := enc.Encode(action); err != nil {
			return nil, fmt.Errorf("elastic: %s: %w", op, err)
		}
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("elastic: %s: %w", op, err)
		}
	}
	return written, r.client.Bulk(ctx, op, &body)
}

// Sync refreshes the rollups indices of [from, to), so that every mark
// written before is searchable (statsengine.MarkStore): for KeepAll, not in
// a statistics call, which adds the marks of this process a search may not
// show yet instead (recentMarks).
func (r *Rollups) Sync(ctx context.Context, from, to time.Time) error {
	return r.refresh(ctx, "stats: refresh the marks", r.names.RollupsFor, from, to)
}

// refresh refreshes the daily indices index names of [from, to).
func (r *Rollups) refresh(ctx context.Context, op string, index func(time.Time) string, from, to time.Time) error {
	var indices []string
	for day := from.UTC().Truncate(24 * time.Hour); day.Before(to); day = day.Add(24 * time.Hour) {
		indices = append(indices, index(day))
	}
	ctx, cancel := r.client.Bounded(ctx)
	defer cancel()
	return r.client.Do(ctx, op, esapi.IndicesRefreshRequest{
		Index: indices, IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true),
	}, nil)
}

// marksQuery selects the documents of kinds (marks, kept rollups) of
// scope's minutes starting in [from, to), of the application name alone when
// not "".
func marksQuery(scope domain.Scope, name string, from, to time.Time, kinds ...string) map[string]any {
	filter := []any{
		map[string]any{"terms": map[string]any{"kind": kinds}},
		map[string]any{"term": map[string]any{"account": scope.Account}},
		map[string]any{"term": map[string]any{"domain": scope.Domain}},
		map[string]any{"range": map[string]any{"minute": map[string]any{"gte": from.Unix(), "lt": to.Unix()}}},
	}
	if name != "" {
		filter = append(filter, map[string]any{"term": map[string]any{"name": name}})
	}
	return map[string]any{"bool": map[string]any{"filter": filter}}
}

// search runs body over the rollups' indices of [from, to).
func (r *Rollups) search(ctx context.Context, op string, body map[string]any, out any) error {
	reader, err := esclient.JSONBody(body)
	if err != nil {
		return err
	}
	ctx, cancel := r.client.Bounded(ctx)
	defer cancel()
	return r.client.Do(ctx, op, esapi.SearchRequest{
		Index: []string{r.names.RollupsPattern()}, Body: reader,
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true),
		AllowPartialSearchResults: esapi.BoolPtr(false),
	}, out)
}

// marksPage is how many marks one search reads.
const marksPage = 10_000

// Marks yields the marks of scope's minutes meeting [from, to), of the
// application name alone when not "" (statsengine.MarkStore), in pages
// sorted by minute and application.
func (r *Rollups) Marks(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(statsengine.Mark) error) error {
	from = stats.AlignDown(from, time.Minute)
	recent, err := r.recentOf(ctx, scope, name, from, to)
	if err != nil {
		return err
	}
	// Of a minute both searched and recent, the recent mark, unless the
	// search shows it: this process wrote it last, or another did after.
	unshown := make(map[recentKey]statsengine.Mark, len(recent))
	for _, mk := range recent {
		unshown[keyOf(scope, mk)] = mk
	}
	body := map[string]any{"size": marksPage, "query": marksQuery(scope, name, from, to, "mark"), "track_total_hits": false,
		"sort": []any{map[string]any{"minute": "asc"}, map[string]any{"name": "asc"}}}
	for {
		var reply struct {
			Hits struct {
				Hits []struct {
					Source markDoc `json:"_source"`
					Sort   []any   `json:"sort"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := r.search(ctx, "stats: marks", body, &reply); err != nil {
			return err
		}
		hits := reply.Hits.Hits
		for _, h := range hits {
			d := &h.Source
			mk := statsengine.Mark{Minute: time.Unix(d.Minute, 0).UTC(), Name: d.Name, Version: uint64(d.Version),
				Messages: d.N, Expires: time.UnixMilli(d.ExpiresAt).UTC(), Settled: time.UnixMilli(d.Settled).UTC()}
			if own, ok := unshown[keyOf(scope, mk)]; ok {
				if own.Version != mk.Version {
					continue
				}
				delete(unshown, keyOf(scope, mk))
				r.recent.shown(scope, mk)
			}
			if err := yield(mk); err != nil {
				return err
			}
		}
		if len(hits) < marksPage {
			break
		}
		body["search_after"] = hits[len(hits)-1].Sort
	}
	for _, mk := range recent {
		if _, ok := unshown[keyOf(scope, mk)]; ok {
			if err := yield(mk); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarkHours sums the marks of each hour in one aggregation: their versions'
// parts, their number and their messages
// (statsengine.MarkStore). A sum changes when any mark is written again
// with another version, but for a chance of 2^-62. The messages are known
// once every marked minute has a kept rollup, stale or not: its count and
// the messages of the mark written since are at least the minute's.
func (r *Rollups) MarkHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
	yield func(hour time.Time, sum uint64, marks, messages int64) error) error {
	recent, err := r.recentOf(ctx, scope, name, stats.AlignDown(from, time.Minute), to)
	if err != nil {
		return err
	}
	sum := func(field string) map[string]any { return map[string]any{"sum": map[string]any{"field": field}} }
	kind := func(k string) map[string]any { return map[string]any{"term": map[string]any{"kind": k}} }
	body := map[string]any{"size": 0, "track_total_hits": false, "query": marksQuery(scope, name, from, to, "mark", "kept"),
		"aggs": map[string]any{"hours": map[string]any{
			"histogram": map[string]any{"field": "minute", "interval": 3600, "min_doc_count": 1},
			"aggs": map[string]any{
				"marks": map[string]any{"filter": kind("mark"), "aggs": map[string]any{"lo": sum("vlo"), "hi": sum("vhi"), "n": sum("n")}},
				"kept":  map[string]any{"filter": kind("kept"), "aggs": map[string]any{"n": sum("count")}},
			},
		}}}
	var reply struct {
		Aggregations struct {
			Hours struct {
				Buckets []struct {
					Key   float64 `json:"key"`
					Marks struct {
						DocCount int64 `json:"doc_count"`
						Lo       value `json:"lo"`
						Hi       value `json:"hi"`
						N        value `json:"n"`
					} `json:"marks"`
					Kept struct {
						DocCount int64 `json:"doc_count"`
						N        value `json:"n"`
					} `json:"kept"`
				} `json:"buckets"`
			} `json:"hours"`
		} `json:"aggregations"`
	}
	if err := r.search(ctx, "stats: hours of marks", body, &reply); err != nil {
		return err
	}
	hours := map[int64]*markHour{}
	for _, b := range reply.Aggregations.Hours.Buckets {
		if b.Marks.DocCount == 0 {
			continue // kept rollups whose marks are gone: no message
		}
		h := &markHour{marks: b.Marks.DocCount, messages: -1,
			sum: statsengine.SumOfMarks(b.Marks.DocCount, int64(b.Marks.Lo.Value), int64(b.Marks.Hi.Value))}
		if b.Kept.DocCount >= b.Marks.DocCount {
			h.messages = int64(math.Round(b.Kept.N.Value + b.Marks.N.Value))
		}
		hours[int64(b.Key)] = h
	}
	for _, mk := range recent {
		hour := mk.Minute.Truncate(time.Hour).Unix()
		h := hours[hour]
		if h == nil {
			h = &markHour{messages: -1}
			hours[hour] = h
		}
		h.recent = append(h.recent, mk)
	}
	for _, hour := range slices.Sorted(maps.Keys(hours)) {
		h := hours[hour]
		if len(h.recent) > 0 {
			h.sum = withRecent(h.sum, h.recent)
			h.marks += int64(len(h.recent)) // estimates: a recent mark may be searched too
			for _, mk := range h.recent {
				if h.messages >= 0 {
					h.messages += mk.Messages
				}
			}
		}
		if err := yield(time.Unix(hour, 0).UTC(), h.sum, h.marks, h.messages); err != nil {
			return err
		}
	}
	return nil
}

// markHour is what MarkHours tells of an hour: the sum and number of its
// searched marks, its messages (-1: not known), and the recent marks a
// search may not show yet.
type markHour struct {
	sum             uint64
	marks, messages int64
	recent          []statsengine.Mark
}

// value is a metric aggregation's result.
type value struct {
	Value float64 `json:"value"`
}

// mgetDoc is one document of an mget reply. A missing index is an error of
// that document: no document.
type mgetDoc[T any] struct {
	Found  bool            `json:"found"`
	Source T               `json:"_source"`
	Error  json.RawMessage `json:"error"`
}

// maxMget bounds the documents one mget asks for.
const maxMget = 2000

// mget reads the documents at targets (realtime: what a write that
// returned wrote, refreshed or not), calling found with each one there.
func mget[T any](ctx context.Context, client *esclient.Client, op string, targets []esclient.Target, found func(doc *T) error) error {
	for first := 0; first < len(targets); first += maxMget {
		chunk := targets[first:min(first+maxMget, len(targets))]
		docs := make([]map[string]string, len(chunk))
		for i, t := range chunk {
			docs[i] = map[string]string{"_index": t.Index, "_id": t.ID}
		}
		body, err := esclient.JSONBody(map[string]any{"docs": docs})
		if err != nil {
			return err
		}
		var reply struct {
			Docs []mgetDoc[T] `json:"docs"`
		}
		bounded, cancel := client.Bounded(ctx)
		err = client.Do(bounded, op, esapi.MgetRequest{Body: body}, &reply)
		cancel()
		if err != nil {
			return err
		}
		if len(reply.Docs) != len(chunk) {
			return fmt.Errorf("elastic: %s: %d documents in the reply for %d asked", op, len(reply.Docs), len(chunk))
		}
		for i := range reply.Docs {
			d := &reply.Docs[i]
			if len(d.Error) > 0 && !strings.Contains(string(d.Error), "index_not_found_exception") {
				return fmt.Errorf("elastic: %s: %s: %s", op, chunk[i].ID, d.Error)
			}
			if d.Found {
				if err := found(&d.Source); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Scopes lists the scopes that have marks in the minutes of day (a UTC
// day): those whose rollups a purge of the day's messages keeps first.
func (r *Rollups) Scopes(ctx context.Context, day time.Time) ([]domain.Scope, error) {
	body := map[string]any{"size": 0, "track_total_hits": false,
		"query": map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{"kind": "mark"}},
			map[string]any{"range": map[string]any{"minute": map[string]any{"gte": day.Unix(), "lt": day.Add(24 * time.Hour).Unix()}}},
		}}},
		"aggs": map[string]any{"accounts": map[string]any{"terms": map[string]any{"field": "account", "size": maxScopesOfADay},
			"aggs": map[string]any{"domains": map[string]any{"terms": map[string]any{"field": "domain", "size": 10}}}}}}
	var reply struct {
		Aggregations struct {
			Accounts struct {
				Buckets []struct {
					Key     string `json:"key"`
					Domains struct {
						Buckets []struct {
							Key string `json:"key"`
						} `json:"buckets"`
					} `json:"domains"`
				} `json:"buckets"`
			} `json:"accounts"`
		} `json:"aggregations"`
	}
	if err := r.search(ctx, "purge: scopes of a day", body, &reply); err != nil {
		return nil, err
	}
	accounts := reply.Aggregations.Accounts.Buckets
	if len(accounts) == maxScopesOfADay {
		return nil, fmt.Errorf("elastic: purge: more than %d accounts marked on %s", maxScopesOfADay, day.Format(time.DateOnly))
	}
	var scopes []domain.Scope
	for _, a := range accounts {
		for _, d := range a.Domains.Buckets {
			scopes = append(scopes, domain.Scope{Account: a.Key, Domain: d.Key})
		}
	}
	return scopes, nil
}

// maxScopesOfADay bounds the accounts Scopes lists: past it the purge
// fails rather than drop rollups it did not keep.
const maxScopesOfADay = 10_000
