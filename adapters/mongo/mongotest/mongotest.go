// Package mongotest provisions a MongoDB wire-protocol server for
// integration tests, so that `go test ./...` on a machine with only Go
// installed runs the MongoDB tests for real.
//
// By default [Main] starts one FerretDB (v1.24, SQLite handler) embedded in
// the test binary, with its state in a temporary directory, listening on a
// free 127.0.0.1 port. Environment variables change that:
//
//   - REQLOG_TEST_MONGODB_URI: use this MongoDB instead. It is pinged once;
//     if it is unreachable every test that asks for it fails (an explicitly
//     requested server that is down is never a skip).
//   - REQLOG_REQUIRE_BACKENDS=1: every would-be skip is a failure.
//   - REQLOG_TEST_FERRETDB_LOG=debug|info|warn|error: FerretDB log level
//     (default error; logs go to stderr).
//
// Typical use:
//
//	func TestMain(m *testing.M) { os.Exit(mongotest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		uri, db := mongotest.NewDatabase(t) // empty database, dropped after the test
//		client := mongotest.Connect(t, uri)
//		coll := client.Database(db).Collection("requests")
//		...
//	}
//
// Fault tests that need to stop and restart the server use [NewServer].
package mongotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// Environment variables read by this package.
const (
	EnvURI             = "REQLOG_TEST_MONGODB_URI"
	EnvRequireBackends = "REQLOG_REQUIRE_BACKENDS"
	EnvFerretDBLog     = "REQLOG_TEST_FERRETDB_LOG"
)

const (
	pingTimeout  = 10 * time.Second
	startTimeout = 30 * time.Second
	stopTimeout  = 30 * time.Second
	dropTimeout  = 10 * time.Second
)

// shared is the server of this test binary, set up by Main.
var shared struct {
	mainCalled bool
	uri        string
	err        error // why uri is unusable
	explicit   bool  // uri came from EnvURI: err is a failure, not a skip
	server     *Server
}

// Main is for TestMain: it starts one embedded FerretDB for the whole test
// binary (or, if $REQLOG_TEST_MONGODB_URI is set, pings that server instead),
// runs m.Run, stops the embedded server and returns the exit code:
//
//	func TestMain(m *testing.M) { os.Exit(mongotest.Main(m)) }
//
// Problems are not reported here but by [URI] to each test that needs the
// server, so tests that do not need it still run.
func Main(m *testing.M) int {
	shared.mainCalled = true

	if uri := os.Getenv(EnvURI); uri != "" {
		shared.uri, shared.explicit = uri, true
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		defer cancel()
		if err := ping(ctx, uri); err != nil {
			shared.err = fmt.Errorf("%s=%s is unreachable: %w", EnvURI, redact(uri), err)
		}
		return m.Run()
	}

	dir, err := os.MkdirTemp("", "reqlog-ferretdb-")
	if err != nil {
		shared.err = fmt.Errorf("embedded FerretDB: %w", err)
		return m.Run()
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	srv, err := StartServer(ctx, dir)
	cancel()
	if err != nil {
		shared.err = err
		return m.Run()
	}
	shared.server, shared.uri = srv, srv.URI()

	code := m.Run()

	ctx, cancel = context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// URI returns the mongodb:// URI of this test binary's server. It fails t
// if [Main] was not called or if $REQLOG_TEST_MONGODB_URI is unreachable,
// and skips t (fails under REQLOG_REQUIRE_BACKENDS=1) if the embedded
// server could not be started.
func URI(t testing.TB) string {
	t.Helper()
	switch {
	case !shared.mainCalled:
		t.Fatal("mongotest: Main was not called; add func TestMain(m *testing.M) { os.Exit(mongotest.Main(m)) }")
	case shared.err != nil && shared.explicit:
		t.Fatalf("mongotest: %v", shared.err)
	case shared.err != nil:
		skipOrFail(t, fmt.Sprintf("mongotest: no MongoDB server (set %s to use a real one): %v", EnvURI, shared.err))
	}
	return shared.uri
}

// NewDatabase returns this test binary's server URI and the name of a
// fresh database unique to t (also unique across test binaries sharing a
// server), and registers a t.Cleanup that drops it. Call it once per
// (sub)test that needs an empty database.
func NewDatabase(t testing.TB) (uri, dbName string) {
	t.Helper()
	uri = URI(t)
	dbName = databaseName(t.Name())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		if err := dropDatabase(ctx, uri, dbName); err != nil {
			t.Errorf("mongotest: dropping database %s: %v", dbName, err)
		}
	})
	return uri, dbName
}

// Connect connects a mongo-driver v2 client to uri and registers a
// t.Cleanup that disconnects it.
func Connect(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatalf("mongotest: connecting to %s: %v", redact(uri), err)
	}
	t.Cleanup(func() { disconnect(c) })
	return c
}

// skipOrFail skips t, or fails it under REQLOG_REQUIRE_BACKENDS=1.
func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if required, _ := strconv.ParseBool(os.Getenv(EnvRequireBackends)); required {
		t.Fatalf("%s (a failure, not a skip, because %s is set)", msg, EnvRequireBackends)
	}
	t.Skip(msg)
}

// databaseName makes a database name from a test name: FerretDB accepts
// [a-zA-Z0-9_-]{1,63}; lower case avoids MongoDB's case-insensitive clashes.
// A random suffix keeps it unique across processes sharing one server.
func databaseName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	const maxLen = 63
	prefix := "t_"
	tail := "_" + hex.EncodeToString(suffix[:])
	name := b.String()
	if room := maxLen - len(prefix) - len(tail); len(name) > room {
		name = name[:room]
	}
	return prefix + name + tail
}

func ping(ctx context.Context, uri string) error {
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer disconnect(c)
	return c.Ping(ctx, readpref.Primary())
}

func dropDatabase(ctx context.Context, uri, name string) error {
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer disconnect(c)
	return c.Database(name).Drop(ctx)
}

func disconnect(c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
	defer cancel()
	_ = c.Disconnect(ctx)
}

// redact hides a password in uri.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparsable URI)"
	}
	return u.Redacted()
}
