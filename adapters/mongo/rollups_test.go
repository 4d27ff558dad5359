package mongo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/record"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// rollupsFirst are costs under which the engine counts from rollups wherever
// they answer, whatever the range holds.
var rollupsFirst = statsengine.Costs{StreamedMessage: 1000, AggregatedMessage: 500, Rollup: 1, KeptHour: 1}

func withCosts(costs statsengine.Costs) func(*mongo.Config) {
	return func(cfg *mongo.Config) { cfg.Statistics.Costs = costs }
}

// The differential test: random messages appended with retries in other
// batches, random queries at random times; the answers, from rollups kept by
// marks or by the plan of the default costs, are stats.Builder's within the
// contract's bounds.
func TestStatsDifferential(t *testing.T) {
	for _, c := range []struct {
		name   string
		costs  statsengine.Costs
		worlds int
	}{{"rollups", rollupsFirst, 6}, {"default", statsengine.Costs{}, 3}} {
		t.Run(c.name, func(t *testing.T) {
			conformance.RunStatsDifferential(t, func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
				return openStore(ctx, t, withCosts(c.costs))
			}, c.worlds, 41)
		})
	}
}

func tracedStats(t *testing.T, s *mongo.Store, q stats.Query, now time.Time) (stats.Stats, statsengine.Trace) {
	t.Helper()
	st, tr, err := s.StatsTraced(opCtx(t), q, now)
	if err != nil {
		t.Fatal(err)
	}
	return st, tr
}

func hourQuery(from time.Time, interval string) stats.Query {
	return conformance.StatsQuery(scope, from, from.Add(time.Hour), interval, domain.Filter{})
}

// A retried batch, in other batches and mixed with new messages, counts each
// message once. Messages stored by an Append that stopped before its marks
// (inserted here without them) never make the acknowledged messages count
// less nor any twice; the retry of that Append makes every message count.
func TestStatsCountRetriesOnceAndSurviveACrashBeforeTheMarks(t *testing.T) {
	cfg := freshConfig(t)
	withCosts(rollupsFirst)(&cfg)
	s := mustOpen(t, cfg)
	first := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	acked := conformance.MessageSeries(t, scope, "shop", 300, first, 3*time.Second) // 15 minutes
	if err := s.Append(opCtx(t), acked[:200]); err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]domain.Message{acked[150:300], acked[:80], acked[60:170]} {
		if err := s.Append(opCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	now := first.Add(2 * time.Hour)
	q := hourQuery(first, "15m")
	st, tr := tracedStats(t, s, q, now)
	conformance.AssertStats(t, acked, q, now, st)
	if tr.Plan != statsengine.PlanRollups || tr.Recounted != 15 || tr.Rollups != 15 {
		t.Errorf("the first call: %+v, want rollups, 15 minutes recounted and counted", tr)
	}
	if _, tr = tracedStats(t, s, q, now); tr.Recounted != 0 || tr.KeptHours != 1 {
		t.Errorf("the second call: %+v, want the hour from the cache", tr)
	}

	crashed := conformance.MessageSeries(t, scope, "shop", 40, first.Add(5*time.Minute+time.Second), time.Second)
	raw := rawCollection(t, cfg.URI, cfg.Database)
	docs := make([]any, len(crashed))
	for i, m := range crashed {
		docs[i] = record.FromMessage(m)
	}
	if _, err := raw.InsertMany(opCtx(t), docs); err != nil {
		t.Fatal(err)
	}
	st, _ = tracedStats(t, s, q, now)
	if st.Total.Count < int64(len(acked)) || st.Total.Count > int64(len(acked)+len(crashed)) {
		t.Errorf("after the crash: %d counted, want %d to %d", st.Total.Count, len(acked), len(acked)+len(crashed))
	}
	for _, batch := range [][]domain.Message{append(crashed[10:], acked[:50]...), crashed[:10]} {
		if err := s.Append(opCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	st, tr = tracedStats(t, s, q, now)
	conformance.AssertStats(t, append(acked, crashed...), q, now, st)
	if tr.Recounted != 4 || tr.KeepErrors != 0 {
		t.Errorf("after the retry: %+v, want the four minutes written again recounted and kept", tr)
	}
}

// A store set up over messages an earlier version stored, without marks,
// streams or aggregates their statistics until MarkExisting has marked them;
// then it counts them from rollups. Messages appended in between are marked
// by their Append.
func TestStatsOfMessagesStoredBeforeTheMarks(t *testing.T) {
	cfg := freshConfig(t)
	withCosts(rollupsFirst)(&cfg)
	s := mustOpen(t, cfg)
	first := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	old := conformance.MessageSeries(t, scope, "shop", 120, first, 15*time.Second)
	if err := s.Append(opCtx(t), old); err != nil {
		t.Fatal(err)
	}
	// What an earlier version leaves: messages, no marks and no state.
	marks := rawCollection(t, cfg.URI, cfg.Database).Database().Collection("messages_marks")
	if _, err := marks.DeleteMany(opCtx(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	upgraded := mustOpen(t, cfg)
	later := conformance.MessageSeries(t, scope, "shop", 30, first.Add(10*time.Minute+time.Second), 7*time.Second)
	if err := upgraded.Append(opCtx(t), later); err != nil {
		t.Fatal(err)
	}
	all := append(old, later...)
	now := first.Add(2 * time.Hour)
	q := hourQuery(first, "5m")
	st, tr := tracedStats(t, upgraded, q, now)
	conformance.AssertStats(t, all, q, now, st)
	if tr.Plan != statsengine.PlanAggregate && tr.MessagesStreamed != int64(len(all)) {
		t.Errorf("before marking: %+v, want the messages before the marks read, aggregated or streamed", tr)
	}
	if err := upgraded.MarkExisting(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	st, tr = tracedStats(t, upgraded, q, now)
	conformance.AssertStats(t, all, q, now, st)
	if tr.Plan != statsengine.PlanRollups || tr.Recounted != 0 || tr.Rollups != 30 {
		t.Errorf("after marking: %+v, want the 30 minutes' rollups, kept by the marking", tr)
	}
}

// Without a TTL index the purge keeps the rollups of the messages it
// deletes, and the statistics count them from those alone; PurgeRollups
// deletes the marks and kept rollups of the minutes before its time.
func TestPurgeKeepsRollupsPastTheirMessages(t *testing.T) {
	cfg := freshConfig(t)
	withCosts(rollupsFirst)(&cfg)
	s := mustOpen(t, cfg)
	first := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	msgs := conformance.MessageSeries(t, scope, "shop", 3, first, 20*time.Minute)
	for i := range msgs {
		msgs[i].ExpiresAt = msgs[i].CreatedAt.Add(time.Hour)
	}
	if err := s.Append(opCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	db := rawCollection(t, cfg.URI, cfg.Database).Database()
	count := func(coll string) int64 {
		n, err := db.Collection(coll).CountDocuments(opCtx(t), bson.D{{Key: "a", Value: scope.Account}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// No read kept a rollup yet: the purge counts and keeps them.
	later := msgs[2].ExpiresAt.Add(2 * time.Minute)
	if n, err := s.PurgeExpired(opCtx(t), later); err != nil || n != 3 {
		t.Fatalf("PurgeExpired = %d, %v; want the 3 messages", n, err)
	}
	if count("messages_marks") != 3 || count("messages_rollups") != 3 {
		t.Fatalf("after the purge %d marks and %d kept rollups, want 3 of each", count("messages_marks"), count("messages_rollups"))
	}
	q := hourQuery(first, "15m")
	q.RollupsOnlyBefore = q.To
	asIfReadable := slices.Clone(msgs)
	for i := range asIfReadable {
		asIfReadable[i].ExpiresAt = later.Add(time.Hour)
	}
	st, tr := tracedStats(t, s, q, later)
	conformance.AssertStats(t, asIfReadable, q, later, st)
	if tr.Recounted != 0 {
		t.Errorf("%+v: want the kept rollups alone, none counted again", tr)
	}

	if n, err := s.PurgeRollups(opCtx(t), msgs[1].CreatedAt); err != nil || n != 1 {
		t.Fatalf("PurgeRollups before the second minute = %d, %v; want the first minute's 1", n, err)
	}
	if count("messages_marks") != 2 || count("messages_rollups") != 2 {
		t.Errorf("%d marks and %d kept rollups left, want 2 of each", count("messages_marks"), count("messages_rollups"))
	}
	st, _ = tracedStats(t, s, q, later)
	conformance.AssertStats(t, asIfReadable[1:], q, later, st)
}
