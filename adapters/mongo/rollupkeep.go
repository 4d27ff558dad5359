package mongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
)

// keepRollupsOf counts and keeps, at their marks' versions, the rollups of
// the marked minutes of the messages filter selects, from those messages,
// before a purge deletes them: the statistics count them after
// (ports.RollupKeeper). A no-op when the server deletes messages itself
// (a TTL index): its rollups then go with them.
func (s *Store) keepRollupsOf(ctx context.Context, filter bson.D) error {
	if !s.outlive {
		return nil
	}
	projection := bson.D{{Key: fieldID, Value: 0}, {Key: fieldAccount, Value: 1}, {Key: fieldDomain, Value: 1}, {Key: fieldCreatedAt, Value: 1}}
	type placed struct {
		Account   string `bson:"account"`
		Domain    string `bson:"domain"`
		CreatedAt int64  `bson:"createdAt"`
	}
	hours := statsengine.ScopeHours{}
	err := findEach(ctx, s.coll, "purge: the rollups of the messages to delete", filter, func(m *placed) error {
		hours.Add(domain.Scope{Account: m.Account, Domain: m.Domain}, time.UnixMicro(m.CreatedAt).UTC())
		return nil
	}, projection)
	if err != nil {
		return err
	}
	return s.marked.KeepHours(ctx, hours)
}

// PurgeRollups deletes the marks and kept rollups of the minutes before
// before (ports.RollupKeeper) and returns how many kept rollups went.
func (s *Store) PurgeRollups(ctx context.Context, before time.Time) (int64, error) {
	return s.rollups.purgeBefore(ctx, before)
}

// purgeBefore deletes the marks and kept rollups of the minutes before
// before; it returns how many kept rollups it deleted.
func (r *rollups) purgeBefore(ctx context.Context, before time.Time) (int64, error) {
	old := bson.D{{Key: markMinute, Value: bson.D{{Key: "$lt", Value: before.Unix()}}}}
	// The kept rollups first: a mark without one is counted again, a kept
	// rollup without its mark is never read.
	kept, err := r.kept.DeleteMany(ctx, old)
	if err != nil {
		return 0, storeError(ctx, "purge: rollups", err)
	}
	if _, err := r.marks.DeleteMany(ctx, old); err != nil {
		return kept.DeletedCount, storeError(ctx, "purge: rollups' marks", err)
	}
	return kept.DeletedCount, nil
}

// dropTTLIndex drops coll's TTL index, which an earlier start may have
// made; a collection without one is left as it is.
func dropTTLIndex(ctx context.Context, coll *mongodrv.Collection) error {
	err := coll.Indexes().DropOne(ctx, indexExpireAtTTL)
	var server mongodrv.ServerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &server) && (server.HasErrorCode(codeIndexNotFound) || server.HasErrorCode(codeNamespaceNotFound)):
		return nil
	default:
		return storeError(ctx, "dropping the TTL index", err)
	}
}

// Server error codes dropTTLIndex takes for "there is none".
const (
	codeNamespaceNotFound = 26
	codeIndexNotFound     = 27
)
