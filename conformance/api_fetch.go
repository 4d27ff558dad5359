package conformance

import (
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"
)

func apiTestListEmpty(t *testing.T, s apiSuite) {
	e := s.start(t)
	r := e.get(t, apiAcmeLive, "/v1/messages")
	r.wantOK(t, apiFetchedText, "messages", "pagination")
	if got := apiMust[[]any](t, r.body, "messages"); len(got) != 0 {
		t.Fatalf("a fresh store lists %d messages: %s", len(got), r)
	}
	if limit := apiInt(t, r.body, "pagination.limit"); limit != 20 {
		t.Errorf("pagination.limit is %d, want the default 20: %s", limit, r)
	}
	if hasMore, _ := apiAt(r.body, "pagination.has_more"); hasMore != false {
		t.Errorf("pagination.has_more is %v on an empty listing: %s", hasMore, r)
	}

	// A filter that matches nothing, once something else is listed, is [] too.
	stored := e.ingestOne(t, apiAcmeLive, apiItem(e.clock.Now().Add(-time.Minute), nil))
	e.reveal(t, apiAcmeLive, stored.ID)
	if got, _ := e.list(t, apiAcmeLive, url.Values{"name": {"nobody"}}); len(got) != 0 {
		t.Errorf("name=nobody lists %s", apiShow(got))
	}
}

// apiSeedOrdered submits count messages whose created_at repeat in groups of
// ties (several batches, so ids of a tie come from different requests) and
// returns their ids in the contract's order.
func apiSeedOrdered(t *testing.T, e *apiEnv, count, ties int) []string {
	t.Helper()
	base := e.clock.Now().Add(-time.Hour).Truncate(time.Second)
	const perBatch = 15
	var entries []apiEntry
	for first := 0; first < count; first += perBatch {
		var batch []any
		var ats []time.Time
		for i := first; i < min(first+perBatch, count); i++ {
			// Interleave so each tie group spans batches.
			at := base.Add(time.Duration((i*7)%count/ties) * time.Second)
			ats = append(ats, at)
			batch = append(batch, apiItem(at, map[string]any{"name": "n" + strconv.Itoa(i)}))
		}
		for i, identity := range e.ingestBatch(t, apiAcmeLive, batch, len(batch)) {
			entries = append(entries, apiEntry{id: identity.ID, at: ats[i]})
		}
	}
	order := apiNewestFirst(entries)
	e.reveal(t, apiAcmeLive, order...)
	return order
}

func apiTestListOrder(t *testing.T, s apiSuite) {
	e := s.start(t)
	want := apiSeedOrdered(t, e, 30, 4)
	if got := apiListedIDs(e.listAll(t, apiAcmeLive, nil)); !slices.Equal(got, want) {
		t.Errorf("listing order:\n got %q\nwant %q (newest created_at first, ties by id descending)", got, want)
	}
}

func apiTestListLimit(t *testing.T, s apiSuite) {
	e := s.start(t)
	want := apiSeedOrdered(t, e, 101, 1)
	cases := []struct {
		query       url.Values
		limit       int
		wantHasMore bool
	}{
		{nil, 20, true},
		{url.Values{"limit": {"1"}}, 1, true},
		{url.Values{"limit": {"20"}}, 20, true},
		{url.Values{"limit": {"100"}}, 100, true},
	}
	for _, c := range cases {
		page, pagination := e.list(t, apiAcmeLive, c.query)
		if got := apiListedIDs(page); !slices.Equal(got, want[:c.limit]) {
			t.Errorf("?%s lists %d messages %q, want the newest %d", c.query.Encode(), len(got), got, c.limit)
		}
		if got := apiInt(t, pagination, "limit"); got != c.limit {
			t.Errorf("?%s: pagination.limit is %d, want %d", c.query.Encode(), got, c.limit)
		}
		if pagination["has_more"] != c.wantHasMore {
			t.Errorf("?%s: pagination.has_more is %v", c.query.Encode(), pagination["has_more"])
		}
	}

	_, first := e.list(t, apiAcmeLive, url.Values{"limit": {"100"}})
	last, pagination := e.list(t, apiAcmeLive, url.Values{"limit": {"100"}, "cursor": {first["next_cursor"].(string)}})
	if got := apiListedIDs(last); !slices.Equal(got, want[100:]) {
		t.Errorf("the page after the first 100 is %q, want %q", got, want[100:])
	}
	if next, present := pagination["next_cursor"]; pagination["has_more"] != false || !present || next != nil {
		t.Errorf("last page pagination is %s, want has_more false and next_cursor null", apiShow(pagination))
	}
}

func apiTestListCursorWalk(t *testing.T, s apiSuite) {
	e := s.start(t)
	want := apiSeedOrdered(t, e, 45, 3)
	const limit = 7
	query := url.Values{"limit": {strconv.Itoa(limit)}}
	var got []string
	var cursorAt time.Time
	for pages := 1; ; pages++ {
		page, pagination := e.list(t, apiAcmeLive, query)
		got = append(got, apiListedIDs(page)...)
		next, _ := pagination["next_cursor"].(string)
		if next == "" {
			if len(page) != len(want)%limit {
				t.Errorf("the last page has %d messages, want %d", len(page), len(want)%limit)
			}
			break
		}
		if len(page) != limit {
			t.Errorf("page %d has %d messages with more to come, want %d", pages, len(page), limit)
		}
		query.Set("cursor", next)
		if pages == 2 {
			// Inserts during the walk: newer messages, and one tied with the
			// cursor's position whose newer id sorts before it. Neither belongs
			// to the rest of the walk.
			cursorAt, _ = time.Parse(time.RFC3339Nano, page[len(page)-1]["created_at"].(string))
			newer := e.ingestBatch(t, apiAcmeLive, []any{
				apiItem(e.clock.Now().Add(-time.Second), nil),
				apiItem(e.clock.Now().Add(-time.Second), nil),
				apiItem(cursorAt, nil),
			}, 3)
			e.reveal(t, apiAcmeLive, apiIDs(newer)...)
		}
		if pages > len(want) {
			t.Fatalf("the walk does not end: %d pages", pages)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("walking pages of %d (with inserts after page 2 at %s) gave\n %q\nwant\n %q", limit, cursorAt, got, want)
	}
}

func apiTestListFilters(t *testing.T, s apiSuite) {
	e := s.start(t)
	base := e.clock.Now().Add(-time.Hour).Truncate(time.Second)
	minute := func(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }
	seeds := []struct {
		label, name, method, ip string
		status                  int
		path                    string
		at                      time.Time
	}{
		{"m1", "shop", "GET", "203.0.113.7", 200, "/api/orders", minute(1)},
		{"m2", "shop", "POST", "2001:db8::1", 201, "/api/orders", minute(2)},
		{"m3", "shop", "GET", "203.0.113.7", 404, "/api/orders/42", minute(3)},
		{"m4", "admin", "DELETE", "198.51.100.1", 404, "/admin/users?id=1", minute(4)},
		{"m5", "admin", "GET", "2001:db8::1", 500, "/api", minute(5)},
		{"m6", "shop", "PATCH", "", 422, "/api/orders/42", minute(6)},
		{"m7", "admin", "POST", "203.0.113.7", 302, "/apix", minute(7)},
		{"m8", "shop", "HEAD", "192.0.2.1", 204, "/health", minute(5).Add(-time.Microsecond)},
	}
	var batch []any
	for _, seed := range seeds {
		batch = append(batch, apiItem(seed.at, map[string]any{
			"name": seed.name, "method": seed.method, "ip_address": seed.ip, "path": seed.path,
			"response.status_code": seed.status, "request.body": seed.label,
		}))
	}
	e.reveal(t, apiAcmeLive, apiIDs(e.ingestBatch(t, apiAcmeLive, batch, len(batch)))...)

	unix := func(at time.Time) string { return strconv.FormatInt(at.Unix(), 10) }
	m3, m4, m5 := minute(3), minute(4), minute(5)
	cases := []struct {
		query url.Values
		want  []string
	}{
		{url.Values{}, []string{"m7", "m6", "m5", "m8", "m4", "m3", "m2", "m1"}},
		{url.Values{"name": {"shop"}}, []string{"m6", "m8", "m3", "m2", "m1"}},
		{url.Values{"name": {"admin"}}, []string{"m7", "m5", "m4"}},
		{url.Values{"name": {"nobody"}}, nil},
		{url.Values{"method": {"POST"}}, []string{"m7", "m2"}},
		{url.Values{"ip_address": {"203.0.113.7"}}, []string{"m7", "m3", "m1"}},
		{url.Values{"ip_address": {"2001:db8::1"}}, []string{"m5", "m2"}},
		{url.Values{"status_code": {"404"}}, []string{"m4", "m3"}},
		{url.Values{"status_code": {"418"}}, nil},
		{url.Values{"status_code": {"4xx"}}, []string{"m6", "m4", "m3"}},
		{url.Values{"status_code": {"2xx"}}, []string{"m8", "m2", "m1"}},
		{url.Values{"status_code": {"5xx"}}, []string{"m5"}},
		{url.Values{"path": {"/api/orders"}}, []string{"m2", "m1"}},
		{url.Values{"path": {"/admin/users?id=1"}}, []string{"m4"}},
		{url.Values{"path_prefix": {"/api/"}}, []string{"m6", "m3", "m2", "m1"}},
		{url.Values{"path_prefix": {"/api"}}, []string{"m7", "m6", "m5", "m3", "m2", "m1"}},
		{url.Values{"from": {apiRFC3339(m3)}}, []string{"m7", "m6", "m5", "m8", "m4", "m3"}},
		{url.Values{"from": {apiRFC3339(m3.Add(time.Microsecond))}}, []string{"m7", "m6", "m5", "m8", "m4"}},
		{url.Values{"from": {m4.In(time.FixedZone("+02:00", 7200)).Format(time.RFC3339)}}, []string{"m7", "m6", "m5", "m8", "m4"}},
		{url.Values{"to": {apiRFC3339(m5)}}, []string{"m8", "m4", "m3", "m2", "m1"}},
		{url.Values{"from": {unix(m3)}, "to": {unix(m5)}}, []string{"m8", "m4", "m3"}},
		{url.Values{"name": {"shop"}, "status_code": {"4xx"}}, []string{"m6", "m3"}},
		{url.Values{"name": {"admin"}, "method": {"POST"}, "path_prefix": {"/ap"}}, []string{"m7"}},
		{url.Values{"name": {"shop"}, "from": {unix(m3)}, "to": {unix(m5)}}, []string{"m8", "m3"}},
		{url.Values{"method": {"GET"}, "ip_address": {"203.0.113.7"}, "status_code": {"2xx"}}, []string{"m1"}},
		{url.Values{"path": {"/api/orders/42"}, "status_code": {"4xx"}, "to": {apiRFC3339(m5)}}, []string{"m3"}},
	}
	for _, c := range cases {
		// Once in one page, once walking pages of 2: filters hold across cursors.
		for _, limit := range []string{"100", "2"} {
			query := apiWith(c.query, "limit", limit)
			var got []string
			for _, m := range e.listAll(t, apiAcmeLive, query) {
				got = append(got, m["request"].(map[string]any)["body"].(string))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("?%s lists %q, want %q", query.Encode(), got, c.want)
			}
		}
	}
}
