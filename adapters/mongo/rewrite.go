package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.MessageRewriter = (*Store)(nil)

// messagesOldestFirst is the scan's sort: the scope index read backwards.
var messagesOldestFirst = bson.D{{Key: fieldCreatedAt, Value: 1}, {Key: fieldID, Value: 1}}

// ScanForRewrite finds q's messages oldest first on the scope index; no
// tally, which a re-scrub leaves as ingest scrubbed it.
func (s *Store) ScanForRewrite(ctx context.Context, q ports.RewriteScan) ([]domain.Message, error) {
	// Stored times are whole microseconds: bounds rounded up, as List's.
	filter := append(scopeFilter(q.Scope), bson.E{Key: fieldCreatedAt, Value: bson.D{
		{Key: "$gte", Value: roundUp(q.From, time.Microsecond).UnixMicro()}, {Key: "$lt", Value: roundUp(q.To, time.Microsecond).UnixMicro()}}}, notTally)
	if len(q.Names) > 0 {
		filter = append(filter, bson.E{Key: fieldName, Value: bson.D{{Key: "$in", Value: q.Names}}})
	}
	if q.After != nil {
		at := q.After.CreatedAt.UnixMicro()
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: fieldCreatedAt, Value: bson.D{{Key: "$gt", Value: at}}}},
			bson.D{{Key: fieldCreatedAt, Value: at}, {Key: fieldID, Value: bson.D{{Key: "$gt", Value: q.After.ID}}}},
		}})
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(messagesOldestFirst).SetLimit(int64(q.Limit)))
	if err != nil {
		return nil, storeError(ctx, "scan", err)
	}
	var found []record.Record
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "scan", err)
	}
	out := make([]domain.Message, len(found))
	for i, r := range found {
		out[i] = r.Message()
	}
	return out, nil
}

// RewriteMessages sets each stored document's scrubbable fields and rules
// record in one unordered bulk write; the server writes each document anew
// (WiredTiger does not update a document in place). A document no longer
// stored matches nothing and stays absent.
func (s *Store) RewriteMessages(ctx context.Context, msgs []domain.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	models := make([]mongodrv.WriteModel, len(msgs))
	for i, m := range msgs {
		r := record.FromMessage(m)
		set := bson.D{{Key: fieldIP, Value: r.IPAddress}, {Key: fieldPath, Value: r.Path}, {Key: fieldRoute, Value: r.Route},
			{Key: fieldRequest + "." + fieldHeaders, Value: r.Request.Headers}, {Key: fieldRequest + "." + fieldBody, Value: r.Request.Body},
			{Key: fieldResponse + "." + fieldHeaders, Value: r.Response.Headers}, {Key: fieldResponse + "." + fieldBody, Value: r.Response.Body}}
		update := bson.D{{Key: "$set", Value: set}}
		if r.Rules == nil {
			update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: fieldRules, Value: ""}}})
		} else {
			set = append(set, bson.E{Key: fieldRules, Value: r.Rules})
			update[0].Value = set
		}
		models[i] = mongodrv.NewUpdateOneModel().SetFilter(append(scopeFilter(m.Scope()), bson.E{Key: fieldID, Value: m.ID})).
			SetUpdate(update)
	}
	if _, err := s.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
		return storeError(ctx, fmt.Sprintf("rewrite %d messages", len(msgs)), err)
	}
	return nil
}

// ExpungeRewritten has nothing to do that a client may: the server freed
// the old documents' space for reuse when it wrote the new ones. What still
// holds the old values (the oplog of a replica set, until it rolls over;
// backups and file system snapshots; free pages until WiredTiger reuses
// them or compact runs) is the operator's, docs/rules.md says.
func (s *Store) ExpungeRewritten(context.Context, time.Time, time.Time) error { return nil }
