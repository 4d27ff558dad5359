package elastic

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.MessageRewriter = (*Store)(nil)

// ScanForRewrite refreshes the daily indices and searches q's messages
// oldest first (esquery.Queries.Scan).
func (s *Store) ScanForRewrite(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	return s.queries.Scan(ctx, q)
}

// RewriteMessages updates each message's document in its day's index, in
// one bulk request: the scrubbable fields and the rules record written,
// the rest kept (esdoc.AppendUpdate). Elasticsearch writes a new version of
// each document and marks the old one deleted, which stays in its segment
// until a merge (ExpungeRewritten). A document gone meanwhile (404) stays
// gone.
func (s *Store) RewriteMessages(ctx context.Context, msgs []domain.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := s.indices.LearnLayouts(ctx, msgs); err != nil {
		return err
	}
	var body []byte
	for _, m := range msgs {
		index := s.indices.Names().Of(m)
		legacy, known := s.indices.Layouts().Lookup(index)
		if !known {
			continue // no such index: the message is not stored
		}
		body = esdoc.AppendUpdate(body, index, legacy, m)
	}
	if len(body) == 0 {
		return nil
	}
	return s.client.Bulk(ctx, fmt.Sprintf("rewrite %d messages", len(msgs)), bytes.NewReader(body), http.StatusNotFound)
}

// ExpungeRewritten merges away the deleted documents of the range's daily
// indices: their merge policy told to expunge a segment holding any
// (index.merge.policy.expunge_deletes_allowed 0, from its default of 10 %),
// then a force merge with only_expunge_deletes and a flush. What it cannot
// reach: documents Elasticsearch keeps for its retention leases (a copy
// being recovered) until they are released, and snapshots taken before.
func (s *Store) ExpungeRewritten(ctx context.Context, from, to time.Time) error {
	if !from.Before(to) {
		return nil
	}
	var indices []string
	for day := from.UTC().Truncate(24 * time.Hour); day.Before(to); day = day.Add(24 * time.Hour) {
		indices = append(indices, s.indices.Names().DayPattern(day))
	}
	return s.expunge(ctx, indices)
}

// expunge merges away the deleted documents of the daily indices named.
func (s *Store) expunge(ctx context.Context, indices []string) error {
	if len(indices) == 0 {
		return nil
	}
	names := urlIndices(s, indices)
	settings := strings.NewReader(`{"index":{"merge":{"policy":{"expunge_deletes_allowed":0}}}}`)
	if err := s.client.Do(ctx, "expunge: merge policy", esapi.IndicesPutSettingsRequest{Index: names, Body: settings,
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil); err != nil {
		return err
	}
	return s.client.Do(ctx, "expunge: force merge", esapi.IndicesForcemergeRequest{Index: names,
		OnlyExpungeDeletes: esapi.BoolPtr(true), Flush: esapi.BoolPtr(true),
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil)
}

// maxExpungeDays is the most indices an expunge names one by one
// (urlIndices).
const maxExpungeDays = 60
