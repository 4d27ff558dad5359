package mongo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// rollups keeps the statistics' rollups by marks (statsengine.MarkStore):
// "<collection>_marks" holds a mark per scope, application and minute, which
// an Append writes whole (a replacing upsert) with a fresh version once its
// messages are inserted; "<collection>_rollups" the rollups kept, each
// written whole by the reader that counted it, at the version of the mark it
// read. No document is written both by Appends and by readers: FerretDB runs
// an update as a read and a write without a transaction, so a write can be
// lost to a concurrent one, and then only whole writes of one kind compete:
// whichever stays, a mark's version is as fresh as any and a kept rollup is
// a whole count at the version it names.
type rollups struct {
	messages, marks, kept *mongodrv.Collection
	marksSince            statsengine.MarksSince
}

var _ statsengine.MarkStore = (*rollups)(nil)

// Fields of marks and kept rollups.
const (
	markAccount = "a"
	markDomain  = "d"
	markName    = "n"
	markMinute  = "m" // Unix seconds
	markCount   = "c" // messages of the Append that wrote the mark
	markExpires = "x" // Unix milliseconds: every message of the minute has expired
	keptData    = "data"
	// stateID is the marks collection's one document that is no mark.
	stateID = "~state"
)

// markDoc and keptDoc are the documents.
type markDoc struct {
	ID       string    `bson:"_id"`
	Account  string    `bson:"a"`
	Domain   string    `bson:"d"`
	Name     string    `bson:"n"`
	Minute   int64     `bson:"m"`
	Version  int64     `bson:"v"`
	Count    int64     `bson:"c"`
	Settled  int64     `bson:"s"` // Unix milliseconds: the latest VisibleAt of the Append's messages
	Expires  int64     `bson:"x"`
	ExpireAt time.Time `bson:"expireAt"` // for the TTL index
}

type keptDoc struct {
	ID       string    `bson:"_id"`
	Account  string    `bson:"a"`
	Domain   string    `bson:"d"`
	Name     string    `bson:"n"`
	Minute   int64     `bson:"m"`
	Version  int64     `bson:"v"`
	Data     []byte    `bson:"data"`
	Expires  int64     `bson:"x"`
	ExpireAt time.Time `bson:"expireAt"`
}

// newRollups keeps the rollups of messages beside it, in collections of
// opts (the messages' write concern and read preference).
func newRollups(messages *mongodrv.Collection, opts *options.CollectionOptionsBuilder) *rollups {
	db := messages.Database()
	r := &rollups{messages: messages,
		marks: db.Collection(messages.Name()+"_marks", opts), kept: db.Collection(messages.Name()+"_rollups", opts)}
	return r
}

// rollupIndexModels serve Marks and MarkHours (by scope, application and
// minute) and the purge.
func rollupIndexModels() map[string][]mongodrv.IndexModel {
	expires := mongodrv.IndexModel{Keys: bson.D{{Key: markExpires, Value: 1}}, Options: options.Index().SetName("x_purge")}
	minute := mongodrv.IndexModel{Keys: bson.D{{Key: markMinute, Value: 1}}, Options: options.Index().SetName("m_purge")} // PurgeRollups
	return map[string][]mongodrv.IndexModel{
		"marks": {
			{Keys: bson.D{{Key: markAccount, Value: 1}, {Key: markDomain, Value: 1}, {Key: markMinute, Value: 1}},
				Options: options.Index().SetName("scope_minute")},
			{Keys: bson.D{{Key: markAccount, Value: 1}, {Key: markDomain, Value: 1}, {Key: markName, Value: 1}, {Key: markMinute, Value: 1}},
				Options: options.Index().SetName("scope_name_minute")},
			expires, minute,
		},
		"kept": {expires, minute},
	}
}

// setUp creates the indexes (one command each, as ensureIndexes says why)
// and the state at now: marks from the start when no message is stored yet,
// else from now plus domain.MaxFutureSkew until MarkExisting has marked what
// is stored.
func (r *rollups) setUp(ctx context.Context, now time.Time, ttl bool) error {
	for kind, models := range rollupIndexModels() {
		coll := r.marks
		if kind == "kept" {
			coll = r.kept
		}
		if ttl {
			models = append(models, mongodrv.IndexModel{Keys: bson.D{{Key: fieldExpireAt, Value: 1}},
				Options: options.Index().SetName(indexExpireAtTTL).SetExpireAfterSeconds(0)})
		}
		for _, model := range models {
			if _, err := coll.Indexes().CreateOne(ctx, model); err != nil {
				return storeError(ctx, "creating the rollups' indexes", err)
			}
		}
	}
	if _, found, err := r.readState(ctx); err != nil || found {
		return err
	}
	err := r.messages.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: fieldID, Value: 1}})).Err()
	first := bson.D{{Key: fieldID, Value: stateID}, {Key: "from", Value: int64(0)}, {Key: "marking", Value: false}}
	switch {
	case err == nil:
		first = bson.D{{Key: fieldID, Value: stateID}, {Key: "from", Value: now.Add(domain.MaxFutureSkew).UnixMicro()}, {Key: "marking", Value: true}}
	case !errors.Is(err, mongodrv.ErrNoDocuments):
		return storeError(ctx, "setting up the rollups", err)
	}
	if _, err := r.marks.InsertOne(ctx, first); err != nil && !mongodrv.IsDuplicateKeyError(err) {
		return storeError(ctx, "setting up the rollups", err)
	}
	return nil
}

// rollupState says from which created_at every stored message is marked
// (Unix microseconds, 0: the start), and whether the messages stored before
// are still to be marked.
type rollupState struct {
	From    int64 `bson:"from"`
	Marking bool  `bson:"marking"`
}

func (r *rollups) readState(ctx context.Context) (rollupState, bool, error) {
	var st rollupState
	err := r.marks.FindOne(ctx, bson.D{{Key: fieldID, Value: stateID}}).Decode(&st)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return st, false, nil
	case err != nil:
		return st, false, storeError(ctx, "reading the rollups' state", err)
	}
	return st, true, nil
}

// MarksFrom: see statsengine.MarkStore.
func (r *rollups) MarksFrom(ctx context.Context) (time.Time, error) {
	return r.marksSince.From(ctx, func(ctx context.Context) (int64, bool, error) {
		st, found, err := r.readState(ctx)
		return st.From, found, err
	})
}

// mark writes the marks of msgs, stored, with one fresh version.
func (r *rollups) mark(ctx context.Context, msgs []domain.Message) error {
	var marks statsengine.MarkSet
	for _, m := range msgs {
		marks.AddMessage(m)
	}
	return r.send(ctx, "append: marks", &marks)
}

// send writes marks, each replacing its minute's whole.
func (r *rollups) send(ctx context.Context, op string, marks *statsengine.MarkSet) error {
	if marks.Len() == 0 {
		return nil
	}
	models := make([]mongodrv.WriteModel, 0, marks.Len())
	for _, mk := range marks.Marks() {
		id := statsengine.MarkID("mark", mk.Scope, mk.Name, mk.Minute)
		doc := markDoc{ID: id, Account: mk.Scope.Account, Domain: mk.Scope.Domain, Name: mk.Name, Minute: mk.Minute.Unix(),
			Version: int64(mk.Version), Count: mk.Messages, Settled: mk.Settled.UnixMilli() + 1,
			Expires: mk.Expires.UnixMilli() + 1, ExpireAt: mk.Expires.Add(time.Millisecond)}
		models = append(models, mongodrv.NewReplaceOneModel().SetFilter(bson.D{{Key: fieldID, Value: id}}).SetReplacement(doc).SetUpsert(true))
	}
	return replaceAll(ctx, r.marks, op, models)
}

// replaceAll runs the replacing upserts of models, unordered, in bulk writes
// of at most replacesPerWrite. Two upserts of one new _id at once can fail
// one of them on the duplicate key; the write is then tried again, and finds
// the document.
func replaceAll(ctx context.Context, coll *mongodrv.Collection, op string, models []mongodrv.WriteModel) error {
	for chunk := range slices.Chunk(models, replacesPerWrite) {
		var err error
		for range 3 {
			if _, err = coll.BulkWrite(ctx, chunk, options.BulkWrite().SetOrdered(false)); err == nil || !onlyDuplicates(err) {
				break
			}
		}
		if err != nil {
			return storeError(ctx, op, err)
		}
	}
	return nil
}

// replacesPerWrite bounds one bulk write of marks or kept rollups: FerretDB
// runs each upsert as a query and a write, and a backfill spread over a day
// marks a minute per message; a write of hundreds outlasted the operation
// timeout on two busy cores.
const replacesPerWrite = 64

// marksFilter selects the marks of scope's minutes starting in [from, to),
// of the application name alone when not "".
func marksFilter(scope domain.Scope, name string, from, to time.Time) bson.D {
	filter := bson.D{{Key: markAccount, Value: scope.Account}, {Key: markDomain, Value: scope.Domain}}
	if name != "" {
		filter = append(filter, bson.E{Key: markName, Value: name})
	}
	return append(filter, bson.E{Key: markMinute, Value: bson.D{{Key: "$gte", Value: from.Unix()}, {Key: "$lt", Value: to.Unix()}}})
}

// Sync: see statsengine.MarkStore. Reads go to the primary, where every
// mark an Append wrote before returning is: nothing to do.
func (r *rollups) Sync(context.Context, time.Time, time.Time) error { return nil }

// Marks: see statsengine.MarkStore. A mark is settled once the last
// Append's messages are visible: reads see every acknowledged message.
func (r *rollups) Marks(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(statsengine.Mark) error) error {
	from = stats.AlignDown(from, time.Minute)
	return findEach(ctx, r.marks, "stats: marks", marksFilter(scope, name, from, to), func(d *markDoc) error {
		return yield(statsengine.Mark{Minute: time.Unix(d.Minute, 0).UTC(), Name: d.Name, Version: uint64(d.Version),
			Messages: d.Count, Expires: time.UnixMilli(d.Expires).UTC(), Settled: time.UnixMilli(d.Settled).UTC()})
	})
}

// MarkHours hashes each hour's marks as read (statsengine.MarkStore).
// FerretDB's $group sums fields to 0, so the marks are summed here, on
// every server. How many messages an hour holds is not known: a mark counts
// the last Append's alone.
func (r *rollups) MarkHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
	yield func(hour time.Time, sum uint64, marks, messages int64) error) error {
	hours := map[int64][]statsengine.Mark{}
	err := r.Marks(ctx, scope, name, from, to, func(mk statsengine.Mark) error {
		hour := stats.AlignDown(mk.Minute, time.Hour).Unix()
		hours[hour] = append(hours[hour], mk)
		return nil
	})
	if err != nil {
		return err
	}
	for _, hour := range slices.Sorted(maps.Keys(hours)) {
		if err := yield(time.Unix(hour, 0).UTC(), statsengine.HashMarks(hours[hour]), int64(len(hours[hour])), -1); err != nil {
			return err
		}
	}
	return nil
}

// Kept: see statsengine.MarkStore.
func (r *rollups) Kept(ctx context.Context, scope domain.Scope, marks []statsengine.Mark, yield func(statsengine.Kept) error) error {
	ids := make([]string, len(marks))
	for i, mk := range marks {
		ids[i] = statsengine.MarkID("kept", scope, mk.Name, mk.Minute)
	}
	filter := bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: ids}}}}
	return findEach(ctx, r.kept, "stats: kept rollups", filter, func(d *keptDoc) error {
		return yield(statsengine.Kept{Minute: time.Unix(d.Minute, 0).UTC(), Name: d.Name, Version: uint64(d.Version),
			Expires: time.UnixMilli(d.Expires).UTC(), Data: d.Data})
	})
}

// findEach decodes each document coll's filter selects (in batches of
// statsBatchSize, projected when a projection is given) into a T and calls
// fn with it, until fn fails.
func findEach[T any](ctx context.Context, coll *mongodrv.Collection, op string, filter bson.D, fn func(*T) error, projection ...bson.D) error {
	opts := options.Find().SetBatchSize(statsBatchSize)
	if len(projection) > 0 {
		opts.SetProjection(projection[0])
	}
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return storeError(ctx, op, err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
		var d T
		if err := cur.Decode(&d); err != nil {
			return storeError(ctx, op, err)
		}
		if err := fn(&d); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return storeError(ctx, op, err)
	}
	return nil
}

// Keep: see statsengine.MarkStore.
func (r *rollups) Keep(ctx context.Context, scope domain.Scope, kept []statsengine.Kept) error {
	models := make([]mongodrv.WriteModel, len(kept))
	for i, k := range kept {
		id := statsengine.MarkID("kept", scope, k.Name, k.Minute)
		doc := keptDoc{ID: id, Account: scope.Account, Domain: scope.Domain, Name: k.Name, Minute: k.Minute.Unix(),
			Version: int64(k.Version), Data: k.Data, Expires: k.Expires.UnixMilli() + 1, ExpireAt: k.Expires.Add(time.Millisecond)}
		models[i] = mongodrv.NewReplaceOneModel().SetFilter(bson.D{{Key: fieldID, Value: id}}).SetReplacement(doc).SetUpsert(true)
	}
	if len(models) == 0 {
		return nil
	}
	return replaceAll(ctx, r.kept, "stats: keep rollups", models)
}

// Recount: see statsengine.MarkStore. Reads go to the primary, which holds
// every acknowledged message.
func (r *rollups) Recount(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(*domain.Message) error) error {
	filter := scopeFilter(scope)
	if name != "" {
		filter = append(filter, bson.E{Key: fieldName, Value: name})
	}
	filter = append(filter, bson.E{Key: fieldCreatedAt, Value: bson.D{{Key: "$gte", Value: from.UnixMicro()}, {Key: "$lt", Value: to.UnixMicro()}}})
	return eachNarrow(ctx, r.messages, "stats: recount", filter, yield)
}

// purge deletes the marks and kept rollups whose minute's messages have all
// expired at now.
func (r *rollups) purge(ctx context.Context, now time.Time) error {
	expired := bson.D{{Key: markExpires, Value: bson.D{{Key: "$lte", Value: now.UnixMilli()}}}}
	for _, coll := range []*mongodrv.Collection{r.marks, r.kept} {
		if _, err := coll.DeleteMany(ctx, expired); err != nil {
			return storeError(ctx, "purge: rollups", err)
		}
	}
	return nil
}

// existingPage bounds the minutes MarkExisting writes at once.
const existingPage = 20_000

// MarkExisting marks every minute holding messages stored before the marks
// (by an earlier version of the store), has keep count and keep the rollups
// of each scope's span of them, then sets the state to mark from the start:
// the messages' scope, application and times are streamed and counted here,
// which any server does. Run again after a failure, it marks
// again, which changes nothing but versions.
func (r *rollups) MarkExisting(ctx context.Context, keep func(context.Context, statsengine.ScopeSpan) error) error {
	st, found, err := r.readState(ctx)
	if err != nil || !found || !st.Marking {
		return err
	}
	projection := bson.D{{Key: fieldID, Value: 0}}
	for _, field := range []string{fieldAccount, fieldDomain, fieldName, fieldCreatedAt, fieldExpiresAt} {
		projection = append(projection, bson.E{Key: field, Value: 1})
	}
	type stored struct {
		Account   string `bson:"account"`
		Domain    string `bson:"domain"`
		Name      string `bson:"name"`
		CreatedAt int64  `bson:"createdAt"`
		ExpiresAt int64  `bson:"expiresAt"`
	}
	var marks statsengine.MarkSet
	spans := statsengine.Spans{}
	err = findEach(ctx, r.messages, "mark existing messages", bson.D{}, func(m *stored) error {
		msg := domain.Message{Account: m.Account, Domain: m.Domain, Name: m.Name,
			CreatedAt: time.UnixMicro(m.CreatedAt).UTC(), ExpiresAt: time.UnixMicro(m.ExpiresAt).UTC()}
		marks.AddMessage(msg)
		spans.Add(msg.Scope(), msg.CreatedAt)
		if marks.Len() < existingPage {
			return nil
		}
		err := r.send(ctx, "mark existing messages", &marks)
		marks = statsengine.MarkSet{}
		return err
	}, projection)
	if err != nil {
		return err
	}
	if err := r.send(ctx, "mark existing messages", &marks); err != nil {
		return err
	}
	for _, span := range spans {
		if err := keep(ctx, *span); err != nil {
			return err
		}
	}
	_, err = r.marks.UpdateOne(ctx, bson.D{{Key: fieldID, Value: stateID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "from", Value: int64(0)}, {Key: "marking", Value: false}}}})
	if err != nil {
		return fmt.Errorf("%w (every minute is marked; the next start marks them again)", storeError(ctx, "mark existing messages: done", err))
	}
	r.marksSince.Marked()
	return nil
}
