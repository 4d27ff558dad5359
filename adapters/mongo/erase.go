package mongo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.Eraser         = (*Store)(nil)
	_ ports.TallyEraser    = (*Store)(nil)
	_ ports.SubjectIndexer = (*Store)(nil)
)

// The subject index is each message document's subjects array, indexed
// with its account (indexSubjects). Hide sets expiresAt to the epoch, which
// every read honours and the TTL monitor, where there is one, deletes;
// Delete deletes the documents. Tallies (tally: true) carry subjects too:
// SubjectMessages leaves them out, EraseTallies deletes them.

// subjectFilter selects the documents of q's Account, Domain, Hashes and
// CreatedBefore.
func subjectFilter(q ports.SubjectQuery) bson.D {
	filter := bson.D{{Key: fieldAccount, Value: q.Account}, {Key: fieldSubjects, Value: bson.D{{Key: "$in", Value: q.Hashes}}}}
	if q.Domain != "" {
		filter = append(filter, bson.E{Key: fieldDomain, Value: q.Domain})
	}
	if !q.CreatedBefore.IsZero() {
		filter = append(filter, bson.E{Key: fieldCreatedAt, Value: bson.D{{Key: "$lte", Value: q.CreatedBefore.UnixMicro()}}})
	}
	return filter
}

// EraseTallies deletes q's tallies.
func (s *Store) EraseTallies(ctx context.Context, q ports.SubjectQuery) (int64, error) {
	res, err := s.coll.DeleteMany(ctx, append(subjectFilter(q), bson.E{Key: fieldTally, Value: true}))
	if err != nil {
		return 0, storeError(ctx, "erase tallies", err)
	}
	return res.DeletedCount, nil
}

// SubjectMessages finds q's messages by the subject index, newest first.
func (s *Store) SubjectMessages(ctx context.Context, q ports.SubjectQuery) ([]ports.SubjectRef, error) {
	filter := append(subjectFilter(q), notTally)
	if q.After != nil {
		at := q.After.CreatedAt.UnixMicro()
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: fieldCreatedAt, Value: bson.D{{Key: "$lt", Value: at}}}},
			bson.D{{Key: fieldCreatedAt, Value: at}, {Key: fieldID, Value: bson.D{{Key: "$lt", Value: q.After.ID}}}},
		}})
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(newestFirst).SetLimit(int64(q.Limit)).
		SetProjection(bson.D{{Key: fieldID, Value: 1}, {Key: fieldDomain, Value: 1}, {Key: fieldCreatedAt, Value: 1}}))
	if err != nil {
		return nil, storeError(ctx, "subject messages", err)
	}
	var found []struct {
		ID        string        `bson:"_id"`
		Domain    string        `bson:"domain"`
		CreatedAt record.Micros `bson:"createdAt"`
	}
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "subject messages", err)
	}
	refs := make([]ports.SubjectRef, len(found))
	for i, f := range found {
		refs[i] = s.refOf(f.ID, f.Domain, f.CreatedAt)
	}
	return refs, nil
}

// refOf is a message's ref, its partition the collection and the day.
func (s *Store) refOf(id, domain string, created record.Micros) ports.SubjectRef {
	at := created.Time()
	return ports.SubjectRef{ID: id, Domain: domain, CreatedAt: at, Partition: s.coll.Name() + "/" + at.Format(time.DateOnly)}
}

// MessageSubjects reads account's message id's subjects array.
func (s *Store) MessageSubjects(ctx context.Context, account, id string) (ports.SubjectRef, []string, error) {
	var found struct {
		Domain    string        `bson:"domain"`
		CreatedAt record.Micros `bson:"createdAt"`
		Subjects  []string      `bson:"subjects"`
	}
	err := s.coll.FindOne(ctx, bson.D{{Key: fieldAccount, Value: account}, {Key: fieldID, Value: id}},
		options.FindOne().SetProjection(bson.D{{Key: fieldDomain, Value: 1}, {Key: fieldCreatedAt, Value: 1}, {Key: fieldSubjects, Value: 1}})).
		Decode(&found)
	if errors.Is(err, mongodrv.ErrNoDocuments) {
		return ports.SubjectRef{}, nil, fmt.Errorf("mongo: message %q: %w", id, ports.ErrNotFound)
	}
	if err != nil {
		return ports.SubjectRef{}, nil, storeError(ctx, "message subjects", err)
	}
	return s.refOf(id, found.Domain, found.CreatedAt), found.Subjects, nil
}

// IndexSubjects adds each entry's hashes to its document's subjects
// array ($addToSet), in one bulk write.
func (s *Store) IndexSubjects(ctx context.Context, account string, entries []ports.SubjectEntry) (int64, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	models := make([]mongodrv.WriteModel, len(entries))
	for i, e := range entries {
		models[i] = mongodrv.NewUpdateOneModel().
			SetFilter(bson.D{{Key: fieldAccount, Value: account}, {Key: fieldID, Value: e.Ref.ID}}).
			SetUpdate(bson.D{{Key: "$addToSet", Value: bson.D{{Key: fieldSubjects, Value: bson.D{{Key: "$each", Value: e.Hashes}}}}}})
	}
	res, err := s.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if err != nil {
		return 0, storeError(ctx, "index subjects", err)
	}
	return res.MatchedCount, nil
}

// byIDs selects account's documents of refs.
func byIDs(account string, refs []ports.SubjectRef) bson.D {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return bson.D{{Key: fieldAccount, Value: account}, {Key: fieldID, Value: bson.D{{Key: "$in", Value: ids}}}}
}

// Hide sets the expiry of account's messages refs to erasure.HiddenExpiry.
func (s *Store) Hide(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	res, err := s.coll.UpdateMany(ctx, byIDs(account, refs), bson.D{{Key: "$set", Value: bson.D{
		{Key: fieldExpiresAt, Value: record.MicrosOf(erasure.HiddenExpiry)},
		{Key: fieldExpireAt, Value: erasure.HiddenExpiry},
	}}})
	if err != nil {
		return 0, storeError(ctx, "hide", err)
	}
	return res.MatchedCount, nil
}

// Delete deletes account's messages refs.
func (s *Store) Delete(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	res, err := s.coll.DeleteMany(ctx, byIDs(account, refs))
	if err != nil {
		return 0, storeError(ctx, "delete", err)
	}
	return res.DeletedCount, nil
}

// Expunge does nothing: MongoDB reuses a deleted document's space in its
// storage engine, which reqlog does not reach (compact is the operator's).
func (s *Store) Expunge(context.Context) error { return nil }

// collErasures is the journal of erasures: one document per erasure, _id
// "<account>/<id>", its record as JSON in doc (times to the microsecond,
// which a BSON date is not).
const collErasures = "erasures"

var _ ports.ErasureJournal = (*AlertStore)(nil)

type erasureDoc struct {
	Key     string `bson:"_id"`
	Account string `bson:"account"`
	ID      string `bson:"id"`
	Doc     string `bson:"doc"`
}

func (d erasureDoc) erasure() (erasure.Erasure, error) {
	var e erasure.Erasure
	if err := json.Unmarshal([]byte(d.Doc), &e); err != nil {
		return erasure.Erasure{}, fmt.Errorf("mongo: erasure %s: %w", d.ID, err)
	}
	return e, nil
}

// SaveErasure writes e, replacing the document of its account and id.
func (a *AlertStore) SaveErasure(ctx context.Context, e erasure.Erasure) error {
	doc, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("mongo: encode erasure: %w", err)
	}
	key := e.Account + "/" + e.ID
	_, err = a.coll(collErasures).ReplaceOne(ctx, bson.D{{Key: "_id", Value: key}},
		erasureDoc{Key: key, Account: e.Account, ID: e.ID, Doc: string(doc)}, options.Replace().SetUpsert(true))
	if err != nil {
		return storeError(ctx, "save erasure", err)
	}
	return nil
}

// Erasure returns account's erasure id.
func (a *AlertStore) Erasure(ctx context.Context, account, id string) (erasure.Erasure, error) {
	es, err := a.findErasures(ctx, bson.D{{Key: "_id", Value: account + "/" + id}}, nil)
	if err != nil {
		return erasure.Erasure{}, err
	}
	if len(es) == 0 {
		return erasure.Erasure{}, fmt.Errorf("mongo: erasure %q: %w", id, ports.ErrNotFound)
	}
	return es[0], nil
}

// Erasures returns account's erasures before the id before, newest first.
func (a *AlertStore) Erasures(ctx context.Context, account, before string, limit int) ([]erasure.Erasure, error) {
	filter := bson.D{{Key: "account", Value: account}}
	if before != "" {
		filter = append(filter, bson.E{Key: "id", Value: bson.D{{Key: "$lt", Value: before}}})
	}
	return a.findErasures(ctx, filter, options.Find().SetSort(bson.D{{Key: "id", Value: -1}}).SetLimit(int64(limit)))
}

// AllErasures returns every account's erasures.
func (a *AlertStore) AllErasures(ctx context.Context) ([]erasure.Erasure, error) {
	return a.findErasures(ctx, bson.D{}, nil)
}

func (a *AlertStore) findErasures(ctx context.Context, filter bson.D, opts *options.FindOptionsBuilder) ([]erasure.Erasure, error) {
	var found []erasureDoc
	if opts == nil {
		opts = options.Find()
	}
	cur, err := a.coll(collErasures).Find(ctx, filter, opts)
	if err != nil {
		return nil, storeError(ctx, "erasures", err)
	}
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "erasures", err)
	}
	out := make([]erasure.Erasure, 0, len(found))
	for _, d := range found {
		e, err := d.erasure()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
