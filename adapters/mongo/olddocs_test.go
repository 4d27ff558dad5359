package mongo_test

import (
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// A document stored before the explorer's fields (no duration, sizes or
// route) reads, is searched, is left out of duration bounds and counts in the
// statistics under its path without the query string. It is stored before
// the store opens, as such a document was: the store's start marks it for the
// statistics' rollups (MarkExisting); one stored behind an open store's back
// would be counted by no rollup.
func TestDocumentsStoredBeforeTheExplorer(t *testing.T) {
	t.Parallel()
	cfg := freshConfig(t)
	at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	us := at.UnixMicro()
	old := bson.D{
		{Key: "_id", Value: "0195a1b2-0000-7000-8000-000000000001"}, {Key: "reference", Value: "msg_old000000001"},
		{Key: "account", Value: scope.Account}, {Key: "domain", Value: scope.Domain}, {Key: "name", Value: "legacy"},
		{Key: "ipAddress", Value: ""}, {Key: "method", Value: "POST"}, {Key: "path", Value: "/v1/orders?page=2"},
		{Key: "statusCode", Value: int32(502)},
		{Key: "request", Value: bson.D{{Key: "headers", Value: bson.A{
			bson.D{{Key: "name", Value: "X-Trace"}, {Key: "values", Value: bson.A{"abc"}}},
			bson.D{{Key: "name", Value: "X-Trace"}, {Key: "values", Value: bson.A{"def"}}},
		}}, {Key: "body", Value: `{"order":"ord_0ld"}`}, {Key: "contentType", Value: "application/json"}}},
		{Key: "response", Value: bson.D{{Key: "headers", Value: bson.A{}}, {Key: "body", Value: "bad gateway"}, {Key: "contentType", Value: ""}}},
		{Key: "createdAt", Value: us}, {Key: "updatedAt", Value: us}, {Key: "visibleAt", Value: us},
		{Key: "expiresAt", Value: at.Add(time.Hour).UnixMicro()}, {Key: "expireAt", Value: at.Add(time.Hour)},
	}
	if _, err := rawCollection(t, cfg.URI, cfg.Database).InsertOne(opCtx(t), old); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, cfg)
	now := time.Now()
	got, err := s.Get(opCtx(t), scope, "msg_old000000001", now)
	if err != nil {
		t.Fatal(err)
	}
	if got.HasDuration || got.Request.Size != len(`{"order":"ord_0ld"}`) || got.Response.Size != len("bad gateway") ||
		!slices.Equal(got.Request.Header["X-Trace"], []string{"abc", "def"}) {
		t.Errorf("older document read as duration %v (%v), sizes %d/%d, X-Trace %q; want none, the bodies' lengths, both values",
			got.Duration, got.HasDuration, got.Request.Size, got.Response.Size, got.Request.Header["X-Trace"])
	}
	zero := time.Duration(0)
	for _, tc := range []struct {
		filter domain.Filter
		want   int
	}{{domain.Filter{Text: "ORD_0LD"}, 1}, {domain.Filter{Text: "def"}, 1}, {domain.Filter{MinDuration: &zero}, 0}} {
		page, err := s.List(opCtx(t), domain.Query{Scope: scope, Filter: tc.filter, Limit: 10}, now)
		if err != nil || len(page.Messages) != tc.want {
			t.Errorf("List(%+v) = %d messages, %v; want %d", tc.filter, len(page.Messages), err, tc.want)
		}
	}
	q, err := stats.ParseQuery(nil, now)
	if err != nil {
		t.Fatal(err)
	}
	q.Scope = scope
	st, err := s.Stats(opCtx(t), q, now)
	if err != nil {
		t.Fatal(err)
	}
	wantTop := []stats.KeyCount{{Key: "/v1/orders", Count: 1, Errors: 1}}
	if st.Total.Count != 1 || st.Total.Status[4] != 1 || st.Total.Duration.Count != 0 || !slices.Equal(st.TopPaths, wantTop) {
		t.Errorf("statistics of the older document: total %+v, top paths %v; want one 5xx without duration under %v",
			st.Total, st.TopPaths, wantTop)
	}
}
