package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

func testOrder(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	// Ids are time-ordered, so give later ids earlier times: only a store that
	// really sorts by CreatedAt first gets the order right.
	var msgs []domain.Message
	for i := range 20 {
		msgs = append(msgs, f.message(scopeLive, f.ago(time.Hour).Add(time.Duration(i)*time.Microsecond)))
	}
	slices.Reverse(msgs) // now created times fall while ids rise
	tie := f.ago(30 * time.Minute)
	for range 40 {
		msgs = append(msgs, f.message(scopeLive, tie))
	}
	rand.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)

	want := expectedPage(msgs, domain.Query{Scope: scopeLive}, f.now())
	assertIDs(t, "List of 40 messages created at the same microsecond and 20 one microsecond apart",
		want, listAll(t, s, scopeLive, domain.Filter{}, domain.MaxLimit, f.now()))
}

// filterFixtures are messages that differ in every filtered field, in combinations
// the filter cases below cut through, plus messages no query may return. from and
// to are times with messages exactly at, just before and just after them.
func filterFixtures(f fixtures) (msgs []domain.Message, from, to time.Time) {
	names := []string{"shop", "Shop", "shop-eu", "billing"}
	methods := []string{"GET", "POST", "DELETE"}
	ips := []string{"10.0.0.1", "10.0.0.10", "2001:db8::1", "", "192.0.2.1"}
	paths := []string{
		"/v1/orders", "/v1/orders/42", "/v1/orders?page=2", "/v1/ordersX",
		"/a.b(c)[d]+*?", "/a.b(c)[d]+*?/tail", "/aXb(c)[d]+*?", "/A.B(C)[D]+*?", "/a.b(c)[d]",
		"/100%_off", "/100abcoff", `/x\y^$|{2}`, `/x\y^$|{2}/z`,
	}
	statuses := []int{100, 199, 200, 204, 399, 400, 404, 499, 500, 503, 599}
	base := f.ago(3 * time.Hour)
	const n = 150
	for i := range n {
		created := base.Add(time.Duration(i/2) * 7 * time.Millisecond) // pairs tie
		msgs = append(msgs, f.message(scopeLive, created, func(m *domain.Message) {
			m.Name = names[i%len(names)]
			m.Method = methods[i%len(methods)]
			m.IPAddress = ips[i%len(ips)]
			m.Path = paths[i%len(paths)]
			m.StatusCode = statuses[i%len(statuses)]
		}))
	}
	from, to = msgs[40].CreatedAt, msgs[100].CreatedAt
	for _, edge := range []time.Time{from, to} {
		for _, d := range []time.Duration{-time.Microsecond, time.Microsecond} {
			msgs = append(msgs, f.message(scopeLive, edge.Add(d)))
		}
	}
	// Matching messages that must never be returned: not yet visible, expired,
	// of another scope.
	for i, m := range slices.Clone(msgs[:20]) {
		hidden := m.Clone()
		hidden.ID, hidden.Reference = f.identity().ID, f.identity().Reference
		switch i % 3 {
		case 0:
			hidden.VisibleAt = f.now().Add(time.Microsecond)
		case 1:
			hidden.CreatedAt = f.now().Add(-fixtureRetention)
			hidden.UpdatedAt = hidden.CreatedAt
			hidden.VisibleAt = hidden.CreatedAt.Add(fixtureVisibility)
			hidden.ExpiresAt = f.now()
		case 2:
			hidden.Account, hidden.Domain = scopeTest.Account, scopeTest.Domain
		}
		msgs = append(msgs, hidden)
	}
	return msgs, from, to
}

func testFilters(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs, from, to := filterFixtures(f)
	mustAppend(t, s, msgs)
	var readable []domain.Message
	for _, m := range msgs {
		if m.Readable(f.now()) {
			readable = append(readable, m)
		}
	}
	waitForStored(t, s, f.now(), readable)
	all := expectedPage(msgs, domain.Query{Scope: scopeLive}, f.now())
	every := msgs[7] // a message every single filter at once must find
	if every.IPAddress == "" {
		t.Fatal("fixture error: the message for the all-filters case needs an IP address")
	}
	class := every.StatusCode / 100 * 100

	cases := []struct {
		name   string
		filter domain.Filter
		// what the expected result may be besides a proper, non-empty subset
		matchesNone, matchesAll bool
	}{
		{name: "name", filter: domain.Filter{Name: "shop"}},
		{name: "name is case sensitive", filter: domain.Filter{Name: "Shop"}},
		{name: "name is exact, not a prefix", filter: domain.Filter{Name: "shop-eu"}},
		{name: "unknown name", filter: domain.Filter{Name: "nobody"}, matchesNone: true},
		{name: "method", filter: domain.Filter{Method: "POST"}},
		{name: "IPv4 is exact, not a prefix", filter: domain.Filter{IPAddress: "10.0.0.1"}},
		{name: "IPv6", filter: domain.Filter{IPAddress: "2001:db8::1"}},
		{name: "path", filter: domain.Filter{Path: "/v1/orders"}},
		{name: "path with metacharacters", filter: domain.Filter{Path: "/a.b(c)[d]+*?"}},
		{name: "path with query string", filter: domain.Filter{Path: "/v1/orders?page=2"}},
		{name: "path prefix", filter: domain.Filter{PathPrefix: "/v1/orders"}},
		{name: "path prefix with metacharacters", filter: domain.Filter{PathPrefix: "/a.b(c)[d]+*?"}},
		{name: "path prefix dot is literal", filter: domain.Filter{PathPrefix: "/a.b"}},
		{name: "path prefix is case sensitive", filter: domain.Filter{PathPrefix: "/A.B"}},
		{name: "path prefix with LIKE wildcards", filter: domain.Filter{PathPrefix: "/100%_"}},
		{name: "path prefix with backslash and anchors", filter: domain.Filter{PathPrefix: `/x\y^$|{2}`}},
		{name: "path prefix that is a whole path", filter: domain.Filter{PathPrefix: "/v1/orders?page=2"}},
		{name: "path prefix root", filter: domain.Filter{PathPrefix: "/"}, matchesAll: true},
		{name: "status code", filter: domain.Filter{StatusMin: 404, StatusMax: 404}},
		{name: "status class 1xx", filter: domain.Filter{StatusMin: 100, StatusMax: 199}},
		{name: "status class 4xx", filter: domain.Filter{StatusMin: 400, StatusMax: 499}},
		{name: "status class 5xx", filter: domain.Filter{StatusMin: 500, StatusMax: 599}},
		{name: "from", filter: domain.Filter{From: from}},
		{name: "to", filter: domain.Filter{To: to}},
		{name: "from and to", filter: domain.Filter{From: from, To: to}},
		{name: "from and to one microsecond apart", filter: domain.Filter{From: from, To: from.Add(time.Microsecond)}},
		{name: "name and method", filter: domain.Filter{Name: "shop", Method: "GET"}},
		{name: "name, status class and time range", filter: domain.Filter{Name: "billing", StatusMin: 400, StatusMax: 499, From: from, To: to}},
		{name: "path prefix, IP and method", filter: domain.Filter{PathPrefix: "/v1/orders", IPAddress: "10.0.0.10", Method: "DELETE"}},
		{name: "every filter", filter: domain.Filter{
			Name: every.Name, Method: every.Method, IPAddress: every.IPAddress, Path: every.Path,
			PathPrefix: every.Path[:3], StatusMin: class, StatusMax: class + 99,
			From: every.CreatedAt, To: every.CreatedAt.Add(time.Microsecond),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := expectedPage(msgs, domain.Query{Scope: scopeLive, Filter: tc.filter}, f.now())
			if (len(want) == 0) != tc.matchesNone || (len(want) == len(all)) != tc.matchesAll {
				t.Fatalf("fixture error: %s selects %d of %d messages", describeFilter(tc.filter), len(want), len(all))
			}
			for _, limit := range []int{3, domain.MaxLimit} {
				got := listAll(t, s, scopeLive, tc.filter, limit, f.now())
				assertIDs(t, fmt.Sprintf("List with %s, pages of %d", describeFilter(tc.filter), limit), want, got)
			}
		})
	}
}

// paginationFixtures are 21 readable messages (a multiple of 7, so pages of 7 end
// exactly full), created in threes at the same microsecond so that ties straddle
// page boundaries, and behind and between them messages the store must skip.
func paginationFixtures(f fixtures) []domain.Message {
	var msgs []domain.Message
	for i := range 21 {
		msgs = append(msgs, f.message(scopeLive, f.ago(time.Hour).Add(-time.Duration(i/3)*time.Millisecond)))
	}
	oldest := msgs[len(msgs)-1].CreatedAt
	return append(msgs,
		f.message(scopeLive, oldest.Add(-time.Millisecond), func(m *domain.Message) { m.VisibleAt = f.now().Add(time.Second) }),
		f.message(scopeLive, msgs[4].CreatedAt, func(m *domain.Message) { m.VisibleAt = f.now().Add(time.Second) }),
		f.message(scopeTest, oldest.Add(-2*time.Millisecond)),
		f.message(scopeTest, msgs[10].CreatedAt),
	)
}

func testPagination(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := paginationFixtures(f)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs[:21])
	want := expectedPage(msgs, domain.Query{Scope: scopeLive}, f.now())
	if len(want) != 21 {
		t.Fatalf("fixture error: %d readable messages, want 21", len(want))
	}
	for _, limit := range []int{1, 2, 7, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			var pages []domain.Page
			q := domain.Query{Scope: scopeLive, Limit: limit}
			got, err := walk(t.Context(), s, q, f.now(), nil)
			if err != nil {
				t.Fatal(err)
			}
			assertIDs(t, fmt.Sprintf("all pages of %d", limit), want, got)
			// HasMore exactly: every page but the last is full and says so.
			for start := 0; start < len(want); start += limit {
				page, err := s.List(t.Context(), q, f.now())
				if err != nil {
					t.Fatalf("List at %d: %v", start, err)
				}
				end := min(start+limit, len(want))
				assertIDs(t, fmt.Sprintf("page starting at %d", start), want[start:end], page.Messages)
				if hasMore := end < len(want); page.HasMore != hasMore {
					t.Errorf("page of %d starting at %d (ending at %d of %d): HasMore = %v, want %v",
						limit, start, end, len(want), page.HasMore, hasMore)
				}
				pages = append(pages, page)
				if q.After = page.Next(); q.After == nil {
					break
				}
			}
			if wantPages := (len(want) + limit - 1) / limit; len(pages) != wantPages {
				t.Errorf("walk took %d pages, want %d", len(pages), wantPages)
			}
		})
	}
	t.Run("cursor between stored messages", func(t *testing.T) {
		// A cursor need not name a stored message: keyset pagination seeks to it.
		after := &domain.Cursor{CreatedAt: want[5].CreatedAt, ID: want[5].ID[:35] + "0"}
		q := domain.Query{Scope: scopeLive, Limit: domain.MaxLimit, After: after}
		got, err := walk(t.Context(), s, q, f.now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		assertIDs(t, fmt.Sprintf("pages after (%s, %s)", domain.FormatTime(after.CreatedAt), after.ID), expectedPage(msgs, q, f.now()), got)
	})
}

func testPaginationDuringAppends(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	before := paginationFixtures(f)[:21]
	before = append(before, f.series(scopeLive, 40, f.ago(2*time.Hour), 3*time.Millisecond)...)
	mustAppend(t, s, before)
	waitForStored(t, s, f.now(), before)
	newest, oldest := before[0].CreatedAt, before[len(before)-1].CreatedAt

	// Writers append around, between and tied with the walked messages while the
	// walk goes on; the walker waits for an append before each page as long as
	// any writer is still at work.
	const writers, batches, perBatch = 3, 10, 3
	plan := make([][][]domain.Message, writers)
	for w := range plan {
		for range batches {
			batch := make([]domain.Message, perBatch)
			for i := range batch {
				created := oldest.Add(-time.Millisecond + rand.N(newest.Sub(oldest)+2*time.Millisecond))
				if i == 0 {
					created = before[rand.N(len(before))].CreatedAt
				}
				batch[i] = f.message(scopeLive, created, func(m *domain.Message) { m.Name = fmt.Sprintf("writer-%d", w) })
			}
			plan[w] = append(plan[w], batch)
		}
	}
	stop, writersDone := make(chan struct{}), make(chan struct{})
	appended := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, batch := range plan[w] {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Append(t.Context(), batch); err != nil {
					t.Errorf("writer %d: Append: %v", w, err)
					return
				}
				select {
				case appended <- struct{}{}:
				default:
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(writersDone)
	}()
	waitForAppend := func() {
		select {
		case <-appended:
		case <-writersDone:
		}
	}
	got, err := walk(t.Context(), s, domain.Query{Scope: scopeLive, Limit: 4}, f.now(), waitForAppend)
	close(stop)
	<-writersDone
	if err != nil {
		t.Fatalf("walking while others append: %v", err)
	}
	// walk has checked that the pages run strictly newest first, so no message
	// came twice; each message stored before the walk must have come once.
	seen := map[string]bool{}
	for _, m := range got {
		seen[m.ID] = true
	}
	var missing []string
	for _, m := range before {
		if !seen[m.ID] {
			missing = append(missing, m.ID)
		}
	}
	t.Logf("the walk returned %d messages: %d stored before it, %d appended during it", len(got), len(before), len(got)-len(before)+len(missing))
	if len(missing) > 0 {
		t.Errorf("walking while others append missed %d of the %d messages stored before: %s", len(missing), len(before), abbreviate(missing))
	}
}

func testScopeIsolation(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	scopes := []domain.Scope{scopeLive, scopeTest, scopeOtherLive}
	var msgs []domain.Message
	for i, scope := range scopes {
		// The same names and paths in every scope, interleaved in time.
		msgs = append(msgs, f.series(scope, 4, f.ago(time.Hour).Add(time.Duration(i)*time.Microsecond), time.Millisecond)...)
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)

	for _, scope := range scopes {
		for _, filter := range []domain.Filter{{}, {Name: "shop"}, {PathPrefix: "/v1"}} {
			want := expectedPage(msgs, domain.Query{Scope: scope, Filter: filter}, f.now())
			assertMessages(t, fmt.Sprintf("List of %+v with %s", scope, describeFilter(filter)), want, listAll(t, s, scope, filter, domain.MaxLimit, f.now()))
		}
		for _, m := range msgs {
			if m.Scope() == scope {
				assertGet(t, s, m, f.now())
				continue
			}
			assertNotFound(t, s, scope, m.ID, f.now())
			assertNotFound(t, s, scope, m.Reference, f.now())
		}
	}
	for _, stranger := range []domain.Scope{
		{Account: "acm", Domain: domain.DomainLive},
		{Account: "ACME", Domain: domain.DomainLive},
		{Account: "acme", Domain: ""},
		{Account: "", Domain: domain.DomainLive},
	} {
		assertIDs(t, fmt.Sprintf("List of %+v", stranger), nil, listAll(t, s, stranger, domain.Filter{}, domain.MaxLimit, f.now()))
		assertNotFound(t, s, stranger, msgs[0].ID, f.now())
	}
}
