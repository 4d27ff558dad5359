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
// account), deletes the class's daily indices whose day ended by the
// class's current keep before now, and empties the bodies of its messages
// past its bodies retention. Each class's messages have daily indices of
// their own (esindex.Names.ForClass), so a class's day goes whole, as
// SQLite's day file of a class does, its rollups kept first.
func (s *Store) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	return classpurge.Store{Name: "elastic", PurgeExpired: s.PurgeExpired, Classes: s.queries.RetentionClasses, Purge: s.purgeClass}.
		PurgeRetention(ctx, now, current)
}

// purgeClass deletes class's daily indices whose day ended by keptFrom,
// their rollups kept first (a class's messages of a day not yet ended at
// keptFrom stay until it has), and the class's documents created at or
// before keptFrom in the policy's daily indices, where a store before the
// classes had indices of their own wrote them; it empties the bodies of
// the class's documents created at or before bodiesFrom that still hold
// one (null: a body left "" would still exist for the next purge's query),
// and returns how many documents it deleted. The test distribution has no
// delete- or update-by-query: those documents go, and bodies are emptied,
// by bulk requests by id, refreshed, page after page.
func (s *Store) purgeClass(ctx context.Context, class domain.RetentionClass, keptFrom, bodiesFrom time.Time) (int64, error) {
	deleted, err := s.queries.PurgeClassDays(ctx, class, keptFrom, s.keepRollupsOf)
	if err != nil {
		return deleted, err
	}
	names := s.indices.Names()
	err = s.queries.EachClassDoc(ctx, names.PolicyPattern(), class, keptFrom, false, func(docs []esquery.ClassDoc) error {
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
	if err != nil {
		return deleted, err
	}
	err = s.queries.EachClassDoc(ctx, []string{names.ReadPattern()}, class, bodiesFrom, true, func(docs []esquery.ClassDoc) error {
		indices := make([]string, len(docs))
		for i, d := range docs {
			indices[i] = d.Index
		}
		if err := s.indices.LearnIndexLayouts(ctx, indices); err != nil {
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
