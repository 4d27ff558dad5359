package esquery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/domain"
)

// maxIndices bounds the daily indices one purge looks at: 27 years of days.
const maxIndices = 10000

// unblockTimeout bounds lifting the purge's write blocks after the caller's
// context has ended.
const unblockTimeout = 10 * time.Second

// indexBuckets is a terms aggregation on _index.
type indexBuckets struct {
	Aggregations struct {
		Indices struct {
			Buckets []struct {
				Index    string `json:"key"`
				DocCount int64  `json:"doc_count"`
				// Newest is the latest ExpiresAt in milliseconds, rounded
				// down (date_nanos aggregate as milliseconds).
				Newest struct {
					Millis *float64 `json:"value"`
				} `json:"newest"`
				Unexpired struct {
					DocCount int64 `json:"doc_count"`
				} `json:"unexpired"`
			} `json:"buckets"`
		} `json:"indices"`
	} `json:"aggregations"`
}

// PurgeExpired deletes whole daily indices none of whose messages is unexpired
// at now (ExpiresAt <= now for all) and returns how many messages they held.
// An index with any unexpired message stays whole until a later purge; List and
// Get never return its expired messages.
//
// It never deletes a message written concurrently: the candidates found on the
// searchable data are write-blocked (waiting for writes in flight), refreshed
// and checked again, and only then deleted. A write refused by the block fails
// with ports.ErrUnavailable; retried, it goes into that day's index again,
// created anew if the purge deleted it.
// Candidates that turn out to hold an unexpired message are unblocked.
//
// beforeDelete is given the days of the indices about to be deleted, once
// they are write-blocked, refreshed and checked: they are deleted only if
// it returns nil (what it keeps of them is kept before they go), and
// unblocked otherwise. The daily indices of the statistics' rollups
// (esrollup) outlive them: PurgeRollups deletes those.
func (s *Queries) PurgeExpired(ctx context.Context, now time.Time, beforeDelete func(context.Context, []time.Time) error) (deleted int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("elastic: purge: %w", err)
	}
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	return s.purgeIndices(ctx, s.names.ReadPattern(), now, beforeDelete)
}

// PurgeRollups deletes the daily indices of the statistics' rollups
// (esrollup) whose UTC day ended by before, and returns how many documents
// they held.
func (s *Queries) PurgeRollups(ctx context.Context, before time.Time) (int64, error) {
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	reply, err := s.aggregate(ctx, "purge: find old rollups", []string{s.names.RollupsPattern()},
		object{"size": 0, "aggs": object{"indices": object{"terms": object{"field": "_index", "size": maxIndices}}}})
	if err != nil {
		return 0, err
	}
	var (
		old     []string
		deleted int64
	)
	for _, b := range reply.Aggregations.Indices.Buckets {
		if day, ok := s.names.DayOf(b.Index); ok && !day.Add(24*time.Hour).After(before) {
			old = append(old, b.Index)
			deleted += b.DocCount
		}
	}
	if len(old) == 0 {
		return 0, nil
	}
	err = s.client.Do(ctx, "purge: delete old rollups", esapi.IndicesDeleteRequest{Index: old, IgnoreUnavailable: esapi.BoolPtr(true)}, nil)
	if err != nil {
		return 0, err
	}
	return deleted, nil
}

// purgeIndices deletes the indices of pattern whose documents have all
// expired at now, once beforeDelete returned nil for their days, and
// returns how many documents they held.
func (s *Queries) purgeIndices(ctx context.Context, pattern string, now time.Time, beforeDelete func(context.Context, []time.Time) error) (deleted int64, err error) {
	candidates, err := s.expiredCandidates(ctx, pattern, now)
	if err != nil || len(candidates) == 0 {
		return 0, err
	}
	return s.deleteIndices(ctx, candidates, func(ctx context.Context, indices []string) ([]string, int64, error) {
		return s.fullyExpired(ctx, indices, now)
	}, beforeDelete)
}

// PurgeClassDays deletes the daily indices of class (an account's
// retention rule) whose UTC day ended by keptFrom, once beforeDelete
// returned nil for their days, and returns how many documents they held:
// every message of such a day was created before keptFrom. They are
// write-blocked and refreshed first, so that the count holds every write
// acknowledged before.
func (s *Queries) PurgeClassDays(ctx context.Context, class domain.RetentionClass, keptFrom time.Time, beforeDelete func(context.Context, []time.Time) error) (int64, error) {
	pattern := s.names.ClassPattern(class)
	if pattern == "" {
		return 0, nil
	}
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	var rows []struct {
		Index string `json:"index"`
	}
	if err := s.client.Do(ctx, "purge: a retention class's indices", esapi.CatIndicesRequest{
		Index: []string{pattern}, Format: "json", H: []string{"index"},
	}, &rows); err != nil {
		return 0, err
	}
	var old []string
	for _, r := range rows {
		if day, ok := s.names.DayOf(r.Index); ok && !day.Add(24*time.Hour).After(keptFrom) {
			old = append(old, r.Index)
		}
	}
	if len(old) == 0 {
		return 0, nil
	}
	return s.deleteIndices(ctx, old, s.documentCounts, beforeDelete)
}

// documentCounts returns indices, all of them, and how many documents
// they hold.
func (s *Queries) documentCounts(ctx context.Context, indices []string) ([]string, int64, error) {
	reply, err := s.aggregate(ctx, "purge: count the indices' documents", indices,
		object{"size": 0, "aggs": object{"indices": object{"terms": object{"field": "_index", "size": maxIndices}}}})
	if err != nil {
		return nil, 0, err
	}
	var count int64
	for _, b := range reply.Aggregations.Indices.Buckets {
		count += b.DocCount
	}
	return indices, count, nil
}

// deleteIndices write-blocks candidates (waiting for writes in flight),
// refreshes them, and deletes those that check returns, once beforeDelete
// returned nil for their days; it unblocks the others and returns the
// count check gave.
func (s *Queries) deleteIndices(ctx context.Context, candidates []string,
	check func(context.Context, []string) ([]string, int64, error), beforeDelete func(context.Context, []time.Time) error) (deleted int64, err error) {
	var expired []string
	defer func() {
		kept := slices.DeleteFunc(slices.Clone(candidates), func(index string) bool { return slices.Contains(expired, index) })
		if len(kept) > 0 {
			err = errors.Join(err, s.unblock(ctx, kept))
		}
	}()
	if err := s.client.Do(ctx, "purge: block writes", esapi.IndicesAddBlockRequest{
		Index: candidates, Block: "write", IgnoreUnavailable: esapi.BoolPtr(true),
	}, nil); err != nil {
		return 0, err
	}
	if err := s.client.Do(ctx, "purge: refresh", esapi.IndicesRefreshRequest{
		Index: candidates, IgnoreUnavailable: esapi.BoolPtr(true),
	}, nil); err != nil {
		return 0, err
	}
	found, count, err := check(ctx, candidates)
	if err != nil || len(found) == 0 {
		return 0, err
	}
	days := make([]time.Time, 0, len(found))
	for _, index := range found {
		if day, ok := s.names.DayOf(index); ok && !slices.ContainsFunc(days, day.Equal) {
			days = append(days, day)
		}
	}
	if err := beforeDelete(ctx, days); err != nil {
		return 0, fmt.Errorf("elastic: purge: keeping what the indices hold: %w", err)
	}
	if err := s.client.Do(ctx, "purge: delete indices", esapi.IndicesDeleteRequest{
		Index: found, IgnoreUnavailable: esapi.BoolPtr(true),
	}, nil); err != nil {
		return 0, err
	}
	expired = found
	return count, nil
}

// expiredCandidates are the daily indices whose newest searchable ExpiresAt is
// not after now. The aggregation's millisecond rounding can only add
// candidates, which fullyExpired then checks exactly.
func (s *Queries) expiredCandidates(ctx context.Context, pattern string, now time.Time) ([]string, error) {
	body := object{"size": 0, "aggs": object{"indices": object{
		"terms": object{"field": "_index", "size": maxIndices},
		"aggs":  object{"newest": object{"max": object{"field": "expires_at"}}},
	}}}
	reply, err := s.aggregate(ctx, "purge: find expired indices", []string{pattern}, body)
	if err != nil {
		return nil, err
	}
	nowMillis := float64(now.UnixMilli())
	var candidates []string
	for _, b := range reply.Aggregations.Indices.Buckets {
		if b.Newest.Millis != nil && *b.Newest.Millis <= nowMillis {
			candidates = append(candidates, b.Index)
		}
	}
	return candidates, nil
}

// fullyExpired counts exactly, in the given indices, the messages unexpired at
// now; it returns the indices without any and how many messages they hold.
func (s *Queries) fullyExpired(ctx context.Context, indices []string, now time.Time) ([]string, int64, error) {
	unexpired := &filters{}
	unexpired.bound("expires_at", "gt", now)
	var filter object
	switch {
	case unexpired.empty:
		filter = object{"match_none": object{}}
	case len(unexpired.clauses) == 0:
		filter = object{"match_all": object{}}
	default:
		filter = unexpired.clauses[0]
	}
	body := object{"size": 0, "aggs": object{"indices": object{
		"terms": object{"field": "_index", "size": maxIndices},
		"aggs":  object{"unexpired": object{"filter": filter}},
	}}}
	reply, err := s.aggregate(ctx, "purge: check expired indices", indices, body)
	if err != nil {
		return nil, 0, err
	}
	var expired []string
	var messages int64
	for _, b := range reply.Aggregations.Indices.Buckets {
		if b.Unexpired.DocCount == 0 {
			expired = append(expired, b.Index)
			messages += b.DocCount
		}
	}
	return expired, messages, nil
}

func (s *Queries) aggregate(ctx context.Context, op string, indices []string, body object) (indexBuckets, error) {
	body["track_total_hits"] = false
	var reply indexBuckets
	reader, err := esclient.JSONBody(body)
	if err != nil {
		return reply, err
	}
	err = s.client.Do(ctx, op, esapi.SearchRequest{
		Index:                     indices,
		Body:                      reader,
		IgnoreUnavailable:         esapi.BoolPtr(true),
		AllowNoIndices:            esapi.BoolPtr(true),
		AllowPartialSearchResults: esapi.BoolPtr(false),
	}, &reply)
	return reply, err
}

// unblock lifts the purge's write block from indices, even after ctx has
// ended. Should that fail too, the next start-up lifts it (see liveSettings).
func (s *Queries) unblock(ctx context.Context, indices []string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unblockTimeout)
	defer cancel()
	body, err := esclient.JSONBody(object{"index.blocks.write": nil})
	if err != nil {
		return err
	}
	return s.client.Do(ctx, "purge: unblock", esapi.IndicesPutSettingsRequest{
		Index: indices, Body: body, IgnoreUnavailable: esapi.BoolPtr(true),
	}, nil)
}
