package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// StoreOption declares latitude the ports allow a store and that the suite must
// then not hold against it. Without options every test runs.
type StoreOption func(*storeCaveats)

type storeCaveats struct {
	coarsePurge bool
}

// CoarsePurge declares a store that deletes expired messages in units coarser than
// one message, as ports.ExpiredPurger allows (Elasticsearch: whole daily indices).
// The suite then skips the check that a message expiring exactly at the purge time
// is physically deleted; it still checks that whole expired days go and that
// nothing unexpired does.
func CoarsePurge() StoreOption {
	return func(c *storeCaveats) { c.coarsePurge = true }
}

// storeTest is one subtest: run gets a fresh, empty store.
type storeTest struct {
	name string
	run  func(t *testing.T, s ports.MessageStore)
	skip string // why the store's caveats rule this test out
}

// RunStoreTests checks newStore's stores against the ports.MessageStore contract.
// Each subtest gets a fresh store; none shares state with another.
func RunStoreTests(t *testing.T, newStore StoreMaker, opts ...StoreOption) {
	var caveats storeCaveats
	for _, opt := range opts {
		opt(&caveats)
	}
	tests := []storeTest{
		{name: "EmptyStore", run: testEmptyStore},
		{name: "RoundTripsEveryField", run: testRoundTrip},
		{name: "RoundTripsLargeBody", run: testLargeBody},
		{name: "GetUnknownIsNotFound", run: testGetUnknown},
		{name: "BatchAppend", run: testBatchAppend},
		{name: "AppendIsIdempotent", run: testAppendIdempotent},
		{name: "ReappendOverlappingBatchConverges", run: testReappendOverlapping},
		{name: "AppendKeepsNoReferences", run: testAppendCopies},
		{name: "ReturnedMessagesBelongToCaller", run: testReturnedCopies},
		{name: "NewestFirstTiesByIDDescending", run: testOrder},
		{name: "Filters", run: testFilters},
		{name: "PathPrefixOfAnyLengthAndCharacter", run: testPathPrefixEdges},
		{name: "Pagination", run: testPagination},
		{name: "LimitAroundDataSize", run: testLimitAroundDataSize},
		{name: "PageStopsAtPageBytes", run: testPageBytes},
		{name: "LookupFindsStoredIDsReadableOrNot", run: testLookup},
		{name: "PaginationDuringAppends", run: testPaginationDuringAppends},
		{name: "ScopeIsolation", run: testScopeIsolation},
		{name: "VisibleFromVisibleAt", run: testVisibleAt},
		{name: "ExpiredFromExpiresAt", run: testExpiresAt},
		{name: "PurgeExpired", run: testPurgeExpired},
		{name: "PurgeExpiredExactBoundary", run: testPurgeBoundary,
			skip: skipIf(caveats.coarsePurge, "the store purges whole days (CoarsePurge)")},
		{name: "ConcurrentWritersAndReaders", run: testConcurrentWritersAndReaders},
		// The explorer additions (store_explorer.go, store_stats.go).
		{name: "DurationAndSizesRoundTrip", run: testDurationAndSizes},
		{name: "Search", run: testSearch},
		{name: "SearchWithFiltersAndPaging", run: testSearchWithFiltersAndPaging},
		{name: "DurationBounds", run: testDurationBounds},
		{name: "StatsBuckets", run: testStatsBuckets},
		{name: "StatsTopPathsAndNames", run: testStatsTop},
		{name: "StatsReadableAt", run: testStatsReadableAt},
		{name: "StatsScopeIsolation", run: testStatsScopeIsolation},
		{name: "StatsFilters", run: testStatsFilters},
		// Route templates (store_routes.go).
		{name: "RouteRoundTrip", run: testRouteRoundTrip},
		{name: "RouteFilter", run: testRouteFilter},
		{name: "StatsTopRoutes", run: testStatsTopRoutes},
		// What ingest rules drop, and keep of a sample (store_tallies.go).
		{name: "TalliesCountedNeverRead", run: testTalliesCountedNeverRead},
		{name: "TalliesAreIdempotent", run: testTalliesAreIdempotent},
		{name: "LookupTalliesFindsTalliesAlone", run: testLookupTalliesFindsTalliesAlone},
		{name: "SampleRateRoundTrips", run: testSampleRateRoundTrips},
		// Statistics past the messages' retention (store_rollupkeep.go).
		{name: "RollupsOutliveMessages", run: testRollupsOutliveMessages},
		// Retention classes, bodies kept for less (store_retention.go).
		{name: "RetentionClasses", run: testRetentionClasses},
		{name: "ExpiredBodiesNotSearched", run: testExpiredBodiesNotSearched},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			tc.run(t, freshStore(t, newStore))
		})
	}
}

func skipIf(cond bool, reason string) string {
	if cond {
		return reason
	}
	return ""
}

func testEmptyStore(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	cursor := &domain.Cursor{CreatedAt: f.anchor, ID: f.identity().ID}
	for _, q := range []domain.Query{
		{Scope: scopeLive, Limit: 1},
		{Scope: scopeLive, Limit: domain.MaxLimit},
		{Scope: scopeTest, Limit: domain.DefaultLimit, After: cursor},
		{Scope: scopeLive, Limit: domain.DefaultLimit, Filter: domain.Filter{Name: "shop", PathPrefix: "/", StatusMin: 200, StatusMax: 299}},
	} {
		page, err := s.List(t.Context(), q, f.now())
		if err != nil {
			t.Errorf("List(%s) on an empty store: %v", describeQuery(q), err)
			continue
		}
		if len(page.Messages) != 0 || page.HasMore {
			t.Errorf("List(%s) on an empty store = %d messages, HasMore %v; want none and false", describeQuery(q), len(page.Messages), page.HasMore)
		}
	}
	assertNotFound(t, s, scopeLive, f.identity().ID, f.now())
	assertNotFound(t, s, scopeLive, f.identity().Reference, f.now())
	if n, err := s.PurgeExpired(t.Context(), f.now()); err != nil || (n != 0 && n != -1) {
		t.Errorf("PurgeExpired on an empty store = %d, %v; want 0 (or -1), nil", n, err)
	}
}

func testRoundTrip(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := f.richMessages(scopeLive)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	assertHolds(t, s, "after Append", f.now(), msgs)
}

func testLargeBody(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	body := largeBody()
	m := f.message(scopeLive, f.ago(time.Hour), func(m *domain.Message) {
		m.Request.Body = body
		m.Request.ContentType = "text/plain"
		m.Response.Body = body[:len(body)/2]
	})
	mustAppend(t, s, []domain.Message{m})
	waitForStored(t, s, f.now(), []domain.Message{m})
	assertHolds(t, s, "after Append", f.now(), []domain.Message{m})
}

func testGetUnknown(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	stored := f.message(scopeLive, f.ago(time.Hour))
	mustAppend(t, s, []domain.Message{stored})
	waitForStored(t, s, f.now(), []domain.Message{stored})
	assertGet(t, s, stored, f.now()) // the control: lookups work at all

	unknown := f.identity()
	for _, key := range []string{
		unknown.ID,
		unknown.Reference,
		"",
		" ",
		"not-an-id",
		"msg_",
		"msg_!!!!!!!!!!!!",
		stored.ID[:len(stored.ID)-1],
		stored.ID + " ",
		stored.Reference[:len(stored.Reference)-1],
		stored.Reference + "x",
		"*",
		".*",
		"' OR '1'='1",
		`{"$ne": null}`,
		"../" + stored.ID,
		"\x00",
		"\xff\xfe",
		strings.Repeat("a", 10000),
	} {
		assertNotFound(t, s, scopeLive, key, f.now())
	}
}

func testBatchAppend(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	// 500 messages in one call, three per millisecond so that many tie.
	msgs := make([]domain.Message, 500)
	for i := range msgs {
		msgs[i] = f.message(scopeLive, f.ago(time.Duration(i/3)*time.Millisecond), func(m *domain.Message) {
			m.Path = fmt.Sprintf("/v1/items/%d", i)
		})
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	want := expectedPage(msgs, domain.Query{Scope: scopeLive}, f.now())
	assertMessages(t, "List after one batch of 500", want, listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()))
}

// changed is m with the same id and everything else it may differ in on a retry
// changed, its CreatedAt moved within the same UTC day.
func changed(m domain.Message) domain.Message {
	c := m.Clone()
	c.Reference = "msg_CHANGED" + m.Reference[len(m.Reference)-5:]
	c.Name += "-changed"
	c.Method = "DELETE"
	c.Path += "/changed"
	c.StatusCode = 503
	c.Request.Header["X-Changed"] = []string{"yes"}
	c.Response.Body = "changed"
	shift := time.Millisecond
	if c.CreatedAt.Add(shift).Truncate(24*time.Hour) != c.CreatedAt.Truncate(24*time.Hour) {
		shift = -shift
	}
	c.CreatedAt = c.CreatedAt.Add(shift)
	c.UpdatedAt = c.UpdatedAt.Add(time.Minute)
	c.ExpiresAt = c.CreatedAt.Add(fixtureRetention)
	return c
}

func testAppendIdempotent(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	original := f.message(scopeLive, f.ago(time.Hour))
	mustAppend(t, s, []domain.Message{original})
	waitForStored(t, s, f.now(), []domain.Message{original})

	mustAppend(t, s, []domain.Message{original}) // a plain retry
	retry := changed(original)
	control := f.message(scopeLive, f.ago(30*time.Minute))
	mustAppend(t, s, []domain.Message{retry, control})
	waitForStored(t, s, f.now(), []domain.Message{control})

	assertHolds(t, s, "after re-appending an id", f.now(), []domain.Message{control, original})
	assertNotFound(t, s, scopeLive, retry.Reference, f.now())
}

func testReappendOverlapping(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	first := f.series(scopeLive, 10, f.ago(time.Hour), 10*time.Millisecond)
	mustAppend(t, s, first)
	waitForStored(t, s, f.now(), first)
	mustAppend(t, s, first) // the whole batch again

	added := f.series(scopeLive, 10, f.ago(59*time.Minute), 10*time.Millisecond)
	overlapping := make([]domain.Message, 0, 15)
	for _, m := range first[5:] {
		overlapping = append(overlapping, changed(m))
	}
	overlapping = append(overlapping, added...)
	mustAppend(t, s, overlapping)
	waitForStored(t, s, f.now(), added)

	want := expectedPage(append(cloneAll(first), added...), domain.Query{Scope: scopeLive}, f.now())
	assertMessages(t, "List after a partly overlapping batch", want, listAll(t, s, scopeLive, domain.Filter{}, 7, f.now()))
	for _, m := range first[5:] {
		assertGet(t, s, m, f.now())
	}
}

func testAppendCopies(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := f.richMessages(scopeLive)
	pristine := cloneAll(msgs)
	mustAppend(t, s, msgs)
	for i := range msgs { // what a caller reusing its buffers would do
		msgs[i].Name = "mutated"
		msgs[i].Request.Header["Accept"] = []string{"mutated"}
		for _, values := range msgs[i].Response.Header {
			for j := range values {
				values[j] = "mutated"
			}
		}
	}
	waitForStored(t, s, f.now(), pristine)
	assertHolds(t, s, "after the caller changed its messages", f.now(), pristine)
}

func testReturnedCopies(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := f.richMessages(scopeLive)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	mutate := func(m *domain.Message) {
		m.Request.Header["Added"] = []string{"x"}
		for _, values := range m.Response.Header {
			for j := range values {
				values[j] = "mutated"
			}
		}
	}
	for _, m := range listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()) {
		mutate(&m)
	}
	for _, m := range msgs {
		got, err := s.Get(t.Context(), scopeLive, m.ID, f.now())
		if err != nil {
			t.Fatalf("Get(%q): %v", m.ID, err)
		}
		mutate(&got)
	}
	assertHolds(t, s, "after the caller changed returned messages", f.now(), msgs)
}

func testLimitAroundDataSize(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := f.series(scopeLive, 3, f.ago(time.Hour), time.Second)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	for _, tc := range []struct {
		limit   int
		want    []domain.Message
		hasMore bool
	}{
		{limit: 2, want: msgs[:2], hasMore: true},
		{limit: 3, want: msgs, hasMore: false},
		{limit: 4, want: msgs, hasMore: false},
		{limit: domain.MaxLimit, want: msgs, hasMore: false},
	} {
		page, err := s.List(t.Context(), domain.Query{Scope: scopeLive, Limit: tc.limit}, f.now())
		if err != nil {
			t.Fatalf("List(limit %d): %v", tc.limit, err)
		}
		assertIDs(t, fmt.Sprintf("first page with limit %d of 3 messages", tc.limit), tc.want, page.Messages)
		if page.HasMore != tc.hasMore {
			t.Errorf("first page with limit %d of 3 messages: HasMore = %v, want %v", tc.limit, page.HasMore, tc.hasMore)
		}
	}
}

// A page ends early once its messages hold domain.PageBytes, and the next page
// goes on from there.
func testPageBytes(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	body := strings.Repeat("b", domain.PageBytes/3)
	msgs := f.series(scopeLive, 4, f.ago(time.Hour), time.Second, func(m *domain.Message) { m.Response.Body = body })
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	q := domain.Query{Scope: scopeLive, Limit: 10}
	for i, want := range []struct {
		msgs    []domain.Message
		hasMore bool
	}{{msgs[:3], true}, {msgs[3:], false}} {
		page, err := s.List(t.Context(), q, f.now())
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		what := fmt.Sprintf("page %d of 4 messages of PageBytes/3 each", i+1)
		assertIDs(t, what, want.msgs, page.Messages)
		if page.HasMore != want.hasMore {
			t.Errorf("%s: HasMore = %v, want %v", what, page.HasMore, want.hasMore)
		}
		q.After = page.Next()
	}
}

// Lookup finds a scope's messages by id, readable yet or not, every field as
// appended, and nothing of another scope or never stored.
func testLookup(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	readable := f.message(scopeLive, f.ago(time.Hour))
	notYet := f.message(scopeLive, f.ago(time.Hour), func(m *domain.Message) { m.VisibleAt = f.now().Add(time.Hour) })
	elsewhere := f.message(scopeTest, f.ago(time.Hour))
	mustAppend(t, s, []domain.Message{readable, notYet, elsewhere})
	want := []domain.Message{notYet, readable}
	sortNewestFirst(want)
	ids := []string{readable.ID, elsewhere.ID, f.identity().ID}
	for range 1000 { // a batch's worth of ids never stored, before the last one that is
		ids = append(ids, f.identity().ID)
	}
	ids = append(ids, notYet.ID)
	var got []domain.Message
	err := eventually(t.Context(), s, func() (err error) {
		if got, err = s.Lookup(t.Context(), scopeLive, ids); err != nil {
			return err
		}
		sortNewestFirst(got)
		if !slices.Equal(idsOf(got), idsOf(want)) {
			return fmt.Errorf("Lookup found %v, want %v", idsOf(got), idsOf(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	assertMessages(t, "Lookup", want, got)
	if none, err := s.Lookup(t.Context(), scopeLive, nil); err != nil || len(none) != 0 {
		t.Errorf("Lookup of no ids = %v, %v; want nothing", idsOf(none), err)
	}
}

// A path prefix may be as long as the domain allows and hold any character a
// path may: each backend's prefix query has its own limits (Lucene's automaton
// size, a BSON regex that cannot hold NUL).
func testPathPrefixEdges(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	long := "/" + strings.Repeat("ü", domain.MaxPathLength-1)
	longest := long[:domain.MaxPathPrefixBytes]
	msgs := []domain.Message{
		f.message(scopeLive, f.ago(time.Hour), func(m *domain.Message) { m.Path = long }),
		f.message(scopeLive, f.ago(2*time.Hour), func(m *domain.Message) { m.Path = "/a\x00b" }),
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	for _, tc := range []struct {
		prefix string
		want   []domain.Message
	}{
		{longest, msgs[:1]},
		{"/a\x00", msgs[1:]},
		{"/a\x00c", nil},
	} {
		got := listAll(t, s, scopeLive, domain.Filter{PathPrefix: tc.prefix}, domain.MaxLimit, f.now())
		assertIDs(t, fmt.Sprintf("path_prefix of %d bytes (%.12q...)", len(tc.prefix), tc.prefix), tc.want, got)
	}
}
