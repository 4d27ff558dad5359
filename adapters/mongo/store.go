package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore    = (*Store)(nil)
	_ ports.TallyLookup     = (*Store)(nil)
	_ ports.HealthChecker   = (*Store)(nil)
	_ ports.SampleStreamer  = (*Store)(nil)
	_ ports.StatsAggregator = (*Store)(nil)
	_ ports.RollupKeeper    = (*Store)(nil)
)

// Store is the MongoDB ports.MessageStore. It is safe for concurrent use.
type Store struct {
	cfg    Config
	opts   *options.ClientOptions
	client *mongodrv.Client
	coll   *mongodrv.Collection
	// ttlRefused says why the server has no TTL index (nil: it has one).
	ttlRefused error
	// outlive: the rollups outlive the messages (no TTL index: the purge,
	// which keeps them first, deletes every message).
	outlive bool
	// statsMethod is statsPipeline or statsStreaming, set at start-up.
	statsMethod string
	rollups     *rollups
	marked      *statsengine.Marked
	engine      *statsengine.Engine
}

// New connects to cfg.URI, checks that the server answers and creates the
// collection's indexes if they are missing. Close releases the connections.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newUnopened(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newUnopened checks cfg without touching the network.
func newUnopened(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts, err := cfg.clientOptions()
	if err != nil {
		return nil, err
	}
	return &Store{cfg: cfg, opts: opts}, nil
}

func (s *Store) open(ctx context.Context) error {
	client, err := mongodrv.Connect(s.opts)
	if err != nil {
		return fmt.Errorf("mongo: connect: %w", err)
	}
	s.client = client
	// Reads go to the primary, which has every acknowledged write: no read lag.
	collections := options.Collection().SetWriteConcern(s.cfg.WriteConcern).SetReadPreference(readpref.Primary())
	s.coll = client.Database(s.cfg.Database).Collection(s.cfg.Collection, collections)
	s.rollups = newRollups(s.coll, collections)
	if err := s.setUp(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

func (s *Store) setUp(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	if err := s.detectStatsMethod(ctx); err != nil {
		return err
	}
	if err := ensureIndexes(ctx, s.coll); err != nil {
		return err
	}
	if !s.cfg.TTLIndex {
		s.ttlRefused = errors.New("not asked for by configuration (TTLIndex)")
	} else {
		refused, err := ensureTTLIndex(ctx, s.coll)
		if err != nil {
			return err
		}
		s.ttlRefused = refused
	}
	s.outlive = s.ttlRefused != nil
	if s.outlive && !s.cfg.TTLIndex {
		// An earlier start's TTL indexes would delete messages before the
		// purge keeps their rollups, and the rollups with them.
		for _, coll := range []*mongodrv.Collection{s.coll, s.rollups.marks, s.rollups.kept} {
			if err := dropTTLIndex(ctx, coll); err != nil {
				return err
			}
		}
	}
	if err := s.rollups.setUp(ctx, time.Now(), !s.outlive); err != nil {
		return err
	}
	s.marked = statsengine.NewMarked(s.rollups)
	src := statsengine.Sources{Samples: s, Rollups: s.marked, RollupsOutliveMessages: s.outlive}
	if s.statsMethod == statsPipeline {
		src.Aggregator = s
	}
	engine, err := statsengine.New(src, s.cfg.Statistics)
	s.engine = engine
	return err
}

// TTLActive reports whether the server deletes expired messages by itself (a TTL
// index). Without one, only PurgeExpired deletes them.
func (s *Store) TTLActive() bool { return s.ttlRefused == nil }

// Close disconnects from the server.
func (s *Store) Close(ctx context.Context) error {
	if err := s.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("mongo: disconnect: %w", err)
	}
	return nil
}

// Ping checks that the server answers, within cfg.PingTimeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PingTimeout)
	defer cancel()
	if err := s.client.Ping(ctx, readpref.Primary()); err != nil {
		return storeError(ctx, "ping", err)
	}
	return nil
}

// ReadLag is zero: reads go to the primary, which holds every acknowledged write.
func (s *Store) ReadLag() time.Duration { return 0 }

// Append inserts msgs in one unordered batch. A duplicate _id means the message
// is already stored, which is success; any other failure is an error. Every
// message is encoded and checked before the insert, so a message MongoDB would
// refuse fails the whole batch with nothing written.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	docs, err := encodeDocuments(msgs)
	if err != nil {
		return err
	}
	_, err = s.coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	switch {
	case err == nil:
	case !onlyDuplicates(err):
		return storeError(ctx, "append", err)
	default:
		if err := s.confirmStored(ctx, msgs); err != nil {
			return err
		}
	}
	// Only now, with every message stored: a mark says its minute changed.
	return s.rollups.mark(ctx, msgs)
}

// onlyDuplicates reports an insert that failed only on unique keys: on _id
// (already stored, fine) or on reference (a collision), which confirmStored
// tells apart.
func onlyDuplicates(err error) bool {
	var bwe mongodrv.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	return !slices.ContainsFunc(bwe.WriteErrors, func(we mongodrv.BulkWriteError) bool { return we.Code != codeDuplicateKey })
}

// confirmStored checks, after duplicate-key errors, that every id of msgs is
// stored durably. It reads majority-committed data first, so that a copy left by
// an earlier failed attempt counts only once it is as durable as a successful
// Append would have made it. An id that is not stored at all failed on its
// reference: another message holds it.
func (s *Store) confirmStored(ctx context.Context, msgs []domain.Message) error {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	committed := s.coll.Database().Collection(s.coll.Name(), options.Collection().
		SetReadConcern(readconcern.Majority()).
		SetReadPreference(readpref.Primary()))
	durable, err := storedIDs(ctx, committed, ids)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range ids {
		if !durable[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	present, err := storedIDs(ctx, s.coll, missing)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		switch {
		case durable[m.ID]:
		case present[m.ID]:
			return fmt.Errorf("mongo: append: message %s is stored but not yet acknowledged by the write concern: %w", m.ID, ports.ErrUnavailable)
		default:
			return fmt.Errorf("mongo: append: message %s: reference %s: %w", m.ID, m.Reference, ErrReferenceTaken)
		}
	}
	return nil
}

// storedIDs returns which of ids coll holds.
func storedIDs(ctx context.Context, coll *mongodrv.Collection, ids []string) (map[string]bool, error) {
	cur, err := coll.Find(ctx, bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: ids}}}},
		options.Find().SetProjection(bson.D{{Key: fieldID, Value: 1}}))
	if err != nil {
		return nil, storeError(ctx, "append: checking duplicates", err)
	}
	var found []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &found); err != nil {
		return nil, storeError(ctx, "append: checking duplicates", err)
	}
	stored := make(map[string]bool, len(found))
	for _, f := range found {
		stored[f.ID] = true
	}
	return stored, nil
}

// List reads one page newest first with limit+1 documents, the extra one
// telling whether more follow.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("mongo: list: limit must be at least 1, got %d", q.Limit)
	}
	filter, possible := listFilter(q, now)
	if !possible {
		return domain.Page{}, nil
	}
	filter = append(filter, notTally)
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(newestFirst).SetLimit(int64(q.Limit)+1))
	if err != nil {
		return domain.Page{}, storeError(ctx, "list", err)
	}
	// Documents are decoded one by one, so reading stops where the page ends
	// (domain.FillPage) and a page of large messages costs no more than the page.
	defer cur.Close(context.WithoutCancel(ctx))
	page, err := domain.FillPage(q.Limit, cur.RemainingBatchLength(), func() bool { return cur.Next(ctx) }, func() (domain.Message, error) {
		var r record.Record
		err := cur.Decode(&r)
		return r.Message().WithoutExpiredBodies(now), err
	})
	if err == nil {
		err = cur.Err()
	}
	if err != nil {
		return domain.Page{}, storeError(ctx, "list", err)
	}
	return page, nil
}

// Lookup returns scope's stored messages with any of ids, readable or not.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	filter := append(scopeFilter(scope), bson.E{Key: fieldID, Value: bson.D{{Key: "$in", Value: ids}}}, notTally)
	cur, err := s.coll.Find(ctx, filter)
	if err != nil {
		return nil, storeError(ctx, "lookup", err)
	}
	var records []record.Record
	if err := cur.All(ctx, &records); err != nil {
		return nil, storeError(ctx, "lookup", err)
	}
	found := make([]domain.Message, len(records))
	for i, r := range records {
		found[i] = r.Message()
	}
	return found, nil
}

// LookupTallies returns those of ids stored in scope as tallies.
func (s *Store) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	filter := append(scopeFilter(scope), bson.E{Key: fieldID, Value: bson.D{{Key: "$in", Value: ids}}}, bson.E{Key: fieldTally, Value: true})
	cur, err := s.coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: fieldID, Value: 1}, {Key: "rules.submitted", Value: 1}}))
	if err != nil {
		return nil, storeError(ctx, "lookup tallies", err)
	}
	var records []record.Record
	if err := cur.All(ctx, &records); err != nil {
		return nil, storeError(ctx, "lookup tallies", err)
	}
	found := make([]ports.StoredTally, len(records))
	for i, r := range records {
		found[i].ID = r.ID
		if r.Rules != nil {
			found[i].Submitted = r.Rules.Submitted
		}
	}
	return found, nil
}

// Get finds a message of scope by id or reference, readable at now.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	filter := append(scopeFilter(scope), readableAt(now)...)
	filter = append(filter, notTally, bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: fieldID, Value: idOrReference}},
		bson.D{{Key: fieldReference, Value: idOrReference}},
	}})
	var r record.Record
	err := s.coll.FindOne(ctx, filter).Decode(&r)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return domain.Message{}, fmt.Errorf("mongo: message %q: %w", idOrReference, ports.ErrNotFound)
	case err != nil:
		return domain.Message{}, storeError(ctx, "get", err)
	}
	return r.Message().WithoutExpiredBodies(now), nil
}

// PurgeExpired deletes every message whose ExpiresAt is at or before now. It
// runs whether or not the server has a TTL index: the TTL monitor only runs
// about once a minute, and some servers have none.
//
// Without a TTL index the statistics' rollups outlive the messages: those
// of the minutes of the messages about to go are kept first
// (keepRollupsOf), and PurgeRollups deletes them. With one, the server
// deletes messages unseen, and the marks and kept rollups go once every
// message of their minute has expired (the end of the minute plus the
// retention).
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	// Hidden messages (erasure.HiddenExpiry) are the erasure job's to delete,
	// and counted by it (a TTL index, where there is one, takes them anyway).
	expired := bson.D{{Key: fieldExpiresAt, Value: bson.D{{Key: "$gt", Value: record.MicrosOf(erasure.HiddenExpiry)}, {Key: "$lte", Value: now.UnixMicro()}}}}
	if err := s.keepRollupsOf(ctx, expired); err != nil {
		return 0, err
	}
	res, err := s.coll.DeleteMany(ctx, expired)
	if err != nil {
		return 0, storeError(ctx, "purge", err)
	}
	if s.outlive {
		return res.DeletedCount, nil
	}
	return res.DeletedCount, s.rollups.purge(ctx, now)
}
