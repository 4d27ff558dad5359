package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/rulerecord"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RuleSetStore = (*AlertStore)(nil)

// collRuleSets holds every version of every account's rule set, as versions
// (versions.go) keyed by account: _id "<account>/<number>". Versions are never
// deleted, so the compare-and-set is one conditional write, the insert of the
// next _id, which only one writer can make: a writer that read the expected
// version as the latest inserts its successor, and a version written since
// makes the insert fail. No transaction is needed (FerretDB has none).
const collRuleSets = "rule_sets"

type ruleSetVersion = version[rulerecord.Record]

// RuleSet returns the account's current version.
func (a *AlertStore) RuleSet(ctx context.Context, account string) (rules.Version, error) {
	v, ok, err := latestVersion[rulerecord.Record](ctx, a.coll(collRuleSets), account)
	if err != nil || !ok {
		return rules.Version{Account: account}, err
	}
	return ruleVersionOf(v)
}

// ReplaceRuleSet inserts version expected+1 if expected is the latest.
func (a *AlertStore) ReplaceRuleSet(ctx context.Context, v rules.Version, expected int64) (rules.Version, error) {
	coll := a.coll(collRuleSets)
	stale := fmt.Errorf("mongo: rule set of %q is not at version %d: %w", v.Account, expected, ports.ErrStale)
	latest, err := latestVer(ctx, coll, v.Account)
	if err != nil {
		return rules.Version{}, err
	}
	if latest != expected {
		return rules.Version{}, stale
	}
	v.Number = expected + 1
	rec, err := rulerecord.Of(v)
	if err != nil {
		return rules.Version{}, fmt.Errorf("mongo: %w", err)
	}
	_, err = coll.InsertOne(ctx, ruleSetVersion{ID: versionID(v.Account, v.Number), Key: v.Account, Ver: v.Number, Doc: rec})
	switch {
	case isDuplicate(err):
		return rules.Version{}, stale
	case err != nil:
		return rules.Version{}, storeError(ctx, "write "+collRuleSets, err)
	}
	return v, nil
}

// RuleSetHistory returns the account's versions below before, newest first.
func (a *AlertStore) RuleSetHistory(ctx context.Context, account string, before int64, limit int) ([]rules.Version, error) {
	filter := bson.D{{Key: fieldKey, Value: account}}
	if before > 0 {
		filter = append(filter, bson.E{Key: fieldVer, Value: bson.D{{Key: "$lt", Value: before}}})
	}
	cur, err := a.coll(collRuleSets).Find(ctx, filter, options.Find().SetSort(newestVersionFirst).SetLimit(int64(limit)))
	if err != nil {
		return nil, storeError(ctx, "read "+collRuleSets, err)
	}
	var found []ruleSetVersion
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "read "+collRuleSets, err)
	}
	out := make([]rules.Version, len(found))
	for i, v := range found {
		if out[i], err = ruleVersionOf(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RuleSetVersions returns every account's latest version number: one $group
// counting each account's versions, which are numbered 1, 2, … without a gap
// and never deleted (FerretDB has no $max accumulator).
func (a *AlertStore) RuleSetVersions(ctx context.Context) (map[string]int64, error) {
	cur, err := a.coll(collRuleSets).Aggregate(ctx, mongodrv.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$" + fieldKey}, {Key: fieldVer, Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	})
	if err != nil {
		return nil, storeError(ctx, "read "+collRuleSets, err)
	}
	var found []struct {
		Account string `bson:"_id"`
		Ver     int64  `bson:"ver"`
	}
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "read "+collRuleSets, err)
	}
	out := make(map[string]int64, len(found))
	for _, f := range found {
		out[f.Account] = f.Ver
	}
	return out, nil
}

func ruleVersionOf(v ruleSetVersion) (rules.Version, error) {
	out, err := v.Doc.Version()
	if err != nil {
		return rules.Version{}, errors.Join(fmt.Errorf("mongo: %s %q", collRuleSets, v.ID), err)
	}
	return out, nil
}
