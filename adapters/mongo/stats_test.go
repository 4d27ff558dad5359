package mongo_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
)

// serverKind opens a store and reports how it computes statistics, whether
// the server is FerretDB, and its major version.
func serverKind(t *testing.T) (method string, ferret bool, major int32) {
	t.Helper()
	cfg := freshConfig(t)
	s := mustOpen(t, cfg)
	coll := rawCollection(t, cfg.URI, cfg.Database)
	var info struct {
		VersionArray []int32 `bson:"versionArray"`
	}
	err := coll.Database().Client().Database("admin").RunCommand(opCtx(t), bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info)
	if err != nil || len(info.VersionArray) == 0 {
		t.Fatalf("buildInfo: %v (%+v)", err, info)
	}
	return s.StatsMethod(), isFerretDB(t, coll), info.VersionArray[0]
}

// FerretDB (no $percentile) and MongoDB before 7.0 stream; MongoDB 7.0+ runs
// the pipeline.
func TestStatsMethodFollowsTheServer(t *testing.T) {
	t.Parallel()
	method, ferret, major := serverKind(t)
	want := "pipeline"
	if ferret || major < 7 {
		want = "streaming"
	}
	if method != want {
		t.Errorf("StatsMethod() = %q on a server of major version %d (FerretDB: %v), want %q", method, major, ferret, want)
	}
}

// Where TestStoreConformance runs the pipeline, the streaming fallback must
// meet the contract too.
func TestStoreConformanceStreamingStats(t *testing.T) {
	if method, _, _ := serverKind(t); method != "pipeline" {
		t.Skipf("this server's statistics stream already in TestStoreConformance; set %s to a MongoDB 7.0+ to run the fallback beside the pipeline", mongotest.EnvURI)
	}
	conformance.RunStoreTests(t, storeMaker(func(cfg *mongo.Config) { cfg.StreamStats = true }))
}
