package esquery

import (
	"context"
	"fmt"
	"slices"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/ports"
)

// refHit is a hit of a search for where messages are, not what they hold.
type refHit struct {
	Index  string `json:"_index"`
	ID     string `json:"_id"`
	Source struct {
		Domain    string        `json:"domain"`
		CreatedAt record.Micros `json:"created_at"`
		Subjects  []string      `json:"subjects"`
	} `json:"_source"`
}

// ref is the hit's ref, its partition its index.
func (h refHit) ref() ports.SubjectRef {
	return ports.SubjectRef{ID: h.ID, Domain: h.Source.Domain, CreatedAt: h.Source.CreatedAt.Time(), Partition: h.Index}
}

// refFields are the only fields of _source a refHit reads.
var refFields = []string{"domain", "created_at"}

// SubjectRefs searches the messages of q's account whose subjects hold any
// of q's hashes (a terms query on the keyword field subjects), readable or
// not, newest first from after q's cursor, at most q.Limit. Like List it
// sees a write after the next refresh (ReadLag).
func (s *Queries) SubjectRefs(ctx context.Context, q ports.SubjectQuery) ([]ports.SubjectRef, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("elastic: subject messages: limit must be at least 1, got %d", q.Limit)
	}
	if len(q.Hashes) == 0 {
		return nil, nil
	}
	f := subjectFilters(q)
	body := object{"size": q.Limit, "sort": newestFirst}
	if q.After != nil {
		if after, ok := searchAfter(*q.After, f); ok {
			body["search_after"] = after
		}
	}
	if f.empty {
		return nil, nil
	}
	hits, err := s.searchRefs(ctx, "subject messages", f, body)
	if err != nil {
		return nil, err
	}
	refs := make([]ports.SubjectRef, len(hits))
	for i, h := range hits {
		refs[i] = h.ref()
	}
	return refs, nil
}

// subjectFilters selects the documents of q's Account, Domain, Hashes and
// CreatedBefore.
func subjectFilters(q ports.SubjectQuery) *filters {
	f := &filters{}
	f.term("account", q.Account)
	if q.Domain != "" {
		f.term("domain", q.Domain)
	}
	f.add(object{"terms": object{"subjects": q.Hashes}})
	if !q.CreatedBefore.IsZero() {
		f.bound("created_at", "lte", q.CreatedBefore)
	}
	return f
}

// TallyTargets searches at most limit of the tallies whose subjects hold
// any of q's hashes (q's Account, Domain and CreatedBefore too) and returns
// where each is.
func (s *Queries) TallyTargets(ctx context.Context, q ports.SubjectQuery, limit int) ([]esclient.Target, error) {
	if len(q.Hashes) == 0 {
		return nil, nil
	}
	f := subjectFilters(q)
	if f.empty {
		return nil, nil
	}
	f.tallies = true
	hits, err := s.searchRefs(ctx, "subject tallies", f, object{"size": limit})
	if err != nil {
		return nil, err
	}
	targets := make([]esclient.Target, len(hits))
	for i, h := range hits {
		targets[i] = esclient.Target{Index: h.Index, ID: h.ID}
	}
	return targets, nil
}

// MessageSubjects searches account's message id, readable or not, and
// returns its ref and subjects (ports.ErrNotFound when none).
func (s *Queries) MessageSubjects(ctx context.Context, account, id string) (ports.SubjectRef, []string, error) {
	f := &filters{}
	f.term("account", account)
	f.term("id", id)
	hits, err := s.searchRefs(ctx, "message subjects", f, object{"size": 1, "sort": newestFirst}, "subjects")
	if err != nil {
		return ports.SubjectRef{}, nil, err
	}
	if len(hits) == 0 {
		return ports.SubjectRef{}, nil, fmt.Errorf("elastic: message %q: %w", id, ports.ErrNotFound)
	}
	return hits[0].ref(), hits[0].Source.Subjects, nil
}

// Located searches account's messages with any of ids, readable or not,
// and returns the index and _id of each document: an id another account's
// message has is not among them. It sees what the last refresh made
// searchable; the eraser refreshes as it writes (elastic's erase.go).
func (s *Queries) Located(ctx context.Context, account string, ids []string) ([]esclient.Target, error) {
	hits, err := s.locate(ctx, account, ids)
	found := make([]esclient.Target, len(hits))
	for i, h := range hits {
		found[i] = esclient.Target{Index: h.Index, ID: h.ID}
	}
	return found, err
}

// Subjected is a message document and the subject hashes it is indexed
// under.
type Subjected struct {
	esclient.Target
	Subjects []string
}

// LocatedSubjects is Located with each document's subjects.
func (s *Queries) LocatedSubjects(ctx context.Context, account string, ids []string) ([]Subjected, error) {
	hits, err := s.locate(ctx, account, ids, "subjects")
	found := make([]Subjected, len(hits))
	for i, h := range hits {
		found[i] = Subjected{Target: esclient.Target{Index: h.Index, ID: h.ID}, Subjects: h.Source.Subjects}
	}
	return found, err
}

// locate searches account's documents of ids (Located), with the more
// fields of their _source.
func (s *Queries) locate(ctx context.Context, account string, ids []string, more ...string) ([]refHit, error) {
	var found []refHit
	for chunk := range slices.Chunk(ids, maxLookupIDs) {
		f := &filters{}
		f.term("account", account)
		f.add(object{"terms": object{"id": chunk}})
		// Twice the ids: one id may be stored in two daily indices.
		hits, err := s.searchRefs(ctx, "locate messages", f, object{"size": 2 * len(chunk), "sort": newestFirst}, more...)
		if err != nil {
			return nil, err
		}
		found = append(found, hits...)
	}
	return found, nil
}

// searchRefs runs body with f as its query (searchInto) and reads the
// refs of its hits.
func (s *Queries) searchRefs(ctx context.Context, op string, f *filters, body object, more ...string) ([]refHit, error) {
	body["_source"] = append(slices.Clip(refFields), more...)
	var reply struct {
		Hits struct {
			Hits []refHit `json:"hits"`
		} `json:"hits"`
	}
	if err := s.searchInto(ctx, op, f, body, &reply); err != nil {
		return nil, err
	}
	return reply.Hits.Hits, nil
}
