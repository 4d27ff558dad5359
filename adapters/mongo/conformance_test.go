package mongo_test

import (
	"context"
	"os"
	"testing"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

// TestMain starts one embedded FerretDB for the package, or uses the server
// named by $REQLOG_TEST_MONGODB_URI.
func TestMain(m *testing.M) { os.Exit(mongotest.Main(m)) }

func TestStoreConformance(t *testing.T) {
	conformance.RunStoreTests(t, storeMaker())
}

func TestEraseConformance(t *testing.T) {
	conformance.RunEraseTests(t, storeMaker())
}

// The HTTP suite's clock lies in the real past; a real server's TTL monitor
// would delete its messages mid-test, so the TTL index is left out here.
func TestAPIConformance(t *testing.T) {
	conformance.RunAPITests(t, alertingStoreMaker(), httpapitest.Serve)
}

// storeMaker opens a store on a fresh database per subtest.
func storeMaker(tweaks ...func(*mongo.Config)) conformance.StoreMaker {
	return func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		return openStore(ctx, t, tweaks...)
	}
}

// openStore opens a store on a fresh database that is dropped after t.
func openStore(ctx context.Context, t *testing.T, tweaks ...func(*mongo.Config)) (*mongo.Store, error) {
	t.Helper()
	cfg := freshConfig(t)
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	return openWith(ctx, t, cfg)
}

// freshConfig configures a store on a fresh database that is dropped after t.
// Under the race detector an operation may wait longer than the default for
// the embedded FerretDB, busy with the package's parallel tests: the bound is
// there to catch a hang, not to time the server.
func freshConfig(t *testing.T) mongo.Config {
	t.Helper()
	uri, db := mongotest.NewDatabase(t)
	cfg := mongo.Config{URI: uri, Database: db}
	if raceEnabled {
		cfg.OperationTimeout = 4 * mongo.DefaultOperationTimeout
	}
	return cfg
}

// openWith opens a store on cfg and closes it when t ends, before the database
// is dropped.
func openWith(ctx context.Context, t *testing.T, cfg mongo.Config) (*mongo.Store, error) {
	t.Helper()
	s, err := mongo.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { closeStore(t, s) })
	return s, nil
}

// mustOpen is openWith for tests that cannot go on without the store.
func mustOpen(t *testing.T, cfg mongo.Config) *mongo.Store {
	t.Helper()
	s, err := openWith(opCtx(t), t, cfg)
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	return s
}

func closeStore(t *testing.T, s *mongo.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("closing the store: %v", err)
	}
}

func TestRewriteConformance(t *testing.T) {
	conformance.RunRewriteTests(t, storeMaker())
}
