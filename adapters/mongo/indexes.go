package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Index names; fixed so that a second start-up finds the same indexes and
// creating them again is a no-op.
const (
	indexReference   = "reference_unique"
	indexScopeNewest = "scope_newest"
	indexNameNewest  = "scope_name_newest"
	indexExpiresAt   = "expiresAt_purge"
	indexExpireAtTTL = "expireAt_ttl"
	indexSubjects    = "account_subjects"
	indexRetention   = "retention_class_created"
)

// newestFirst is List's sort; the compound indexes end with it.
var newestFirst = bson.D{{Key: fieldCreatedAt, Value: -1}, {Key: fieldID, Value: -1}}

// indexModels are the indexes every store needs. The page indexes follow the
// equality-sort-range rule: the scope (and application name) by equality, then
// the newest-first sort, so a page reads limit+1 index entries in order.
func indexModels() []mongodrv.IndexModel {
	scope := bson.D{{Key: fieldAccount, Value: 1}, {Key: fieldDomain, Value: 1}}
	scopeAndName := append(append(bson.D{}, scope...), bson.E{Key: fieldName, Value: 1})
	return []mongodrv.IndexModel{
		{
			Keys:    bson.D{{Key: fieldReference, Value: 1}},
			Options: options.Index().SetName(indexReference).SetUnique(true),
		},
		{
			Keys:    append(append(bson.D{}, scope...), newestFirst...),
			Options: options.Index().SetName(indexScopeNewest),
		},
		{
			Keys:    append(scopeAndName, newestFirst...),
			Options: options.Index().SetName(indexNameNewest),
		},
		{
			// The subject index (erase.go): a multikey index of each
			// message's subject hashes.
			Keys:    bson.D{{Key: fieldAccount, Value: 1}, {Key: fieldSubjects, Value: 1}},
			Options: options.Index().SetName(indexSubjects),
		},
		{
			// Serves PurgeRetention (retention.go): a class's messages by
			// CreatedAt. Sparse: the policy's class, most messages, has none.
			Keys:    bson.D{{Key: fieldRetention, Value: 1}, {Key: fieldAccount, Value: 1}, {Key: fieldCreatedAt, Value: 1}},
			Options: options.Index().SetName(indexRetention).SetSparse(true),
		},
		{
			// Serves PurgeExpired, which runs on every server, TTL or not.
			Keys:    bson.D{{Key: fieldExpiresAt, Value: 1}},
			Options: options.Index().SetName(indexExpiresAt),
		},
	}
}

// ensureIndexes creates the indexes that are missing. One command per index:
// FerretDB v1.24 panics (and drops the connection) when one createIndexes
// command names two or more indexes that already exist.
func ensureIndexes(ctx context.Context, coll *mongodrv.Collection) error {
	for _, model := range indexModels() {
		if _, err := coll.Indexes().CreateOne(ctx, model); err != nil {
			return storeError(ctx, "creating indexes", err)
		}
	}
	return nil
}

// ensureTTLIndex asks the server to delete expired messages itself. A server
// that refuses (FerretDB: NotImplemented) is not an error: refused says why, and
// PurgeExpired does the deleting. Only an unreachable server fails.
func ensureTTLIndex(ctx context.Context, coll *mongodrv.Collection) (refused, err error) {
	_, err = coll.Indexes().CreateOne(ctx, mongodrv.IndexModel{
		Keys:    bson.D{{Key: fieldExpireAt, Value: 1}},
		Options: options.Index().SetName(indexExpireAtTTL).SetExpireAfterSeconds(0),
	})
	switch {
	case err == nil:
		return nil, nil
	case unavailable(err) || ctx.Err() != nil:
		return nil, storeError(ctx, "creating the TTL index", err)
	default:
		return fmt.Errorf("the server refused a TTL index: %w", err), nil
	}
}
