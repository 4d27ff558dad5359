package esquery

import (
	"context"
	"fmt"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// oldestFirst is a re-scrub scan's order.
var oldestFirst = []object{
	{"created_at": object{"order": "asc", "format": "strict_date_optional_time_nanos"}},
	{"id": object{"order": "asc"}},
}

// Scan refreshes the daily indices, so that it sees every write before it,
// then searches q's messages, readable or not, oldest first from after its
// cursor (search_after).
func (s *Queries) Scan(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("elastic: scan: limit must be at least 1, got %d", q.Limit)
	}
	if err := s.client.Do(ctx, "refresh before a scan", esapi.IndicesRefreshRequest{Index: []string{s.names.ReadPattern()},
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil); err != nil {
		return nil, err
	}
	f := &filters{}
	f.term("account", q.Scope.Account)
	f.term("domain", q.Scope.Domain)
	f.bound("created_at", "gte", q.From)
	f.bound("created_at", "lt", q.To)
	if len(q.Names) > 0 {
		f.add(object{"terms": object{"name": q.Names}})
	}
	body := object{"size": q.Limit, "sort": oldestFirst}
	if q.After != nil {
		if q.After.CreatedAt.After(q.To) {
			return nil, nil
		}
		body["search_after"] = []string{esdoc.QueryTime(q.After.CreatedAt), q.After.ID}
	}
	if f.empty {
		return nil, nil
	}
	page, err := s.search(ctx, "scan", f, body, q.Limit)
	return page.Messages, err
}
