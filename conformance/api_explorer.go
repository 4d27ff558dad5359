package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// The explorer additions of the contract through HTTP: duration_ms, request.size
// and response.size, the q search, the duration bounds, statistics and export.

// apiDurationMS reads a message's duration_ms: the number, or false for null.
func apiDurationMS(t *testing.T, m map[string]any) (float64, bool) {
	t.Helper()
	v, present := m["duration_ms"]
	if !present {
		t.Fatalf("duration_ms is missing from %s", apiShow(m))
	}
	if v == nil {
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("duration_ms is %s, want a number or null", apiShow(v))
	}
	f, err := n.Float64()
	if err != nil {
		t.Fatalf("duration_ms %s: %v", n, err)
	}
	if i := strings.IndexByte(string(n), '.'); i >= 0 && len(n)-i-1 > 3 || strings.ContainsAny(string(n), "eE") {
		t.Errorf("duration_ms is written %s, want a plain number with at most 3 decimals", n)
	}
	return f, true
}

func apiTestDurationAndSizes(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	password := `{"user":"ada","password":"hunter2-Zq9"}`
	cases := []struct {
		name             string
		edits            map[string]any
		wantMS           float64
		wantHas          bool
		reqSize, resSize int
	}{
		{"no duration", nil, 0, false, 0, len(`{"ok":true}`)},
		{"null duration", map[string]any{"duration_ms": nil}, 0, false, 0, len(`{"ok":true}`)},
		{"zero", map[string]any{"duration_ms": 0}, 0, true, 0, len(`{"ok":true}`)},
		{"decimals", map[string]any{"duration_ms": 41.2}, 41.2, true, 0, len(`{"ok":true}`)},
		{"one microsecond", map[string]any{"duration_ms": apiRaw("0.001")}, 0.001, true, 0, len(`{"ok":true}`)},
		{"beyond microseconds dropped", map[string]any{"duration_ms": apiRaw("12.3456789")}, 12.345, true, 0, len(`{"ok":true}`)},
		{"the maximum", map[string]any{"duration_ms": 86400000}, 86400000, true, 0, len(`{"ok":true}`)},
		{"exponent", map[string]any{"duration_ms": apiRaw("1.5e2")}, 150, true, 0, len(`{"ok":true}`)},
		{"redacted body keeps its submitted size", map[string]any{"request.body": password, "duration_ms": 7},
			7, true, len(password), len(`{"ok":true}`)},
		{"sizes count UTF-8 bytes after unescaping", map[string]any{"request.body": apiRaw(`"caf\u00e9 \ud83d\ude80"`), "response.body": ""},
			0, false, len("café 🚀"), 0},
	}
	items := make([]any, len(cases))
	for i, c := range cases {
		items[i] = apiItem(at.Add(time.Duration(i)*time.Millisecond), c.edits)
	}
	ids := e.ingestBatch(t, apiAcmeLive, items, len(items))
	// The SDK envelope carries duration_ms too.
	envelope := map[string]any{"messages": []any{apiItem(at, map[string]any{"name": apiAbsent, "app": "sdk", "duration_ms": 3.5})}}
	sdk := e.ingestBatch(t, apiAcmeLive, envelope, 1)[0]
	listed := apiByID(e.reveal(t, apiAcmeLive, append(apiIDs(ids), sdk.ID)...))

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range []map[string]any{listed[ids[i].ID], e.fetch(t, apiAcmeLive, ids[i].Reference)} {
				ms, has := apiDurationMS(t, m)
				if has != c.wantHas || ms != c.wantMS {
					t.Errorf("duration_ms is %v (present %v), want %v (present %v): %s", ms, has, c.wantMS, c.wantHas, apiShow(m))
				}
				if got := apiInt(t, m, "request.size"); got != c.reqSize {
					t.Errorf("request.size is %d, want %d: %s", got, c.reqSize, apiShow(m))
				}
				if got := apiInt(t, m, "response.size"); got != c.resSize {
					t.Errorf("response.size is %d, want %d: %s", got, c.resSize, apiShow(m))
				}
			}
		})
	}
	redacted := listed[ids[8].ID]
	if body := apiMust[string](t, redacted, "request.body"); strings.Contains(body, "hunter2") {
		t.Errorf("the password was stored: %s", body)
	}
	if ms, has := apiDurationMS(t, listed[sdk.ID]); !has || ms != 3.5 {
		t.Errorf("the envelope item's duration_ms is %v (present %v), want 3.5", ms, has)
	}
}

// apiSearchSeed stores messages with distinctive texts, each a word of its own
// under UAX #29, and returns their ids by role.
func apiSearchSeed(t *testing.T, e *apiEnv) map[string]string {
	t.Helper()
	at := e.clock.Now().Add(-time.Minute)
	roles := []struct {
		role  string
		edits map[string]any
	}{
		{"body", map[string]any{"response.status_code": 500, "response.body": `{"order":"ord_8f7d","status":"failed"}`}},
		{"header", map[string]any{"request.header": map[string]any{"X-Order-Id": "ord_51c2", "Accept": "application/json"}}},
		{"path", map[string]any{"path": "/v1/invoices?ref=inv_77aa"}},
		{"masked", map[string]any{"request.header": map[string]any{"Authorization": "Bearer tok_9QxWv3"}}},
		{"redacted", map[string]any{"request.body": `{"email":"ada@example.com","password":"pw_h7Kq2z"}`}},
		{"header name", map[string]any{"request.header": map[string]any{"X-Zebracorn-Trace": "1"}}},
		{"plain", nil},
	}
	items := make([]any, len(roles))
	for i, r := range roles {
		items[i] = apiItem(at.Add(time.Duration(i)*time.Second), r.edits)
	}
	ids := apiIDs(e.ingestBatch(t, apiAcmeLive, items, len(items)))
	// The same order id in the other scopes: q never crosses them.
	for _, key := range []APIKey{apiAcmeTest, apiGlobexLive} {
		e.ingestOne(t, key, apiItem(at, map[string]any{"response.body": `{"order":"ord_8f7d"}`}))
	}
	e.reveal(t, apiAcmeLive, ids...)
	byRole := map[string]string{}
	for i, r := range roles {
		byRole[r.role] = ids[i]
	}
	return byRole
}

func apiTestSearch(t *testing.T, s apiSuite) {
	e := s.start(t)
	ids := apiSearchSeed(t, e)
	cases := []struct {
		q     string
		extra url.Values
		want  []string
	}{
		{"ord_8f7d", nil, []string{"body"}},
		{"ORD_8F7D", nil, []string{"body"}},
		{"ord_51c2", nil, []string{"header"}},
		{"inv_77aa", nil, []string{"path"}},
		{"ada@example.com", nil, []string{"redacted"}}, // an unredacted field of the same body
		{"tok_9QxWv3", nil, nil},                       // masked header value
		{"pw_h7Kq2z", nil, nil},                        // redacted field value
		{"X-Zebracorn-Trace", nil, nil},                // header name
		{"Zebracorn", nil, nil},
		{"ord_0000", nil, nil},
		{"ord_8f7d", url.Values{"status_code": {"2xx"}}, nil},
		{"ord_8f7d", url.Values{"status_code": {"500"}, "name": {"shop"}}, []string{"body"}},
	}
	for _, c := range cases {
		query := apiWith(c.extra, "q", c.q)
		t.Run(query.Encode(), func(t *testing.T) {
			var want []string
			for _, role := range c.want {
				want = append(want, ids[role])
			}
			got := apiListedIDs(e.listAll(t, apiAcmeLive, query))
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("q=%q lists %q, want %q (%v)", c.q, got, want, c.want)
			}
		})
	}
	// A search's pages walk like any other listing: one message a page, none
	// twice (listAll checks), the same messages as one page of all.
	everything := apiListedIDs(e.listAll(t, apiAcmeLive, url.Values{"q": {"json"}}))
	walked := apiListedIDs(e.listAll(t, apiAcmeLive, url.Values{"q": {"json"}, "limit": {"1"}}))
	if len(everything) != len(ids) || !slices.Equal(walked, everything) {
		t.Errorf("q=json lists %d messages at once and %q page by page; want all %d in the same order", len(everything), walked, len(ids))
	}
}

func apiTestDurationBounds(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	durations := []any{5, 10, 10.001, 20, apiAbsent}
	items := make([]any, len(durations))
	for i, d := range durations {
		items[i] = apiItem(at.Add(time.Duration(i)*time.Second), map[string]any{"duration_ms": d})
	}
	ids := apiIDs(e.ingestBatch(t, apiAcmeLive, items, len(items)))
	e.reveal(t, apiAcmeLive, ids...)
	cases := []struct {
		query string
		want  []int // indexes into durations
	}{
		{"min_duration_ms=10", []int{1, 2, 3}},
		{"max_duration_ms=10", []int{0, 1}},
		{"min_duration_ms=10&max_duration_ms=10", []int{1}},
		{"min_duration_ms=10.001&max_duration_ms=19.999", []int{2}},
		{"min_duration_ms=0", []int{0, 1, 2, 3}},
		{"max_duration_ms=86400000", []int{0, 1, 2, 3}},
		{"min_duration_ms=20.5", nil},
		{"min_duration_ms=5&status_code=4xx", nil},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			query, err := url.ParseQuery(c.query)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, i := range c.want {
				want = append(want, ids[i])
			}
			got := apiListedIDs(e.listAll(t, apiAcmeLive, query))
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s lists %q, want %q", c.query, got, want)
			}
		})
	}
}

// portalToken opens a portal session on application name with key and returns
// its token.
func (e *apiEnv) portalToken(t *testing.T, key APIKey, name string) APIKey {
	t.Helper()
	body := apiBody(t, map[string]any{"name": name})
	r := e.do(t, http.MethodPost, "/v1/portal/sessions", body, append(apiBearer(key), "Content-Type", apiJSON)...)
	r.wantOK(t, "", "data")
	token := apiMust[string](t, r.body, "data.token")
	return APIKey{Account: key.Account, Domain: key.Domain, Key: token}
}

// The explorer's reads are scoped like fetch: by account, by domain, and by
// application for a portal session.
func apiTestExplorerScoping(t *testing.T, s apiSuite) {
	e := s.start(t)
	at := e.clock.Now().Add(-time.Minute)
	order := `{"order":"ord_c0ffee"}`
	mine := apiIDs(e.ingestBatch(t, apiAcmeLive, []any{
		apiItem(at, map[string]any{"name": "shop", "response.body": order, "duration_ms": 10}),
		apiItem(at.Add(time.Second), map[string]any{"name": "shop", "response.body": order, "duration_ms": 30}),
		apiItem(at.Add(2*time.Second), map[string]any{"name": "billing", "response.body": order, "duration_ms": 20}),
	}, 3))
	others := map[APIKey]string{}
	for _, key := range []APIKey{apiAcmeTest, apiGlobexLive} {
		others[key] = e.ingestOne(t, key, apiItem(at, map[string]any{"name": "shop", "response.body": order, "duration_ms": 10})).ID
	}
	e.clock.Advance(e.cfg.Policy.VisibilityDelay)
	e.awaitListed(t, apiAcmeLive, mine...)
	for key, id := range others {
		e.awaitListed(t, key, id)
	}
	shop := e.portalToken(t, apiAcmeLive, "shop")
	search := url.Values{"q": {"ord_c0ffee"}, "min_duration_ms": {"0"}}

	cases := []struct {
		who   string
		key   APIKey
		query url.Values
		want  []string
	}{
		{"acme live", apiAcmeLive, search, mine},
		{"acme test", apiAcmeTest, search, []string{others[apiAcmeTest]}},
		{"globex live", apiGlobexLive, search, []string{others[apiGlobexLive]}},
		{"portal session of shop", shop, search, mine[:2]},
		{"portal session of shop asking for billing", shop, apiWith(search, "name", "billing"), nil},
		{"portal session of shop asking for shop", shop, apiWith(search, "name", "shop"), mine[:2]},
	}
	for _, c := range cases {
		t.Run(c.who, func(t *testing.T) {
			want := slices.Clone(c.want)
			slices.Sort(want)
			got := apiListedIDs(e.listAll(t, c.key, c.query))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("fetch lists %q, want %q", got, want)
			}
			exported := apiListedIDs(e.exportNDJSON(t, c.key, c.query))
			slices.Sort(exported)
			if !slices.Equal(exported, want) {
				t.Errorf("export holds %q, want %q", exported, want)
			}
			stats := e.stats(t, c.key, apiWith(c.query, "interval", "1h"))
			if total := apiInt(t, stats, "total.count"); total != len(want) {
				t.Errorf("statistics count %d, want %d: %s", total, len(want), apiShow(stats))
			}
			var names []string
			for _, kc := range apiMust[[]any](t, stats, "top_names") {
				names = append(names, kc.(map[string]any)["name"].(string))
			}
			if c.key == shop && len(names) > 0 && !slices.Equal(names, []string{"shop"}) {
				t.Errorf("a portal session of shop sees applications %q", names)
			}
		})
	}
}

// apiExplorerBadQueries are bad values of every new parameter, each a 400
// naming the parameter, on every route that takes it.
func apiExplorerBadQueries(now time.Time) []struct{ target, field string } {
	long := strings.Repeat("a", 201)
	longRunes := strings.Repeat("é", 201)
	var out []struct{ target, field string }
	add := func(target, field string) { out = append(out, struct{ target, field string }{target, field}) }
	for _, route := range []string{"/v1/messages", "/v1/stats", "/v1/messages/export"} {
		for _, c := range []struct{ query, field string }{
			{"q=", "q"},
			{"q=%20%20", "q"},
			{"q=" + long, "q"},
			{"q=" + url.QueryEscape(longRunes), "q"},
			{"q=%21%3F%2A", "q"}, // no letter or digit
			{"q=%FF", "q"},
			{"q=a&q=b", "q"},
			{"min_duration_ms=", "min_duration_ms"},
			{"min_duration_ms=abc", "min_duration_ms"},
			{"min_duration_ms=-1", "min_duration_ms"},
			{"min_duration_ms=86400000.5", "min_duration_ms"},
			{"min_duration_ms=1e400", "min_duration_ms"},
			{"min_duration_ms=NaN", "min_duration_ms"},
			{"min_duration_ms=18446744073709.552", "min_duration_ms"}, // wraps around in int64 nanoseconds
			{"max_duration_ms=86400000.0000001", "max_duration_ms"},
			{"max_duration_ms=", "max_duration_ms"},
			{"max_duration_ms=ten", "max_duration_ms"},
			{"max_duration_ms=-0.001", "max_duration_ms"},
			{"max_duration_ms=99999999999999999999", "max_duration_ms"},
			{"min_duration_ms=5&max_duration_ms=4.999", "max_duration_ms"},
		} {
			add(route+"?"+c.query, c.field)
		}
	}
	twoDaysAgo := fmt.Sprint(now.Add(-48 * time.Hour).Unix())
	for _, c := range []struct{ query, field string }{
		{"interval=", "interval"},
		{"interval=2m", "interval"},
		{"interval=1H", "interval"},
		{"interval=60", "interval"},
		{"interval=1m&interval=1h", "interval"},
		{"interval=1m&from=" + twoDaysAgo, "interval"}, // 2,880 buckets
		{"from=yesterday", "from"},
		{"to=soon", "to"},
		{"from=" + fmt.Sprint(now.Add(time.Hour).Unix()), "from"}, // after the default to, now
	} {
		add("/v1/stats?"+c.query, c.field)
	}
	for _, c := range []struct{ query, field string }{
		{"format=", "format"},
		{"format=xml", "format"},
		{"format=json", "format"},
		{"format=csv&format=ndjson", "format"},
		{"limit=", "limit"},
		{"limit=0", "limit"},
		{"limit=100001", "limit"},
		{"limit=-5", "limit"},
		{"limit=1.5", "limit"},
		{"limit=many", "limit"},
	} {
		add("/v1/messages/export?"+c.query, c.field)
	}
	return out
}

func apiTestExplorerBadInput(t *testing.T, s apiSuite) {
	e := s.start(t)
	for _, c := range apiExplorerBadQueries(e.clock.Now()) {
		t.Run(c.target[:min(len(c.target), 80)], func(t *testing.T) {
			e.get(t, apiAcmeLive, c.target).wantError(t, http.StatusBadRequest, c.field)
		})
	}
	at := e.clock.Now().Add(-time.Minute)
	for _, c := range []struct {
		name  string
		body  any
		field string
	}{
		{"duration_ms as a string", apiItem(at, map[string]any{"duration_ms": "12"}), "duration_ms"},
		{"duration_ms negative", apiItem(at, map[string]any{"duration_ms": -1}), "duration_ms"},
		{"duration_ms beyond a day", apiItem(at, map[string]any{"duration_ms": 86400000.001}), "duration_ms"},
		{"duration_ms true", apiItem(at, map[string]any{"duration_ms": true}), "duration_ms"},
		{"duration_ms an object", apiItem(at, map[string]any{"duration_ms": map[string]any{"ms": 1}}), "duration_ms"},
		{"duration_ms 1e400", apiItem(at, map[string]any{"duration_ms": apiRaw("1e400")}), "duration_ms"},
		{"duration_ms just over a day", apiItem(at, map[string]any{"duration_ms": apiRaw("86400000.0000001")}), "duration_ms"},
		{"duration_ms wrapping in nanoseconds", apiItem(at, map[string]any{"duration_ms": apiRaw("18446744073709.552")}), "duration_ms"},
		{"duration_ms in a batch", []any{apiItem(at, nil), apiItem(at, map[string]any{"duration_ms": "fast"})}, "[1].duration_ms"},
		{"duration_ms in an envelope", map[string]any{"messages": []any{apiItem(at, map[string]any{"duration_ms": -3})}}, "[0].duration_ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.post(t, apiAcmeLive, c.body).wantError(t, http.StatusBadRequest, c.field)
		})
	}
	// 1,441 buckets of a minute over the default 24 hours are allowed (at most 1,500).
	if n := len(apiMust[[]any](t, e.stats(t, apiAcmeLive, url.Values{"interval": {"1m"}}), "buckets")); n != 24*60+1 {
		t.Errorf("interval=1m over the default range gives %d buckets, want %d", n, 24*60+1)
	}
	// Ranges far from now are counted right, never a server error.
	for _, rng := range [][2]string{{"1", "86400"}, {"2500-01-01T00:30:00Z", "2500-01-02T00:00:00Z"},
		{"9999-12-30T00:00:00Z", "9999-12-31T00:00:00Z"}} {
		stats := e.stats(t, apiAcmeLive, url.Values{"from": {rng[0]}, "to": {rng[1]}, "interval": {"1h"}})
		if n := len(apiMust[[]any](t, stats, "buckets")); n != 24 || apiInt(t, stats, "total.count") != 0 {
			t.Errorf("from %s to %s by 1h: %d buckets, %d messages; want 24 empty ones", rng[0], rng[1], n, apiInt(t, stats, "total.count"))
		}
	}
	// Nothing was stored, and the service still answers every route.
	e.wantStoredExactly(t, apiAcmeLive)
	e.stats(t, apiAcmeLive, nil)
	e.exportNDJSON(t, apiAcmeLive, nil)
}

// The new routes: /v1/messages/export is not taken for a message id, and
// methods and keys are handled as on the other read routes.
func apiTestExplorerRoutes(t *testing.T, s apiSuite) {
	e := s.start(t)
	for _, target := range []string{"/v1/stats", "/v1/messages/export"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			r := e.do(t, method, target, nil, apiBearer(apiAcmeLive)...)
			r.wantError(t, http.StatusMethodNotAllowed)
			allow := strings.Split(strings.ReplaceAll(r.header.Get("Allow"), " ", ""), ",")
			if !slices.Contains(allow, http.MethodGet) || slices.Contains(allow, method) {
				t.Errorf("%s %s: Allow %q, want GET and not %s", method, target, r.header.Get("Allow"), method)
			}
		}
		e.do(t, http.MethodGet, target, nil).wantError(t, http.StatusUnauthorized)
		e.do(t, http.MethodGet, target, nil, "Authorization", "Bearer rk_unknown").wantError(t, http.StatusUnauthorized)
		get := e.get(t, apiAcmeLive, target)
		head := e.do(t, http.MethodHead, target, nil, apiBearer(apiAcmeLive)...)
		if get.status != http.StatusOK || head.status != http.StatusOK || len(head.raw) != 0 ||
			head.header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q with %d bytes; GET: %d %q", target, head.status, head.header.Get("Content-Type"),
				len(head.raw), get.status, get.header.Get("Content-Type"))
		}
	}
}

// Statistics, search and export never count an expired message, while the
// statistics' range and buckets stay those asked for.
func apiTestExplorerRetention(t *testing.T, s apiSuite) {
	e := s.start(t)
	retention := e.cfg.Policy.Retention
	oldAt, _, fresh := e.oldAndFresh(t)

	e.clock.Set(oldAt.Add(retention).Add(time.Microsecond))
	e.awaitListed(t, apiAcmeLive, fresh.ID)
	from := oldAt.Add(-24 * time.Hour).UTC().Truncate(24 * time.Hour)
	query := url.Values{"from": {apiRFC3339(from)}, "interval": {"1d"}, "q": {"ord_0ld7"}}
	stats := e.stats(t, apiAcmeLive, query)
	if got := apiInt(t, stats, "total.count"); got != 1 {
		t.Errorf("statistics count %d messages, want 1: the other expired at %s", got, oldAt.Add(retention))
	}
	if stats["from"] != apiWire(from) || apiMust[string](t, stats, "buckets.0.start") != apiWire(from) {
		t.Errorf("statistics from %v, first bucket %v; want both %s, the range asked for", stats["from"], apiMust[string](t, stats, "buckets.0.start"), apiWire(from))
	}
	if got := apiListedIDs(e.listAll(t, apiAcmeLive, url.Values{"q": {"ord_0ld7"}})); !slices.Equal(got, []string{fresh.ID}) {
		t.Errorf("q lists %q, want only %s", got, fresh.ID)
	}
	if got := apiListedIDs(e.exportNDJSON(t, apiAcmeLive, nil)); !slices.Equal(got, []string{fresh.ID}) {
		t.Errorf("the export holds %q, want only %s", got, fresh.ID)
	}
}

// oldAndFresh ingests two messages of order ord_0ld7, one created an hour
// within retention, the other a minute ago, and reveals both.
func (e *apiEnv) oldAndFresh(t *testing.T) (oldAt time.Time, old, fresh apiIdentity) {
	t.Helper()
	now := e.clock.Now()
	oldAt = domain.Micro(now.Add(-e.cfg.Policy.Retention + time.Hour))
	edits := map[string]any{"response.body": `{"order":"ord_0ld7"}`, "duration_ms": 5}
	old = e.ingestOne(t, apiAcmeLive, apiItem(oldAt, edits))
	fresh = e.ingestOne(t, apiAcmeLive, apiItem(now.Add(-time.Minute), edits))
	e.reveal(t, apiAcmeLive, old.ID, fresh.ID)
	return oldAt, old, fresh
}
