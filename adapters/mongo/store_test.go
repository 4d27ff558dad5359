package mongo_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// indexInfo is what listIndexes says of one index.
type indexInfo struct {
	Name               string `bson:"name"`
	Key                bson.D `bson:"key"`
	Unique             bool   `bson:"unique"`
	ExpireAfterSeconds *int64 `bson:"expireAfterSeconds"`
}

func listIndexes(t *testing.T, coll *mongodrv.Collection) map[string]indexInfo {
	t.Helper()
	cur, err := coll.Indexes().List(opCtx(t))
	if err != nil {
		t.Fatalf("listIndexes: %v", err)
	}
	var specs []indexInfo
	if err := cur.All(opCtx(t), &specs); err != nil {
		t.Fatalf("listIndexes: %v", err)
	}
	out := map[string]indexInfo{}
	for _, s := range specs {
		out[s.Name] = s
	}
	return out
}

// keyString renders an index key as "field:direction ..." for comparison.
func keyString(key bson.D) []string {
	var out []string
	for _, e := range key {
		var dir int64
		switch v := e.Value.(type) {
		case int32:
			dir = int64(v)
		case int64:
			dir = v
		case float64:
			dir = int64(v)
		}
		out = append(out, e.Key+":"+map[int64]string{1: "asc", -1: "desc"}[dir])
	}
	return out
}

func TestIndexesAfterStart(t *testing.T) {
	t.Parallel()
	uri, db := mongotest.NewDatabase(t)
	s := mustOpen(t, mongo.Config{URI: uri, Database: db, TTLIndex: true})
	coll := rawCollection(t, uri, db)
	indexes := listIndexes(t, coll)

	want := map[string]struct {
		key    []string
		unique bool
	}{
		"_id_":                    {key: []string{"_id:asc"}},
		"reference_unique":        {key: []string{"reference:asc"}, unique: true},
		"scope_newest":            {key: []string{"account:asc", "domain:asc", "createdAt:desc", "_id:desc"}},
		"scope_name_newest":       {key: []string{"account:asc", "domain:asc", "name:asc", "createdAt:desc", "_id:desc"}},
		"expiresAt_purge":         {key: []string{"expiresAt:asc"}},
		"account_subjects":        {key: []string{"account:asc", "subjects:asc"}},
		"retention_class_created": {key: []string{"retentionRule:asc", "account:asc", "createdAt:asc"}},
	}
	ferret := isFerretDB(t, coll)
	if s.TTLActive() == ferret {
		t.Errorf("TTLActive() = %v on a server that is FerretDB: %v; FerretDB v1 has no TTL indexes, MongoDB has", s.TTLActive(), ferret)
	}
	if s.TTLActive() {
		want["expireAt_ttl"] = struct {
			key    []string
			unique bool
		}{key: []string{"expireAt:asc"}}
	}
	for name, w := range want {
		got, ok := indexes[name]
		switch {
		case !ok:
			t.Errorf("index %s is missing; have %v", name, indexes)
		case !slices.Equal(keyString(got.Key), w.key):
			t.Errorf("index %s keys = %v, want %v", name, keyString(got.Key), w.key)
		case got.Unique != w.unique && name != "_id_":
			t.Errorf("index %s unique = %v, want %v", name, got.Unique, w.unique)
		}
	}
	if len(indexes) != len(want) {
		t.Errorf("indexes = %v, want exactly %d", indexes, len(want))
	}
	if ttl, ok := indexes["expireAt_ttl"]; ok && (ttl.ExpireAfterSeconds == nil || *ttl.ExpireAfterSeconds != 0) {
		t.Errorf("TTL index expireAfterSeconds = %v, want 0", ttl.ExpireAfterSeconds)
	}
}

func TestOpeningTwiceIsIdempotent(t *testing.T) {
	t.Parallel()
	uri, db := mongotest.NewDatabase(t)
	first := mustOpen(t, mongo.Config{URI: uri, Database: db})
	before := listIndexes(t, rawCollection(t, uri, db))
	m := newMessage(t, time.Now())
	if err := first.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}

	second := mustOpen(t, mongo.Config{URI: uri, Database: db})
	after := listIndexes(t, rawCollection(t, uri, db))
	if len(after) != len(before) {
		t.Errorf("indexes changed from %v to %v", before, after)
	}
	got, err := second.Get(opCtx(t), scope, m.ID, m.VisibleAt)
	if err != nil || got.ID != m.ID {
		t.Errorf("second store Get = %q, %v; want the message the first stored", got.ID, err)
	}
}

// PurgeExpired must delete documents, not just hide them: without a TTL index
// nothing else does.
func TestPurgeDeletesPhysically(t *testing.T) {
	t.Parallel()
	uri, db := mongotest.NewDatabase(t)
	s := mustOpen(t, mongo.Config{URI: uri, Database: db})
	if s.TTLActive() {
		t.Error("TTLActive() without TTLIndex")
	}
	// Expiry in the real future, so no TTL monitor interferes.
	created := time.Now()
	expiring := newMessage(t, created)
	alsoExpiring := newMessage(t, created.Add(-time.Second), func(m *domain.Message) { m.ExpiresAt = expiring.ExpiresAt.Add(-time.Minute) })
	kept := newMessage(t, created, func(m *domain.Message) { m.ExpiresAt = expiring.ExpiresAt.Add(time.Microsecond) })
	if err := s.Append(opCtx(t), []domain.Message{expiring, alsoExpiring, kept}); err != nil {
		t.Fatal(err)
	}

	n, err := s.PurgeExpired(opCtx(t), expiring.ExpiresAt)
	if err != nil || n != 2 {
		t.Fatalf("PurgeExpired = %d, %v; want 2, nil", n, err)
	}
	var left []struct {
		ID string `bson:"_id"`
	}
	cur, err := rawCollection(t, uri, db).Find(opCtx(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(opCtx(t), &left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].ID != kept.ID {
		t.Errorf("documents left = %v, want only %s", left, kept.ID)
	}
	if n, err := s.PurgeExpired(opCtx(t), expiring.ExpiresAt); err != nil || n != 0 {
		t.Errorf("second PurgeExpired = %d, %v; want 0, nil", n, err)
	}
}

// Header names are HTTP tokens, which may hold '.' and '$'.
func TestHeaderNamesWithDotsAndDollars(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, freshConfig(t))
	m := newMessage(t, time.Now(), func(m *domain.Message) {
		m.Request.Header = domain.Header{
			"X.Dotted": {"b", "a", "c"},
			"$Dollar":  {"1"},
			"$":        {""},
			".":        {},
			"A$b.C":    {"z", "y"},
			"$set":     {"not an operator"},
		}
		m.Response.Header = domain.Header{"X.Y.Z": {"v"}}
	})
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(opCtx(t), scope, m.Reference, m.VisibleAt)
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.List(opCtx(t), domain.Query{Scope: scope, Limit: 10}, m.VisibleAt)
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("List = %d messages, %v; want 1", len(page.Messages), err)
	}
	for what, msg := range map[string]domain.Message{"Get": got, "List": page.Messages[0]} {
		for _, side := range []struct{ want, got domain.Header }{
			{m.Request.Header, msg.Request.Header},
			{m.Response.Header, msg.Response.Header},
		} {
			if len(side.got) != len(side.want) {
				t.Errorf("%s: headers %q, want %q", what, side.got, side.want)
			}
			for name, values := range side.want {
				if gotValues, ok := side.got[name]; !ok || !slices.Equal(gotValues, values) {
					t.Errorf("%s: header %q = %q (present: %v), want %q in order", what, name, gotValues, ok, values)
				}
			}
		}
	}
}

// Two messages with one reference and different ids: the second is not
// "already stored", and Append must say so.
func TestReferenceCollisionIsAnError(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, freshConfig(t))
	now := time.Now()
	stored := newMessage(t, now)
	if err := s.Append(opCtx(t), []domain.Message{stored}); err != nil {
		t.Fatal(err)
	}
	collision := newMessage(t, now, func(m *domain.Message) { m.Reference = stored.Reference })
	fresh := newMessage(t, now)
	changedRetry := stored
	changedRetry.Path = "/changed"

	err := s.Append(opCtx(t), []domain.Message{fresh, changedRetry, collision})
	if !errors.Is(err, mongo.ErrReferenceTaken) {
		t.Fatalf("Append with a taken reference = %v, want an error wrapping ErrReferenceTaken", err)
	}
	if errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("a reference collision is not an outage: %v", err)
	}
	if _, err := s.Get(opCtx(t), scope, collision.ID, collision.VisibleAt); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get(colliding id) = %v, want ErrNotFound", err)
	}
	got, err := s.Get(opCtx(t), scope, stored.Reference, stored.VisibleAt)
	if err != nil || got.ID != stored.ID || got.Path != stored.Path {
		t.Errorf("Get(reference) = %s %s, %v; want the first message, unchanged", got.ID, got.Path, err)
	}
	// The rest of an unordered batch is stored, as the port allows.
	if _, err := s.Get(opCtx(t), scope, fresh.ID, fresh.VisibleAt); err != nil {
		t.Errorf("Get(fresh) = %v, want it stored", err)
	}
	// Re-sending only what is really stored succeeds.
	if err := s.Append(opCtx(t), []domain.Message{fresh, changedRetry}); err != nil {
		t.Errorf("Append of already stored messages = %v, want nil", err)
	}
}

// Stored times are whole microseconds; bounds and read times finer than that
// must still select exactly what domain.Filter.Matches and Readable say.
func TestSubMicrosecondBounds(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, freshConfig(t))
	m := newMessage(t, time.Now().Add(-time.Minute))
	if err := s.Append(opCtx(t), []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	readAt := m.VisibleAt.Add(time.Second)
	for _, tc := range []struct {
		name   string
		filter domain.Filter
		now    time.Time
	}{
		{name: "from just after", filter: domain.Filter{From: m.CreatedAt.Add(time.Nanosecond)}, now: readAt},
		{name: "from just before", filter: domain.Filter{From: m.CreatedAt.Add(-time.Nanosecond)}, now: readAt},
		{name: "to just after", filter: domain.Filter{To: m.CreatedAt.Add(time.Nanosecond)}, now: readAt},
		{name: "to exactly", filter: domain.Filter{To: m.CreatedAt}, now: readAt},
		{name: "read just before visible", now: m.VisibleAt.Add(-time.Nanosecond)},
		{name: "read just after visible", now: m.VisibleAt.Add(time.Nanosecond)},
		{name: "read just before expiry", now: m.ExpiresAt.Add(-time.Nanosecond)},
		{name: "read just after expiry", now: m.ExpiresAt.Add(time.Nanosecond)},
	} {
		want := tc.filter.Matches(m) && m.Readable(tc.now)
		page, err := s.List(opCtx(t), domain.Query{Scope: scope, Filter: tc.filter, Limit: 10}, tc.now)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := len(page.Messages) == 1; got != want {
			t.Errorf("%s: listed = %v, want %v", tc.name, got, want)
		}
		if tc.filter == (domain.Filter{}) {
			_, err := s.Get(opCtx(t), scope, m.ID, tc.now)
			if got := err == nil; got != want {
				t.Errorf("%s: Get found = %v (%v), want %v", tc.name, got, err, want)
			}
		}
	}
}
