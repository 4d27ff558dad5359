package mongotest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
)

func TestMain(m *testing.M) { os.Exit(mongotest.Main(m)) }

// The tests below double as documentation of what the server used for
// tests really does. Where embedded FerretDB v1.24 (SQLite) and MongoDB
// differ, each branch asserts the respective behaviour.

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// setup returns a collection in a fresh database, and whether the server
// is FerretDB.
func setup(t *testing.T) (*mongo.Collection, bool) {
	t.Helper()
	uri, db := mongotest.NewDatabase(t)
	c := mongotest.Connect(t, uri)
	var info bson.M
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		t.Fatalf("buildInfo: %v", err)
	}
	_, ferret := info["ferretdbVersion"]
	return c.Database(db).Collection("requests"), ferret
}

func TestServerInfo(t *testing.T) {
	t.Parallel()
	coll, ferret := setup(t)
	var info bson.M
	if err := coll.Database().Client().Database("admin").RunCommand(ctxT(t), bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	t.Logf("server: version=%v ferretdbVersion=%v (FerretDB: %v)", info["version"], info["ferretdbVersion"], ferret)
	if os.Getenv(mongotest.EnvURI) == "" && !ferret {
		t.Errorf("without %s the server should be embedded FerretDB", mongotest.EnvURI)
	}
	if ferret {
		// Embedded FerretDB reports ferretdbVersion "unknown" (no
		// build/version/version.txt); check the linked module instead.
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			t.Fatal("no build info")
		}
		for _, m := range bi.Deps {
			if m.Path == "github.com/FerretDB/FerretDB" && os.Getenv(mongotest.EnvURI) == "" && m.Version != "v1.24.0" {
				t.Errorf("embedded FerretDB is %s, want v1.24.0", m.Version)
			}
		}
	}
}

func TestNewDatabaseIsEmptyAndDropped(t *testing.T) {
	t.Parallel()
	uri := mongotest.URI(t)
	c := mongotest.Connect(t, uri)
	var names []string
	for _, sub := range []string{"a", "b"} {
		t.Run(sub, func(t *testing.T) {
			uri, db := mongotest.NewDatabase(t)
			if !regexp.MustCompile(`^[a-z0-9_]{1,63}$`).MatchString(db) {
				t.Errorf("database name %q is not portable", db)
			}
			names = append(names, db)
			coll := mongotest.Connect(t, uri).Database(db).Collection("x")
			n, err := coll.CountDocuments(ctxT(t), bson.D{})
			if err != nil || n != 0 {
				t.Fatalf("fresh database: count = %d, %v; want 0, nil", n, err)
			}
			if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "sub", Value: sub}}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("database names not unique: %q", names)
	}
	dbs, err := c.ListDatabaseNames(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if slices.Contains(dbs, n) {
			t.Errorf("database %s still exists after its subtest", n)
		}
	}
}

func TestLongTestNameGivesValidDatabaseName(t *testing.T) {
	t.Parallel()
	t.Run(strings.Repeat("Very long subtest name with spaces/slashes.dots$ ", 4), func(t *testing.T) {
		coll, _ := setup(t)
		if len(coll.Database().Name()) > 63 {
			t.Errorf("name too long: %q", coll.Database().Name())
		}
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "a", Value: 1}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TTL: FerretDB v1.24 rejects expireAfterSeconds with NotImplemented (238);
// it does not silently accept it. MongoDB accepts it.
func TestTTLIndex(t *testing.T) {
	t.Parallel()
	coll, ferret := setup(t)
	name, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys:    bson.D{{Key: "createdAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(3600),
	})
	if ferret {
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 238 || ce.Name != "NotImplemented" {
			t.Fatalf("FerretDB TTL index: got %v (%#v), want CommandError 238 NotImplemented", err, err)
		}
		t.Logf("FerretDB TTL index error: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("MongoDB TTL index: %v", err)
	}
	spec := indexSpec(t, coll, name)
	if spec["expireAfterSeconds"] == nil {
		t.Errorf("listIndexes spec %v lacks expireAfterSeconds", spec)
	}
}

// Unique indexes are enforced with E11000 / code 11000, and an unordered
// InsertMany goes on past duplicates and reports one write error per
// duplicate document, with its index in the batch, as a BulkWriteException.
func TestUniqueIndexUnorderedInsertMany(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys:    bson.D{{Key: "reqId", Value: 1}},
		Options: options.Index().SetUnique(true).SetName("reqId_unique"),
	}); err != nil {
		t.Fatalf("unique index: %v", err)
	}
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "reqId", Value: "r0"}}); err != nil {
		t.Fatal(err)
	}
	docs := []any{
		bson.D{{Key: "reqId", Value: "r1"}},
		bson.D{{Key: "reqId", Value: "r0"}}, // duplicate of existing
		bson.D{{Key: "reqId", Value: "r2"}},
		bson.D{{Key: "reqId", Value: "r1"}}, // duplicate within the batch
		bson.D{{Key: "reqId", Value: "r3"}},
	}
	res, err := coll.InsertMany(ctxT(t), docs, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) {
		t.Fatalf("InsertMany err = %v (%T), want BulkWriteException", err, err)
	}
	if !mongo.IsDuplicateKeyError(err) {
		t.Errorf("IsDuplicateKeyError(%v) = false", err)
	}
	var got []int
	for _, we := range bwe.WriteErrors {
		got = append(got, we.Index)
		if we.Code != 11000 || !strings.Contains(we.Message, "E11000") {
			t.Errorf("write error %d: code %d %q, want 11000 E11000", we.Index, we.Code, we.Message)
		}
	}
	if !slices.Equal(got, []int{1, 3}) {
		t.Errorf("write error indexes = %v, want [1 3]", got)
	}
	if bwe.WriteConcernError != nil {
		t.Errorf("unexpected write concern error %v", bwe.WriteConcernError)
	}
	t.Logf("InsertMany: %v", err)
	// The driver's result lists only the _ids of the documents inserted.
	if res == nil || len(res.InsertedIDs) != 3 {
		t.Errorf("InsertedIDs = %v, want 3 (r1, r2, r3)", res)
	}
	n, err := coll.CountDocuments(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 { // r0 + r1, r2, r3: went on past both duplicates
		t.Errorf("count = %d, want 4", n)
	}
}

// An ordered InsertMany stops at the first duplicate.
func TestUniqueIndexOrderedInsertMany(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true),
	}); err != nil {
		t.Fatal(err)
	}
	docs := []any{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 2}}}
	_, err := coll.InsertMany(ctxT(t), docs)
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[0].Code != 11000 {
		t.Fatalf("ordered InsertMany err = %v, want one 11000 write error at index 1", err)
	}
	if n, _ := coll.CountDocuments(ctxT(t), bson.D{}); n != 1 {
		t.Errorf("count = %d, want 1 (stopped at the duplicate)", n)
	}
}

// A duplicate _id is also 11000, and InsertOne returns a WriteException.
func TestDuplicateIDInsertOne(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	_, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "x"}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 || !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate _id: %v, want WriteException 11000", err)
	}
}

// Unique indexes and documents lacking the field (or holding null).
func TestUniqueIndexMissingAndNull(t *testing.T) {
	t.Parallel()
	for _, sparse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sparse=%v", sparse), func(t *testing.T) {
			coll, ferret := setup(t)
			if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
				Keys: bson.D{{Key: "opt", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(sparse),
			}); err != nil {
				t.Fatalf("unique index: %v", err)
			}
			ins := func(doc bson.D) error {
				_, err := coll.InsertOne(ctxT(t), doc)
				return err
			}
			errMissing := [2]error{ins(bson.D{{Key: "a", Value: 1}}), ins(bson.D{{Key: "a", Value: 2}})}
			errNull := [2]error{ins(bson.D{{Key: "opt", Value: nil}}), ins(bson.D{{Key: "opt", Value: nil}})}
			got := [4]bool{}
			for i, err := range append(errMissing[:], errNull[:]...) {
				if err != nil && !mongo.IsDuplicateKeyError(err) {
					t.Fatalf("insert %d: %v", i, err)
				}
				got[i] = err != nil
			}
			// want: is insert i (missing, missing, null, null) a duplicate?
			var want [4]bool
			switch {
			case ferret:
				// FerretDB v1.24 (SQLite): missing fields are never
				// indexed, explicit nulls are, whether sparse or not
				// (sparse is accepted and ignored).
				want = [4]bool{false, false, false, true}
			case sparse:
				want = [4]bool{false, false, false, true}
			default:
				// MongoDB: missing indexes as null.
				want = [4]bool{false, true, true, true}
			}
			if got != want {
				t.Errorf("duplicate? (missing, missing, null, null) = %v, want %v; errors: %v %v", got, want, errMissing, errNull)
			}
		})
	}
}

// Compound (and compound unique) indexes work and keep key order in listIndexes.
func TestCompoundIndexAndListIndexes(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	names, err := coll.Indexes().CreateMany(ctxT(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}}},
		{Keys: bson.D{{Key: "tenant", Value: 1}, {Key: "path", Value: 1}}, Options: options.Index().SetUnique(true)},
	})
	if err != nil {
		t.Fatalf("CreateMany: %v", err)
	}
	if !slices.Equal(names, []string{"createdAt_-1__id_-1", "tenant_1_path_1"}) {
		t.Errorf("index names = %v", names)
	}

	cur, err := coll.Indexes().List(ctxT(t))
	if err != nil {
		t.Fatalf("listIndexes: %v", err)
	}
	var specs []bson.D
	if err := cur.All(ctxT(t), &specs); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bson.D{}
	unique := map[string]bool{}
	for _, s := range specs {
		m := map[string]any{}
		for _, e := range s {
			m[e.Key] = e.Value
		}
		keys[m["name"].(string)] = m["key"].(bson.D)
		unique[m["name"].(string)], _ = m["unique"].(bool)
	}
	if len(keys) != 3 || keys["_id_"] == nil {
		t.Errorf("listIndexes = %v, want _id_ and the two compound indexes", specs)
	}
	if k := keys["createdAt_-1__id_-1"]; len(k) != 2 || k[0].Key != "createdAt" || k[1].Key != "_id" || asInt(k[0].Value) != -1 || asInt(k[1].Value) != -1 {
		t.Errorf("createdAt/_id key = %v", k)
	}
	if !unique["tenant_1_path_1"] || unique["createdAt_-1__id_-1"] {
		t.Errorf("unique flags = %v", unique)
	}

	// The compound unique index is enforced on the pair only.
	docs := []any{
		bson.D{{Key: "tenant", Value: "a"}, {Key: "path", Value: "/x"}},
		bson.D{{Key: "tenant", Value: "b"}, {Key: "path", Value: "/x"}},
		bson.D{{Key: "tenant", Value: "a"}, {Key: "path", Value: "/x"}},
	}
	_, err = coll.InsertMany(ctxT(t), docs, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 2 || bwe.WriteErrors[0].Code != 11000 {
		t.Errorf("compound unique: err = %v, want one 11000 at index 2", err)
	}

	// Creating the same index again is a no-op.
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}}}); err != nil {
		t.Errorf("re-creating an identical index: %v", err)
	}
}

func asInt(v any) int64 {
	switch v := v.(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return 0
}

func indexSpec(t *testing.T, coll *mongo.Collection, name string) bson.M {
	t.Helper()
	cur, err := coll.Indexes().List(ctxT(t))
	if err != nil {
		t.Fatalf("listIndexes: %v", err)
	}
	var specs []bson.M
	if err := cur.All(ctxT(t), &specs); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s["name"] == name {
			return s
		}
	}
	t.Fatalf("index %s not in %v", name, specs)
	return nil
}

// $regex with a ^ anchor and a literal slash matches prefixes, both as a
// bson.Regex and as a {$regex: "..."} string.
func TestRegexPrefix(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	paths := []string{"/api/users", "/api/users/1", "/apix", "/other/api/x", "/API/upper"}
	var docs []any
	for _, p := range paths {
		docs = append(docs, bson.D{{Key: "path", Value: p}})
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	find := func(filter any) []string {
		t.Helper()
		cur, err := coll.Find(ctxT(t), filter, options.Find().SetSort(bson.D{{Key: "path", Value: 1}}))
		if err != nil {
			t.Fatalf("find %v: %v", filter, err)
		}
		var res []struct{ Path string }
		if err := cur.All(ctxT(t), &res); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res {
			out = append(out, r.Path)
		}
		return out
	}
	want := []string{"/api/users", "/api/users/1"}
	prefix := "^" + regexp.QuoteMeta("/api/")
	if got := find(bson.D{{Key: "path", Value: bson.Regex{Pattern: prefix}}}); !slices.Equal(got, want) {
		t.Errorf("bson.Regex %s: %v, want %v", prefix, got, want)
	}
	if got := find(bson.D{{Key: "path", Value: bson.D{{Key: "$regex", Value: prefix}}}}); !slices.Equal(got, want) {
		t.Errorf("$regex %s: %v, want %v", prefix, got, want)
	}
	if got := find(bson.D{{Key: "path", Value: bson.D{{Key: "$regex", Value: "^/api"}, {Key: "$options", Value: "i"}}}}); !slices.Equal(got, []string{"/API/upper", "/api/users", "/api/users/1", "/apix"}) {
		t.Errorf("$regex ^/api with i: %v", got)
	}
	// QuoteMeta matters: "." is a wildcard otherwise.
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "path", Value: "/v1x2"}}); err != nil {
		t.Fatal(err)
	}
	if got := find(bson.D{{Key: "path", Value: bson.Regex{Pattern: "^" + regexp.QuoteMeta("/v1.2")}}}); len(got) != 0 {
		t.Errorf("quoted /v1.2 matched %v", got)
	}
}

// Sorting on (createdAt desc, _id desc) with a limit, plus a keyset
// "next page" filter, works and ties on createdAt are broken by _id.
func TestSortCreatedAtIDDescLimit(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	// ids 1..6; createdAt: 1,2 at base; 3,4 at base+1s; 5 at base+2s; 6 at base-1s
	at := map[int]time.Time{1: base, 2: base, 3: base.Add(time.Second), 4: base.Add(time.Second), 5: base.Add(2 * time.Second), 6: base.Add(-time.Second)}
	var docs []any
	for id := 1; id <= 6; id++ {
		docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "createdAt", Value: at[id]}})
	}
	if _, err := coll.InsertMany(ctxT(t), docs, options.InsertMany().SetOrdered(false)); err != nil {
		t.Fatal(err)
	}
	sort := bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}}
	page := func(filter any) []int {
		t.Helper()
		cur, err := coll.Find(ctxT(t), filter, options.Find().SetSort(sort).SetLimit(3))
		if err != nil {
			t.Fatal(err)
		}
		var res []struct {
			ID        int       `bson:"_id"`
			CreatedAt time.Time `bson:"createdAt"`
		}
		if err := cur.All(ctxT(t), &res); err != nil {
			t.Fatal(err)
		}
		var ids []int
		for _, r := range res {
			ids = append(ids, r.ID)
			if !r.CreatedAt.Equal(at[r.ID]) {
				t.Errorf("id %d createdAt round-trip %v, want %v", r.ID, r.CreatedAt, at[r.ID])
			}
		}
		return ids
	}
	if got := page(bson.D{}); !slices.Equal(got, []int{5, 4, 3}) {
		t.Errorf("first page = %v, want [5 4 3]", got)
	}
	// After (base+1s, 3):
	after := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: base.Add(time.Second)}}}},
		bson.D{{Key: "createdAt", Value: base.Add(time.Second)}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: 3}}}},
	}}}
	if got := page(after); !slices.Equal(got, []int{2, 1, 6}) {
		t.Errorf("second page = %v, want [2 1 6]", got)
	}
}

// w: majority, j: true is accepted (FerretDB ignores writeConcern).
func TestWriteConcernMajorityJournal(t *testing.T) {
	t.Parallel()
	coll, _ := setup(t)
	wc := writeconcern.Majority()
	wc.Journal = new(bool)
	*wc.Journal = true
	c := coll.Database().Collection(coll.Name(), options.Collection().SetWriteConcern(wc))
	if _, err := c.InsertOne(ctxT(t), bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatalf("InsertOne w:majority j:true: %v", err)
	}
	if _, err := c.InsertMany(ctxT(t), []any{bson.D{{Key: "a", Value: 2}}, bson.D{{Key: "a", Value: 3}}}, options.InsertMany().SetOrdered(false)); err != nil {
		t.Fatalf("InsertMany w:majority j:true: %v", err)
	}
	if _, err := c.UpdateMany(ctxT(t), bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: true}}}}); err != nil {
		t.Fatalf("UpdateMany w:majority j:true: %v", err)
	}
	if _, err := c.DeleteOne(ctxT(t), bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatalf("DeleteOne w:majority j:true: %v", err)
	}
	if n, err := c.CountDocuments(ctxT(t), bson.D{{Key: "b", Value: true}}); err != nil || n != 2 {
		t.Errorf("count = %d, %v; want 2", n, err)
	}
}

// A dedicated server can be stopped and restarted on the same port and
// state directory; committed data survives and clients reconnect.
func TestServerStopStart(t *testing.T) {
	t.Parallel()
	srv := mongotest.NewServer(t)
	uri := srv.URI()
	if !srv.Running() {
		t.Fatal("NewServer: not running")
	}
	c := mongotest.Connect(t, uri)
	coll := c.Database("restart").Collection("docs")
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctxT(t), []any{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 2}}}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := srv.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %v", time.Since(start))
	if srv.Running() {
		t.Fatal("still running after Stop")
	}
	if err := srv.Stop(ctxT(t)); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// While stopped, operations fail (fast, with a short deadline).
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: 3}})
	cancel()
	if err == nil {
		t.Fatal("insert while stopped succeeded")
	}
	t.Logf("insert while stopped: %v", err)

	start = time.Now()
	if err := srv.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(start))
	if err := srv.Start(ctxT(t)); err == nil {
		t.Error("second Start succeeded")
	}
	if srv.URI() != uri {
		t.Fatalf("URI changed from %s to %s", uri, srv.URI())
	}

	// The same client recovers; poll with a deadline, the driver
	// rediscovers the server in the background.
	if err := pollPing(t, c); err != nil {
		t.Fatal(err)
	}
	n, err := coll.CountDocuments(ctxT(t), bson.D{})
	if err != nil || n != 2 {
		t.Fatalf("after restart: count = %d, %v; want 2", n, err)
	}
	// Indexes survive too.
	_, err = coll.InsertOne(ctxT(t), bson.D{{Key: "k", Value: 2}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Errorf("after restart: duplicate insert err = %v, want 11000", err)
	}
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "k", Value: 3}}); err != nil {
		t.Errorf("after restart: insert: %v", err)
	}
}

func TestServerDropConnections(t *testing.T) {
	t.Parallel()
	srv := mongotest.NewServer(t)
	c := mongotest.Connect(t, srv.URI())
	coll := c.Database("drop").Collection("docs")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	srv.DropConnections()
	// The first operation on a cut pooled connection may fail (a network
	// error the driver labels retryable; retryable writes are not
	// supported by FerretDB); afterwards the client works again.
	_, err := coll.InsertOne(ctxT(t), bson.D{{Key: "a", Value: 2}})
	t.Logf("first insert after DropConnections: %v", err)
	if err := pollPing(t, c); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "a", Value: 3}}); err != nil {
		t.Fatal(err)
	}
}

func pollPing(t *testing.T, c *mongo.Client) error {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := c.Ping(ctx, readpref.Primary())
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
