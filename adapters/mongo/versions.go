package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/ports"
)

// version is one version of a record kept as versions (AlertStore explains
// why): _id "<key>/<ver>", the record in doc.
type version[R any] struct {
	ID  string `bson:"_id"`
	Key string `bson:"key"`
	Ver int64  `bson:"ver"`
	Doc R      `bson:"doc"`
}

// Field names of a version.
const (
	fieldKey = "key"
	fieldVer = "ver"
	docField = "doc."
)

var newestVersionFirst = bson.D{{Key: fieldVer, Value: -1}}

func versionID(key string, ver int64) string { return key + "/" + strconv.FormatInt(ver, 10) }

// latestVersion returns the latest version of key; false when there is none.
func latestVersion[R any](ctx context.Context, coll *mongodrv.Collection, key string) (version[R], bool, error) {
	var v version[R]
	err := coll.FindOne(ctx, bson.D{{Key: fieldKey, Value: key}}, options.FindOne().SetSort(newestVersionFirst)).Decode(&v)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return v, false, nil
	case err != nil:
		return v, false, storeError(ctx, "read "+coll.Name(), err)
	}
	return v, true, nil
}

// latestVer is the number of key's latest version, 0 when there is none.
func latestVer(ctx context.Context, coll *mongodrv.Collection, key string) (int64, error) {
	var v struct {
		Ver int64 `bson:"ver"`
	}
	err := coll.FindOne(ctx, bson.D{{Key: fieldKey, Value: key}},
		options.FindOne().SetSort(newestVersionFirst).SetProjection(bson.D{{Key: fieldVer, Value: 1}})).Decode(&v)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return 0, nil
	case err != nil:
		return 0, storeError(ctx, "read "+coll.Name(), err)
	}
	return v.Ver, nil
}

// swapVersion makes doc version prev+1 of key if prev is the latest version
// (0: none yet), or fails with ports.ErrStale, changing nothing. Only one of
// the writers inserting the same _id succeeds. Each successful writer deletes
// the version it replaced, so a writer that read long ago may find its
// version's successor gone and insert it again: it then finds a later version
// after its insert (the one read that is not by _id, since only an index on
// key finds the latest) and takes its own back out. Every other step reads or
// writes by _id, which FerretDB finds without reading the whole collection.
func swapVersion[R any](ctx context.Context, coll *mongodrv.Collection, key string, prev int64, doc R) error {
	stale := fmt.Errorf("mongo: %s %q is not at version %d: %w", coll.Name(), key, prev, ports.ErrStale)
	if prev > 0 {
		n, err := coll.CountDocuments(ctx, bson.D{{Key: fieldID, Value: versionID(key, prev)}})
		if err != nil {
			return storeError(ctx, "read "+coll.Name(), err)
		}
		if n == 0 {
			return stale // replaced since, or never written
		}
	}
	mine := versionID(key, prev+1)
	if _, err := coll.InsertOne(ctx, version[R]{ID: mine, Key: key, Ver: prev + 1, Doc: doc}); isDuplicate(err) {
		return stale
	} else if err != nil {
		return storeError(ctx, "write "+coll.Name(), err)
	}
	if latest, err := latestVer(ctx, coll, key); err != nil {
		return err
	} else if latest != prev+1 {
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: fieldID, Value: mine}}); err != nil {
			return storeError(ctx, "write "+coll.Name(), err)
		}
		return stale
	}
	if prev > 0 {
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: fieldID, Value: versionID(key, prev)}}); err != nil {
			return storeError(ctx, "write "+coll.Name(), err)
		}
	}
	return nil
}

// latestVersions returns the latest version of every key with a version that
// filter selects (on doc's fields, which a key's versions share), in key order.
func latestVersions[R any](ctx context.Context, coll *mongodrv.Collection, filter bson.D) ([]version[R], error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: fieldKey, Value: 1}, {Key: fieldVer, Value: -1}}))
	if err != nil {
		return nil, storeError(ctx, "read "+coll.Name(), err)
	}
	var all []version[R]
	if err := cur.All(ctx, &all); err != nil {
		return nil, storeError(ctx, "read "+coll.Name(), err)
	}
	latest := all[:0]
	for _, v := range all {
		if len(latest) == 0 || latest[len(latest)-1].Key != v.Key {
			latest = append(latest, v)
		}
	}
	return latest, nil
}

// versionIndexes are the indexes every versioned collection needs.
func versionIndexes() []mongodrv.IndexModel {
	return []mongodrv.IndexModel{{Keys: bson.D{{Key: fieldKey, Value: 1}, {Key: fieldVer, Value: -1}}, Options: options.Index().SetName("key_ver")}}
}

// versionKeys returns the distinct keys of the versions filter selects.
func versionKeys(ctx context.Context, coll *mongodrv.Collection, filter bson.D) ([]string, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: fieldKey, Value: 1}}))
	if err != nil {
		return nil, storeError(ctx, "read "+coll.Name(), err)
	}
	var found []struct {
		Key string `bson:"key"`
	}
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "read "+coll.Name(), err)
	}
	keys := make([]string, 0, len(found))
	for _, f := range found {
		if !slices.Contains(keys, f.Key) {
			keys = append(keys, f.Key)
		}
	}
	return keys, nil
}
