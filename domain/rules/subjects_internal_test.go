package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// subjectsByWalk is subjectsOf the long way, as it was before the
// shortcuts: every value of a copy of m visited, each key's selectors
// matched and its detector run on it (subjectsAt without its anchor test).
func (c *Compiled) subjectsByWalk(m *domain.Message) []string {
	var out []string
	add := func(value string) {
		if h := c.hasher.subject(value); NormalizeSubject(value) != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	clone := m.Clone()
	walkMessage(&clone, func(l *location, value string) (string, bool) {
		for _, k := range c.subjects {
			for _, s := range k.selectors {
				if s.matches(l) {
					add(value)
				}
			}
			if k.detector != nil {
				spans := k.detector.find(value)
				for s := len(spans) - 1; s >= 0; s-- { // as subjectsAt, backwards
					add(value[spans[s][0]:spans[s][1]])
				}
			}
		}
		return value, false
	}, func(side) bool { return false })
	return out
}

// randomBody is a body of the kinds ingest meets, with e-mail addresses
// (and '@' that are none) in values, names, arrays, escaped strings, JSON
// held in strings, invalid UTF-8, forms, texts and broken JSON.
func randomBody(r *rand.Rand) (body, contentType string) {
	texts := []string{"ana@example.com", "Bob.Smith+x@Mail.Example.org", "not@an", "@", "a@b.c", "x@y.io, z@w.io", "plain",
		"ü-user@exämple.de", "user\xff@bad.example", `quote"d@example.com`, "back\\slash@example.com", `{"inner": "in@example.com"}`,
		"[1, 2]", "{}", " spaced@example.com ", "12.5", ""}
	text := func() string { return texts[r.IntN(len(texts))] }
	value := func() any { return randomJSON(r, 0, text, text) }
	switch r.IntN(10) {
	case 0:
		return "a=" + text() + "&mail=ana%40example.com&b=x+y@example.com", "application/x-www-form-urlencoded"
	case 1:
		return "contact ana@example.com or " + text(), "text/plain"
	case 2:
		return `{"broken": "ana@example.com"`, "application/json"
	}
	doc, _ := json.Marshal(map[string]any{"v": value(), "w": value()})
	if r.IntN(3) == 0 {
		doc, _ = json.MarshalIndent(map[string]any{"v": value()}, " ", "\t")
	}
	return string(doc), "application/json"
}

// randomJSON is a random JSON value (as encoding/json marshals it) of the
// texts and member names text and name give, depth levels down already.
func randomJSON(r *rand.Rand, depth int, text, name func() string) any {
	switch n := r.IntN(8); {
	case depth > 2 || n < 3:
		return text()
	case n == 3:
		return r.IntN(100000)
	case n == 4:
		return nil
	case n == 5:
		list := make([]any, r.IntN(4))
		for i := range list {
			list[i] = randomJSON(r, depth+1, text, name)
		}
		return list
	default:
		object := map[string]any{}
		for range r.IntN(5) {
			object[name()] = randomJSON(r, depth+1, text, name)
		}
		return object
	}
}

// randomParts are a path and headers of the kinds ingest meets, with
// e-mail addresses plain, escaped in a query (%40), between '+'s, and in
// header values under names a key selects and names none does.
func randomParts(r *rand.Rand) (path string, request, response domain.Header) {
	paths := []string{"/v1/users", "/v1/users/ana@example.com", "/v1/orders/42", "/v1/users/x%40y.io"}
	queries := []string{"", "?email=ana%40example.com", "?page=2&token=t1&expand=items", "?q=a+b@example.com+c", "?mail=Bob@Example.org&bad=%zz",
		"?%40=1&e=a%2Bb%40c.io", "?x"}
	values := []string{"cus_42", "Ana@Example.com", "plain", "Bearer x@y.io", " ", "", "a@b.c, d@e.io", "ü@exämple.de"}
	names := []string{"X-Customer-Id", "From", "Accept", "X-User", "Cookie", "Reply-To"}
	header := func() domain.Header {
		h := domain.Header{}
		for range r.IntN(5) {
			h[names[r.IntN(len(names))]] = []string{values[r.IntN(len(values))], values[r.IntN(len(values))]}[:1+r.IntN(2)]
		}
		return h
	}
	return paths[r.IntN(len(paths))] + queries[r.IntN(len(queries))], header(), header()
}

// validated is m submitted and validated as ingest does, by the default
// policy: its bodies carry validation's verdict (domain.Content.JSONBody).
func validated(t *testing.T, m domain.Message) domain.Message {
	t.Helper()
	e := domain.Exchange{Name: "shop", CreatedAt: time.Now(), IPAddress: m.IPAddress, Method: "POST", Path: m.Path,
		Request:  domain.ExchangeRequest{Header: m.Request.Header, Body: m.Request.Body},
		Response: domain.ExchangeResponse{StatusCode: 200, Header: m.Response.Header, Body: m.Response.Body}}
	for _, h := range []map[string][]string{e.Request.Header, e.Response.Header} {
		if _, declared := h["Content-Type"]; !declared && h != nil {
			h["Content-Type"] = []string{"application/json"}
		}
	}
	policy := domain.DefaultPolicy()
	batch, err := policy.ValidateSubmissions(domain.DraftsOf([]domain.Exchange{e}), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewUnstoredMessage(domain.Scope{Account: "a", Domain: domain.DomainLive}, batch.Submissions[0], domain.Identity{ID: m.ID})
}

// TestSubjectsReadAnchoredBodiesAsTheWalk compares subjectsOf, which looks
// only at the values where a key may find a subject (a JSON body's values
// holding an '@' alone when it can, trusting validation's verdict that the
// body is JSON), with the walk of every value, on random messages and key
// sets: as they come, as validation leaves them, and with a body changed
// after validation; and checks that it leaves the message as it was.
func TestSubjectsReadAnchoredBodiesAsTheWalk(t *testing.T) {
	keySets := [][]SubjectKey{
		{{ID: "emails", Detector: "email"}},
		{{ID: "customer", Select: []string{"request.headers.x-customer-id"}}, {ID: "ip", Select: []string{"ip_address"}}, {ID: "emails", Detector: "email"}},
		{{ID: "emails", Detector: "email"}, {ID: "user", Select: []string{"request.body.**.v"}}},
		{{ID: "emails", Detector: "email"}, {ID: "cards", Detector: "card_number"}},
		{{ID: "mail", Detector: "email"}, {ID: "again", Detector: "email"}},
		{{ID: "query", Select: []string{"query.email"}}, {ID: "headers", Select: []string{"response.headers.*"}}, {ID: "emails", Detector: "email"}},
		{{ID: "path", Select: []string{"path"}}, {ID: "user", Select: []string{"headers.x-user", "query.mail"}}},
	}
	r := rand.New(rand.NewPCG(38, 6))
	fastRead, trusted := 0, 0
	for i := range 3000 {
		keys := keySets[i%len(keySets)]
		c, err := Compile(RuleSet{Subjects: keys}, []byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		reqBody, reqType := randomBody(r)
		respBody, respType := randomBody(r)
		path, reqHeader, respHeader := randomParts(r)
		reqHeader["X-Customer-Id"] = []string{"cus_42"}
		m := domain.Message{ID: fmt.Sprint(i), Path: path, IPAddress: "203.0.113.9",
			Request:  domain.Content{Body: reqBody, ContentType: reqType, Header: reqHeader},
			Response: domain.Content{Body: respBody, ContentType: respType, Header: respHeader}}
		v := validated(t, m)
		changed := v.Clone()
		changed.Request.Body = domain.CutBody(changed.Request.Body, len(changed.Request.Body)/2, len(changed.Request.Body))
		changed.Response.Body = strings.Replace(changed.Response.Body, "@", "\\u0040", 1)
		for _, m := range []domain.Message{m, v, changed} {
			before, headers := m, [2]domain.Header{m.Request.Header.Clone(), m.Response.Header.Clone()}
			got, want := c.subjectsOf(&m), c.subjectsByWalk(&m)
			if !slices.Equal(got, want) {
				t.Fatalf("keys %v, message %+v: subjects %v, the walk finds %v", keys, m, got, want)
			}
			if !reflect.DeepEqual(m, before) || !reflect.DeepEqual(m.Request.Header, headers[0]) || !reflect.DeepEqual(m.Response.Header, headers[1]) {
				t.Fatalf("subjectsOf changed the message: %+v", m)
			}
			if c.subjectPlan.anchored && c.readAnchoredBody(sideRequest, &m.Request, func(v string) string { return v }) {
				fastRead++
				if m.Request.BodyIsJSON() {
					trusted++
				}
			}
		}
	}
	if fastRead < 1500 || trusted < 500 {
		t.Fatalf("the anchored read took %d bodies of 9000, %d trusting validation: the test no longer compares it", fastRead, trusted)
	}
}
