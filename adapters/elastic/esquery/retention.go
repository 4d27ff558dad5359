package esquery

import (
	"context"
	"fmt"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
)

// RetentionClasses lists the retention classes of the stored documents:
// each account's retention_rule values (the policy's class has none).
func (s *Queries) RetentionClasses(ctx context.Context) ([]domain.RetentionClass, error) {
	body := object{"size": 0, "track_total_hits": false, "aggs": object{"accounts": object{
		"terms": object{"field": "account", "size": maxIndices},
		"aggs":  object{"rules": object{"terms": object{"field": record.JSONRetentionRule, "size": maxIndices}}},
	}}}
	var reply struct {
		Aggregations struct {
			Accounts struct {
				Buckets []struct {
					Account string `json:"key"`
					Rules   struct {
						Buckets []struct {
							Rule string `json:"key"`
						} `json:"buckets"`
					} `json:"rules"`
				} `json:"buckets"`
			} `json:"accounts"`
		} `json:"aggregations"`
	}
	if err := s.searchBody(ctx, "purge: retention classes", body, &reply); err != nil {
		return nil, err
	}
	var classes []domain.RetentionClass
	for _, a := range reply.Aggregations.Accounts.Buckets {
		for _, r := range a.Rules.Buckets {
			classes = append(classes, domain.RetentionClass{Account: a.Account, Rule: r.Rule})
		}
	}
	return classes, nil
}

// ClassDoc is a stored document of a retention class: where it is, and
// what of it the purge needs to keep its rollups first.
type ClassDoc struct {
	Index, ID string
	Scope     domain.Scope
	CreatedAt time.Time
}

// classPage is how many documents EachClassDoc yields at a time.
const classPage = 1000

// EachClassDoc refreshes the daily indices, then yields, page after page
// oldest first, class's documents (messages and tallies) in indices
// created at or before createdBy; with withBodies, only those that still
// hold a body. yield may delete or update what it is given.
func (s *Queries) EachClassDoc(ctx context.Context, indices []string, class domain.RetentionClass, createdBy time.Time, withBodies bool,
	yield func([]ClassDoc) error) error {
	if err := s.client.Do(ctx, "purge: refresh", esapi.IndicesRefreshRequest{Index: []string{s.names.ReadPattern()},
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil); err != nil {
		return err
	}
	f := &filters{}
	f.term("account", class.Account)
	f.term(record.JSONRetentionRule, class.Rule)
	f.bound("created_at", "lte", createdBy)
	if f.empty {
		return nil
	}
	if withBodies {
		f.add(object{"bool": object{"should": []object{
			{"exists": object{"field": "request.body"}}, {"exists": object{"field": "response.body"}},
		}, "minimum_should_match": 1}})
	}
	var after []string
	for {
		body := object{"size": classPage, "sort": oldestFirst, "track_total_hits": false,
			"_source": []string{"account", "domain", "created_at"}, "query": object{"bool": object{"filter": f.clauses}}}
		if after != nil {
			body["search_after"] = after
		}
		var reply struct {
			Hits struct {
				Hits []struct {
					Index  string `json:"_index"`
					ID     string `json:"_id"`
					Source struct {
						Account   string `json:"account"`
						Domain    string `json:"domain"`
						CreatedAt string `json:"created_at"`
					} `json:"_source"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := s.searchIn(ctx, "purge: a retention class's messages", indices, body, &reply); err != nil {
			return err
		}
		hits := reply.Hits.Hits
		if len(hits) == 0 {
			return nil
		}
		docs := make([]ClassDoc, len(hits))
		for i, h := range hits {
			created, err := time.Parse(time.RFC3339Nano, h.Source.CreatedAt)
			if err != nil {
				return fmt.Errorf("elastic: purge: document %s: created_at %q: %w", h.ID, h.Source.CreatedAt, err)
			}
			docs[i] = ClassDoc{Index: h.Index, ID: h.ID, Scope: domain.Scope{Account: h.Source.Account, Domain: h.Source.Domain}, CreatedAt: created.UTC()}
		}
		if err := yield(docs); err != nil {
			return err
		}
		if len(hits) < classPage {
			return nil
		}
		last := hits[len(hits)-1]
		after = []string{esdoc.QueryTime(docs[len(docs)-1].CreatedAt), last.ID}
	}
}

// searchBody runs body over the read pattern and decodes the reply into
// reply.
func (s *Queries) searchBody(ctx context.Context, op string, body object, reply any) error {
	return s.searchIn(ctx, op, []string{s.names.ReadPattern()}, body, reply)
}

// searchIn runs body over indices and decodes the reply into reply.
func (s *Queries) searchIn(ctx context.Context, op string, indices []string, body object, reply any) error {
	reader, err := esclient.JSONBody(body)
	if err != nil {
		return err
	}
	ctx, cancel := s.client.Bounded(ctx)
	defer cancel()
	return s.client.Do(ctx, op, esapi.SearchRequest{
		Index:                     indices,
		Body:                      reader,
		IgnoreUnavailable:         esapi.BoolPtr(true),
		AllowNoIndices:            esapi.BoolPtr(true),
		AllowPartialSearchResults: esapi.BoolPtr(false),
	}, reply)
}
