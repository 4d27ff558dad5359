package mongo_test

import (
	"context"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
)

// BenchmarkAlertStore is what alerting adds to the statistics on MongoDB: a
// round of 1,000 rules over no traffic, each rule's state swapped in by
// compare-and-set (versions, see AlertStore). The embedded FerretDB runs in
// the test's process, so cpu-ms/round is the server's CPU too:
//
//	go test -run '^$' -bench AlertStore -benchtime 5x ./adapters/mongo/
func BenchmarkAlertStore(b *testing.B) {
	uri, db := mongotest.NewDatabase(b)
	store, err := mongo.New(b.Context(), mongo.Config{URI: uri, Database: db})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close(context.Background()) })
	alerts, err := mongo.NewAlertStore(b.Context(), store)
	if err != nil {
		b.Fatal(err)
	}
	conformance.BenchAlertEvaluation(b, conformance.NoTraffic{}, alerts, scope, []string{"shop", "billing", "search"}, time.Now())
}
