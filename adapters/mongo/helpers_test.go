package mongo_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

const (
	closeTimeout = 10 * time.Second
	// opTimeout bounds every single call of a test: a hang fails the test
	// instead of stalling it.
	opTimeout = 20 * time.Second
	// recoverTimeout is how long a restarted server may take to be usable again.
	recoverTimeout = 30 * time.Second
)

var scope = domain.Scope{Account: "acme", Domain: domain.DomainLive}

func opCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newMessage builds a message of scope created at createdAt, readable from then
// for an hour; edits change any field.
func newMessage(t *testing.T, createdAt time.Time, edits ...func(*domain.Message)) domain.Message {
	expireInAnHour := func(m *domain.Message) { m.ExpiresAt = m.CreatedAt.Add(time.Hour) }
	return conformance.NewMessage(t, scope, createdAt, append([]func(*domain.Message){expireInAnHour}, edits...)...)
}

// rawCollection opens the store's collection with a client of the test's own.
func rawCollection(t *testing.T, uri, db string) *mongodrv.Collection {
	t.Helper()
	return mongotest.Connect(t, uri).Database(db).Collection("messages")
}

// isFerretDB reports whether the server behind coll is FerretDB.
func isFerretDB(t *testing.T, coll *mongodrv.Collection) bool {
	t.Helper()
	var info bson.M
	err := coll.Database().Client().Database("admin").RunCommand(opCtx(t), bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info)
	if err != nil {
		t.Fatalf("buildInfo: %v", err)
	}
	_, ferret := info["ferretdbVersion"]
	return ferret
}

// eventually retries try until it succeeds or within is over.
func eventually(t *testing.T, within time.Duration, try func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", within, err)
		}
		<-tick.C
	}
}

// closedPort returns a 127.0.0.1 address that refuses connections.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("mongodb://%s/", addr)
}
