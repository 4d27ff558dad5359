package conformance

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// The explorer additions of the contract (CONTRACT.md, "Explorer additions") at
// the store: durations and sizes, the q search, the duration bounds and the
// statistics. Each MUST is stated with examples on both sides; the cases the
// contract leaves open (a substring inside a word, words split differently) are
// not tested.

// millis is a duration of v milliseconds, as duration_ms holds it (microseconds).
func millis(v float64) time.Duration {
	return time.Duration(math.Round(v*1000)) * time.Microsecond
}

// withDuration sets a message's duration to v milliseconds.
func withDuration(v float64) func(*domain.Message) {
	return func(m *domain.Message) { m.Duration, m.HasDuration = millis(v), true }
}

func testDurationAndSizes(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	msgs := f.series(scopeLive, 6, f.ago(time.Hour), time.Second)
	withDuration(12.345)(&msgs[0])
	msgs[0].Request.Body, msgs[0].Request.Size = `{"a":"é"}`, len(`{"a":"é"}`)
	msgs[0].Response.Size = len(msgs[0].Response.Body)
	// msgs[1] has no duration: HasDuration false, Duration zero.
	withDuration(0)(&msgs[2]) // a zero duration is not an absent one
	withDuration(0.001)(&msgs[3])
	msgs[4].Duration, msgs[4].HasDuration = domain.MaxDuration, true
	// Sizes count the body as submitted, before redaction: the stored body may
	// be shorter or longer, and the store keeps the size it is given.
	msgs[4].Request.Body, msgs[4].Request.Size = `{"password":"`+domain.Mask+`"}`, 5<<20
	msgs[4].Response.Body, msgs[4].Response.Size = "", 0
	withDuration(86399999.999)(&msgs[5])
	msgs[5].Response.Body, msgs[5].Response.Size = "short", 1
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)
	assertHolds(t, s, "after Append", f.now(), msgs)
}

// searchFixtures are messages each holding one searched text somewhere the
// contract names, plus texts that must not be found, keyed by label.
func searchFixtures(f fixtures) (map[string]domain.Message, []domain.Message) {
	// A body of about 100 KiB with a word ending 100 bytes before its 64 KiB,
	// spaces around it so that it is a word of its own.
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 4000)
	word := " zebra_quokka_7 "
	large := filler[:domain.SearchedBodyBytes-100-len(word)+1] + word + filler[:100*1024-domain.SearchedBodyBytes+100]
	labelled := map[string]func(*domain.Message){
		"json":       func(m *domain.Message) { m.Response.Body = `{"order":"ord_8f7d","status":"paid"}` },
		"path":       func(m *domain.Message) { m.Path = "/v1/orders?ref=inv_20931&page=2" },
		"reqHeader":  func(m *domain.Message) { m.Request.Header["X-Tenant"] = []string{"eu-west", "blue-heron-17"} },
		"respHeader": func(m *domain.Message) { m.Response.Header["X-Cache-Key"] = []string{"sunny-otter-42; max-age=60"} },
		"reqBody":    func(m *domain.Message) { m.Request.Body = `{"customer":"cus_Q81xv","amount":1250}` },
		"phrase": func(m *domain.Message) {
			m.StatusCode = 402
			m.Response.Body = `{"error":"Payment declined: card expired"}`
		},
		"email": func(m *domain.Message) { m.Request.Body = `{"email":"ada@example.com","plan":"pro"}` },
		"large": func(m *domain.Message) {
			m.Response.Body, m.Response.ContentType = large, "text/plain"
			m.Response.Header["Content-Type"] = []string{"text/plain"}
		},
		// Precomposed é (U+00E9): "cafe" is then no substring of "café".
		"nonASCII":   func(m *domain.Message) { m.Request.Body = "{\"city\":\"Zürich\",\"order\":\"caf\u00e9 au lait\"}" },
		"headerName": func(m *domain.Message) { m.Request.Header["X-Marigold-Flag"] = []string{"on"} },
		"billing": func(m *domain.Message) {
			m.Name = "billing"
			m.Response.Body = `{"order":"ord_8f7d"}`
		},
	}
	named := map[string]domain.Message{}
	i := 0
	for _, label := range slices.Sorted(maps.Keys(labelled)) {
		named[label] = f.message(scopeLive, f.ago(time.Hour).Add(-time.Duration(i)*time.Millisecond), labelled[label])
		i++
	}
	// The same order in other scopes, and plain messages around everything.
	others := []domain.Message{
		f.message(scopeTest, f.ago(time.Hour), labelled["json"]),
		f.message(scopeOtherLive, f.ago(time.Hour), labelled["json"]),
	}
	others = append(others, f.series(scopeLive, 5, f.ago(50*time.Minute), time.Second)...)
	return named, others
}

// valuesOf are m's messages in the order of their keys.
func valuesOf(m map[string]domain.Message) []domain.Message {
	var out []domain.Message
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

func testSearch(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	named, others := searchFixtures(f)
	msgs := slices.Concat(valuesOf(named), others)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)

	cases := []struct {
		name string
		q    string
		app  string // the Name filter, if any
		want []string
	}{
		// MUST match.
		{name: "word in a JSON response body", q: "ord_8f7d", want: []string{"json", "billing"}},
		{name: "in another case", q: "ORD_8F7D", want: []string{"json", "billing"}},
		{name: "in the path's query string", q: "inv_20931", want: []string{"path"}},
		{name: "in a request header value", q: "blue-heron-17", want: []string{"reqHeader"}},
		{name: "in a response header value", q: "sunny-otter-42", want: []string{"respHeader"}},
		{name: "in a request body", q: "CUS_q81XV", want: []string{"reqBody"}},
		{name: "a phrase", q: "payment declined", want: []string{"phrase"}},
		{name: "a phrase with its punctuation", q: "Payment declined: card", want: []string{"phrase"}},
		{name: "an email address", q: "ada@example.com", want: []string{"email"}},
		{name: "a word within the first 64 KiB of a 100 KiB body", q: "zebra_quokka_7", want: []string{"large"}},
		{name: "a non-ASCII word", q: "Zürich", want: []string{"nonASCII"}},
		{name: "a non-ASCII word in another case", q: "ZÜRICH", want: []string{"nonASCII"}},
		{name: "a word ending in a non-ASCII letter", q: "caf\u00e9", want: []string{"nonASCII"}},
		{name: "with the name filter", q: "ord_8f7d", app: "shop", want: []string{"json"}},
		{name: "with the name filter of the other application", q: "ord_8f7d", app: "billing", want: []string{"billing"}},
		// MUST NOT match.
		{name: "a word present nowhere", q: "nowhere7q"},
		{name: "a header name", q: "marigold"},
		{name: "a whole header name", q: "X-Marigold-Flag"},
		{name: "words present in another order", q: "declined payment"},
		{name: "words present but not consecutive", q: "payment card"},
		{name: "a word differing by an accent", q: "cafe"},
		{name: "with the name filter of an application without it", q: "ord_8f7d", app: "nobody"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			filter := domain.Filter{Text: tc.q, Name: tc.app}
			var want []domain.Message
			for _, label := range tc.want {
				want = append(want, named[label])
			}
			sortNewestFirst(want)
			if ref := expectedPage(msgs, domain.Query{Scope: scopeLive, Filter: filter}, f.now()); !slices.Equal(idsOf(ref), idsOf(want)) {
				t.Fatalf("fixture error: domain.Search finds %d messages for %s, the case says %d", len(ref), describeFilter(filter), len(want))
			}
			for _, limit := range []int{1, domain.MaxLimit} {
				got := listAll(t, s, scopeLive, filter, limit, f.now())
				assertIDs(t, fmt.Sprintf("List with %s, pages of %d", describeFilter(filter), limit), want, got)
			}
		})
	}
	t.Run("only the listed scope", func(t *testing.T) {
		for _, m := range others[:2] {
			got := listAll(t, s, m.Scope(), domain.Filter{Text: "ord_8f7d"}, domain.MaxLimit, f.now())
			assertIDs(t, fmt.Sprintf("List of %+v with q=ord_8f7d", m.Scope()), []domain.Message{m}, got)
		}
		stranger := domain.Scope{Account: "acm", Domain: domain.DomainLive}
		assertIDs(t, fmt.Sprintf("List of %+v with q=ord_8f7d", stranger), nil,
			listAll(t, s, stranger, domain.Filter{Text: "ord_8f7d"}, domain.MaxLimit, f.now()))
	})
}

// q combines with every other filter, and ordering and paging are unchanged:
// ties straddle page boundaries and hidden messages lie between the matches.
func testSearchWithFiltersAndPaging(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	methods := []string{"GET", "POST", "DELETE"}
	statuses := []int{200, 404, 500, 201, 302}
	var msgs []domain.Message
	for i := range 60 {
		created := f.ago(time.Hour).Add(-time.Duration(i/3) * time.Millisecond) // threes tie
		msgs = append(msgs, f.message(scopeLive, created, func(m *domain.Message) {
			m.Method = methods[i%len(methods)]
			m.StatusCode = statuses[i%len(statuses)]
			m.Path = fmt.Sprintf("/v1/orders/%d", i%7)
			if i%5 != 0 {
				withDuration(float64(i) * 10.5)(m)
			}
			if i%2 == 0 {
				m.Response.Body = fmt.Sprintf(`{"order":"ord_8f7d","line":%d}`, i)
			} else {
				m.Response.Body = fmt.Sprintf(`{"order":"ord_1a2b","line":%d}`, i)
			}
		}))
	}
	for i, m := range slices.Clone(msgs[:9]) { // matching, never returned
		hidden := m.Clone()
		hidden.ID, hidden.Reference = f.identity().ID, f.identity().Reference
		switch i % 3 {
		case 0:
			hidden.VisibleAt = f.now().Add(time.Microsecond)
		case 1:
			hidden.Account, hidden.Domain = scopeTest.Account, scopeTest.Domain
		case 2:
			hidden.Name = "billing"
		}
		msgs = append(msgs, hidden)
	}
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), readableOnly(msgs, f.now()))

	lo, hi := millis(100), millis(400.5)
	from, to := msgs[40].CreatedAt, msgs[10].CreatedAt
	for _, filter := range []domain.Filter{
		{Text: "ord_8f7d"},
		{Text: "ord_8f7d", Name: "shop"},
		{Text: "ord_8f7d", Method: "POST"},
		{Text: "ord_8f7d", StatusMin: 400, StatusMax: 499},
		{Text: "ord_8f7d", Path: "/v1/orders/3"},
		{Text: "ord_8f7d", PathPrefix: "/v1/orders/1"},
		{Text: "ord_8f7d", IPAddress: "203.0.113.7", From: from, To: to},
		{Text: "ord_8f7d", MinDuration: &lo},
		{Text: "ord_8f7d", MinDuration: &lo, MaxDuration: &hi, Method: "GET"},
		{Text: "ORD_1A2B", MaxDuration: &hi},
	} {
		want := expectedPage(msgs, domain.Query{Scope: scopeLive, Filter: filter}, f.now())
		if len(want) == 0 {
			t.Fatalf("fixture error: %s selects no message", describeFilter(filter))
		}
		for _, limit := range []int{1, 2, 7, domain.MaxLimit} {
			got := listAll(t, s, scopeLive, filter, limit, f.now())
			assertIDs(t, fmt.Sprintf("List with %s, pages of %d", describeFilter(filter), limit), want, got)
		}
	}
}

// min_duration_ms and max_duration_ms are inclusive; a message without a
// duration never passes either.
func testDurationBounds(t *testing.T, s ports.MessageStore) {
	f := newFixtures(t)
	durations := map[string]float64{"0": 0, "12.345": 12.345, "99.999": 99.999, "100": 100,
		"100.001": 100.001, "250": 250, "max": float64(domain.MaxDuration / time.Microsecond / 1000)}
	named := map[string]domain.Message{}
	i := 0
	for _, label := range slices.Sorted(maps.Keys(durations)) {
		named[label] = f.message(scopeLive, f.ago(time.Hour).Add(-time.Duration(i)*time.Second), withDuration(durations[label]))
		i++
	}
	named["none"] = f.message(scopeLive, f.ago(2*time.Hour))
	msgs := valuesOf(named)
	mustAppend(t, s, msgs)
	waitForStored(t, s, f.now(), msgs)

	bound := func(v float64) *time.Duration { d := millis(v); return &d }
	withDurations := []string{"0", "12.345", "99.999", "100", "100.001", "250", "max"}
	for _, tc := range []struct {
		min, max *time.Duration
		want     []string
	}{
		{min: bound(100), want: []string{"100", "100.001", "250", "max"}},
		{max: bound(100), want: []string{"0", "12.345", "99.999", "100"}},
		{min: bound(100), max: bound(100), want: []string{"100"}},
		{min: bound(99.999), max: bound(100.001), want: []string{"99.999", "100", "100.001"}},
		{min: bound(100.002), max: bound(249.999)},
		{min: bound(0), want: withDurations},
		{max: bound(86400000), want: withDurations},
		{min: bound(0), max: bound(0), want: []string{"0"}},
		{min: bound(86400000), want: []string{"max"}},
	} {
		filter := domain.Filter{MinDuration: tc.min, MaxDuration: tc.max}
		var want []domain.Message
		for _, label := range tc.want {
			want = append(want, named[label])
		}
		sortNewestFirst(want)
		if ref := expectedPage(msgs, domain.Query{Scope: scopeLive, Filter: filter}, f.now()); !slices.Equal(idsOf(ref), idsOf(want)) {
			t.Fatalf("fixture error: domain.Filter selects %d messages for %s, the case says %d", len(ref), describeFilter(filter), len(want))
		}
		got := listAll(t, s, scopeLive, filter, domain.MaxLimit, f.now())
		assertIDs(t, "List with "+describeFilter(filter), want, got)
	}
}

// readableOnly are the messages of msgs readable at now.
func readableOnly(msgs []domain.Message, now time.Time) []domain.Message {
	var out []domain.Message
	for _, m := range msgs {
		if m.Readable(now) {
			out = append(out, m)
		}
	}
	return out
}
