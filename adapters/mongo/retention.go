package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/adapters/classpurge"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RetentionPurger = (*Store)(nil)

// PurgeRetention purges what has expired (PurgeExpired), then, class by
// class (the documents' retentionRule, of their account), deletes the
// messages created longer than the class's current keep before now and
// empties the bodies of those past its bodies retention: FerretDB has no
// TTL index, and a TTL index would delete at the expiry stamped at ingest,
// not at a rule shortened since. Each is one command on the class's index.
func (s *Store) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	return classpurge.Store{Name: "mongo", PurgeExpired: s.PurgeExpired, Classes: s.retentionClasses, Purge: s.purgeClass}.
		PurgeRetention(ctx, now, current)
}

// retentionClasses lists the classes of the messages stored.
func (s *Store) retentionClasses(ctx context.Context) ([]domain.RetentionClass, error) {
	cur, err := s.coll.Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: fieldRetention, Value: bson.D{{Key: "$exists", Value: true}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{
			{Key: "account", Value: "$" + fieldAccount}, {Key: "rule", Value: "$" + fieldRetention}}}}}},
	})
	if err != nil {
		return nil, storeError(ctx, "purge: retention classes", err)
	}
	var groups []struct {
		ID struct {
			Account string `bson:"account"`
			Rule    string `bson:"rule"`
		} `bson:"_id"`
	}
	if err := cur.All(ctx, &groups); err != nil {
		return nil, storeError(ctx, "purge: retention classes", err)
	}
	classes := make([]domain.RetentionClass, len(groups))
	for i, g := range groups {
		classes[i] = domain.RetentionClass{Account: g.ID.Account, Rule: g.ID.Rule}
	}
	return classes, nil
}

// purgeClass deletes class's messages created at or before keptFrom and
// empties the bodies of those created at or before bodiesFrom that still
// have one; it returns how many it deleted.
func (s *Store) purgeClass(ctx context.Context, class domain.RetentionClass, keptFrom, bodiesFrom time.Time) (int64, error) {
	of := func(createdBy time.Time) bson.D {
		return bson.D{{Key: fieldRetention, Value: class.Rule}, {Key: fieldAccount, Value: class.Account},
			{Key: fieldCreatedAt, Value: bson.D{{Key: "$lte", Value: createdBy.UnixMicro()}}}}
	}
	if err := s.keepRollupsOf(ctx, of(keptFrom)); err != nil {
		return 0, err
	}
	res, err := s.coll.DeleteMany(ctx, of(keptFrom))
	if err != nil {
		return 0, storeError(ctx, "purge", err)
	}
	if !bodiesFrom.After(keptFrom) {
		return res.DeletedCount, nil
	}
	requestBody, responseBody := fieldRequest+"."+fieldBody, fieldResponse+"."+fieldBody
	withBodies := append(of(bodiesFrom), bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: requestBody, Value: bson.D{{Key: "$ne", Value: ""}}}},
		bson.D{{Key: responseBody, Value: bson.D{{Key: "$ne", Value: ""}}}},
	}})
	if _, err := s.coll.UpdateMany(ctx, withBodies, bson.D{{Key: "$set", Value: bson.D{
		{Key: requestBody, Value: ""}, {Key: responseBody, Value: ""}}}}); err != nil {
		return res.DeletedCount, storeError(ctx, "purge: bodies", err)
	}
	return res.DeletedCount, nil
}
