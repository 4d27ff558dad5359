package elastic

import (
	"context"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/classpurge"
	"github.com/reqlog/reqlog/adapters/elastic/esquery"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RetentionPurger = (*Store)(nil)

// PurgeRetention purges what has expired (PurgeExpired: whole daily
// indices), then, class by class (the documents' retention_rule, of their
// account), deletes the messages created longer than the class's current
// keep before now and empties the bodies of those past its bodies
// retention. The daily indices hold every class: the test distribution has
// no delete- or update-by-query, so each is a bulk request of deletes or
// partial updates by id, refreshed, page after page; the rollups of the
// messages about to go are kept first. Elasticsearch marks the old
// documents deleted; their space goes back as segments merge.
func (s *Store) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	return classpurge.Store{Name: "elastic", PurgeExpired: s.PurgeExpired, Classes: s.queries.RetentionClasses, Purge: s.purgeClass}.
		PurgeRetention(ctx, now, current)
}

// purgeClass deletes class's documents created at or before keptFrom, their
// rollups kept first, and empties the bodies of those created at or before
// bodiesFrom that still hold one (null: a body left "" would still exist
// for the next purge's query); it returns how many it deleted.
func (s *Store) purgeClass(ctx context.Context, class domain.RetentionClass, keptFrom, bodiesFrom time.Time) (int64, error) {
	var deleted int64
	err := s.queries.EachClassDoc(ctx, class, keptFrom, false, func(docs []esquery.ClassDoc) error {
		hours := statsengine.ScopeHours{}
		for _, d := range docs {
			hours.Add(d.Scope, d.CreatedAt)
		}
		if err := s.marked.KeepHours(ctx, hours); err != nil {
			return err
		}
		n, err := s.client.BulkRefreshed(ctx, "purge: delete a retention class's messages", bulkOf(docs, "delete", nil))
		deleted += n
		return err
	})
	if err != nil || !bodiesFrom.After(keptFrom) {
		return deleted, err
	}
	err = s.queries.EachClassDoc(ctx, class, bodiesFrom, true, func(docs []esquery.ClassDoc) error {
		at := make([]domain.Message, len(docs))
		for i, d := range docs {
			at[i].CreatedAt = d.CreatedAt
		}
		if err := s.indices.LearnLayouts(ctx, at); err != nil {
			return err
		}
		_, err := s.client.BulkRefreshed(ctx, "purge: empty a retention class's bodies", bulkOf(docs, "update", s.withoutBodies))
		return err
	})
	return deleted, err
}

// withoutBodies is the partial update that empties the bodies of a
// document of index, and its full-text field, which holds them too,
// except in an index created before in-place indexing, where that field
// alone holds its path and headers' words (they stay, the bodies' words
// with them, until the message goes).
func (s *Store) withoutBodies(index string) string {
	if legacy, _ := s.indices.Layouts().Lookup(index); legacy {
		return `{"doc":{"request":{"body":null},"response":{"body":null}}}`
	}
	return `{"doc":{"request":{"body":null},"response":{"body":null},"text":null}}`
}

// bulkOf is a bulk request of action on each of docs, each followed by
// its source when source is not nil.
func bulkOf(docs []esquery.ClassDoc, action string, source func(index string) string) *strings.Reader {
	var b []byte
	for _, d := range docs {
		b = jsonbytes.StringMember(b, `{"`+action+`":{"_index":`, d.Index)
		b = jsonbytes.StringMember(b, `,"_id":`, d.ID)
		b = append(b, "}}\n"...)
		if source != nil {
			b = append(append(b, source(d.Index)...), '\n')
		}
	}
	return strings.NewReader(string(b))
}
