package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reqlog/reqlog/ports"
)

var _ ports.SubjectIndexer = (*Store)(nil)

// IndexSubjects adds each entry's hashes to its document's keyword field
// subjects, keeping those it holds: one search of account's documents of
// the entries' ids with their subjects, then one refreshed bulk update of
// the documents that gain a hash, each with its whole array (there is no
// update-by-query or script in every distribution reqlog supports). It
// returns how many of the entries' messages it found.
func (s *Store) IndexSubjects(ctx context.Context, account string, entries []ports.SubjectEntry) (int64, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	adding := map[string][]string{}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		adding[e.Ref.ID] = append(adding[e.Ref.ID], e.Hashes...)
		ids = append(ids, e.Ref.ID)
	}
	docs, err := s.queries.LocatedSubjects(ctx, account, ids)
	if err != nil {
		return 0, err
	}
	found := map[string]bool{}
	var body []byte
	updates := 0
	for _, d := range docs {
		found[d.ID] = true
		held := slices.Compact(slices.Sorted(slices.Values(d.Subjects)))
		merged := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(held), adding[d.ID]...))))
		if len(merged) == len(held) {
			continue // indexed under every hash already
		}
		doc, err := json.Marshal(map[string]any{"doc": map[string]any{"subjects": merged}})
		if err != nil {
			return 0, err
		}
		body = append(append(appendBulkAction(body, "update", d.Target), doc...), '\n')
		updates++
	}
	if updates > 0 {
		if _, err := s.client.BulkRefreshed(ctx, fmt.Sprintf("index subjects: %d", updates), bytes.NewReader(body)); err != nil {
			return 0, err
		}
	}
	return int64(len(found)), nil
}
