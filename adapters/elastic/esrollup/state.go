package esrollup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
)

// stateID is the id of the one document of the state index.
const stateID = "marks"

// state says from which created_at every stored message is marked. A store
// set up without messages marks from the start (From 0); one set up over
// messages stored by an earlier version marks from its start plus
// domain.MaxFutureSkew (no message created later can have been stored
// before), and Marking says the messages stored before are still to be
// marked (MarkExisting), after which From is 0.
type state struct {
	From    int64 `json:"from"` // Unix microseconds; 0: the start
	Marking bool  `json:"marking"`
}

var stateMappings = map[string]any{"dynamic": "strict", "properties": map[string]any{
	"from": map[string]any{"type": "long"}, "marking": map[string]any{"type": "boolean"},
}}

// SetUp creates the state index and its document if they are missing, at
// now. Any number of replicas may start at once: the first document wins.
func (r *Rollups) SetUp(ctx context.Context, autoExpandReplicas string, now time.Time) error {
	ctx, cancel := r.client.Bounded(ctx)
	defer cancel()
	body, err := esclient.JSONBody(map[string]any{
		"settings": map[string]any{"index": map[string]any{"number_of_shards": 1, "auto_expand_replicas": autoExpandReplicas}},
		"mappings": stateMappings,
	})
	if err != nil {
		return err
	}
	err = r.client.Do(ctx, "create the rollups' state", esapi.IndicesCreateRequest{Index: r.names.RollupState(), Body: body}, nil)
	if err != nil && !errors.Is(err, esclient.ErrIndexExists) {
		return err
	}
	if _, found, err := r.readState(ctx); err != nil || found {
		return err
	}
	var indices []struct {
		Index string `json:"index"`
	}
	if err := r.client.Do(ctx, "list message indices", esapi.CatIndicesRequest{Index: []string{r.names.ReadPattern()},
		Format: "json", H: []string{"index"}, ExpandWildcards: "all"}, &indices); err != nil {
		return err
	}
	first := state{}
	if len(indices) > 0 {
		first = state{From: now.Add(domain.MaxFutureSkew).UnixMicro(), Marking: true}
	}
	doc, err := esclient.JSONBody(first)
	if err != nil {
		return err
	}
	_, err = r.client.DoAllowing(ctx, "create the rollups' state", esapi.IndexRequest{Index: r.names.RollupState(),
		DocumentID: stateID, OpType: "create", Body: doc, Refresh: "true"}, nil, http.StatusConflict)
	return err
}

// readState reads the state document, realtime.
func (r *Rollups) readState(ctx context.Context) (state, bool, error) {
	var reply struct {
		Found  bool  `json:"found"`
		Source state `json:"_source"`
	}
	status, err := r.client.DoAllowing(ctx, "read the rollups' state", esapi.GetRequest{Index: r.names.RollupState(),
		DocumentID: stateID}, &reply, http.StatusNotFound)
	if err != nil || status == http.StatusNotFound || !reply.Found {
		return state{}, false, err
	}
	return reply.Source, true, nil
}

// MarksFrom is the earliest created_at from which every stored message is
// marked (statsengine.MarkStore), from the state.
func (r *Rollups) MarksFrom(ctx context.Context) (time.Time, error) {
	return r.marksSince.From(ctx, func(ctx context.Context) (int64, bool, error) {
		st, found, err := r.readState(ctx)
		return st.From, found, err
	})
}

// Marking reports whether messages stored before the marks are still to be
// marked (MarkExisting).
func (r *Rollups) Marking(ctx context.Context) (bool, error) {
	st, found, err := r.readState(ctx)
	return found && st.Marking, err
}

// compositePage is how many (scope, application, minute) buckets one page
// of MarkExisting's aggregation holds.
const compositePage = 5000

// MarkExisting marks every minute holding messages stored before the marks
// (by an earlier version of the store), has keep count and keep the rollups
// of each scope's span of marked minutes, then sets the state to mark from
// the start. It reads the messages by a composite aggregation of scope,
// application and minute, after a refresh, in pages; run again after a
// failure, it marks again, which changes nothing but versions.
func (r *Rollups) MarkExisting(ctx context.Context, keep func(context.Context, statsengine.ScopeSpan) error) error {
	if marking, err := r.Marking(ctx); err != nil || !marking {
		return err
	}
	pattern := []string{r.names.ReadPattern()}
	if err := r.client.Do(ctx, "mark existing messages: refresh", esapi.IndicesRefreshRequest{Index: pattern,
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil); err != nil {
		return err
	}
	composite := map[string]any{"size": compositePage, "sources": []any{
		map[string]any{"a": map[string]any{"terms": map[string]any{"field": "account"}}},
		map[string]any{"d": map[string]any{"terms": map[string]any{"field": "domain"}}},
		map[string]any{"n": map[string]any{"terms": map[string]any{"field": "name"}}},
		map[string]any{"m": map[string]any{"date_histogram": map[string]any{"field": "created_at", "fixed_interval": "1m"}}},
	}}
	spans := statsengine.Spans{}
	for {
		body, err := esclient.JSONBody(map[string]any{"size": 0, "track_total_hits": false, "aggs": map[string]any{
			"minutes": map[string]any{"composite": composite,
				"aggs": map[string]any{"expires": map[string]any{"max": map[string]any{"field": "expires_at"}}}},
		}})
		if err != nil {
			return err
		}
		var reply struct {
			Aggregations struct {
				Minutes struct {
					AfterKey map[string]any `json:"after_key"`
					Buckets  []struct {
						Key struct {
							A string `json:"a"`
							D string `json:"d"`
							N string `json:"n"`
							M int64  `json:"m"` // epoch milliseconds
						} `json:"key"`
						DocCount int64 `json:"doc_count"`
						Expires  struct {
							Value float64 `json:"value"` // epoch milliseconds
						} `json:"expires"`
					} `json:"buckets"`
				} `json:"minutes"`
			} `json:"aggregations"`
		}
		bounded, cancel := r.client.Bounded(ctx)
		err = r.client.Do(bounded, "mark existing messages", esapi.SearchRequest{Index: pattern, Body: body,
			IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true),
			AllowPartialSearchResults: esapi.BoolPtr(false)}, &reply)
		cancel()
		if err != nil {
			return err
		}
		var marks statsengine.MarkSet
		for _, b := range reply.Aggregations.Minutes.Buckets {
			// A minute's messages expire within a minute of its latest.
			expires := time.UnixMilli(int64(b.Expires.Value)).Add(time.Minute)
			scope := domain.Scope{Account: b.Key.A, Domain: b.Key.D}
			marks.Add(scope, b.Key.N, time.UnixMilli(b.Key.M), b.DocCount, time.Time{}, expires)
			spans.Add(scope, time.UnixMilli(b.Key.M).Add(time.Minute-time.Nanosecond))
			spans.Add(scope, time.UnixMilli(b.Key.M))
		}
		if _, err := r.send(ctx, "mark existing messages", &marks); err != nil {
			return err
		}
		after := reply.Aggregations.Minutes.AfterKey
		if len(reply.Aggregations.Minutes.Buckets) < compositePage || after == nil {
			break
		}
		composite["after"] = after
	}
	// The messages stored since the first refresh are searchable once more:
	// those of an Append whose marks come later are counted again anyway.
	if err := r.client.Do(ctx, "mark existing messages: refresh", esapi.IndicesRefreshRequest{Index: pattern,
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil); err != nil {
		return err
	}
	for _, span := range spans {
		if err := keep(ctx, *span); err != nil {
			return err
		}
	}
	doc, err := esclient.JSONBody(map[string]any{"doc": state{}})
	if err != nil {
		return err
	}
	if err := r.client.Do(ctx, "mark existing messages: done", esapi.UpdateRequest{Index: r.names.RollupState(),
		DocumentID: stateID, Body: doc, Refresh: "true"}, nil); err != nil {
		return fmt.Errorf("%w (every minute is marked; the next start marks them again)", err)
	}
	r.marksSince.Marked()
	return nil
}
