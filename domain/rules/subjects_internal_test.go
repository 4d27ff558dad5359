package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/reqlog/reqlog/domain"
)

// subjectsByWalk is subjectsOf the long way, as it was before
// readAnchoredBody: every value of a copy of m visited.
func (c *Compiled) subjectsByWalk(m *domain.Message) []string {
	var out []string
	clone := m.Clone()
	c.eachSubject(&clone, func(value string) string {
		if h := c.hasher.subject(value); !slices.Contains(out, h) {
			out = append(out, h)
		}
		return value
	})
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

// TestSubjectsReadAnchoredBodiesAsTheWalk compares subjectsOf, which reads a
// body's values holding an '@' alone when it can, with the walk of every
// value, on random bodies and key sets; and checks that it leaves the
// message as it was.
func TestSubjectsReadAnchoredBodiesAsTheWalk(t *testing.T) {
	keySets := [][]SubjectKey{
		{{ID: "emails", Detector: "email"}},
		{{ID: "customer", Select: []string{"request.headers.x-customer-id"}}, {ID: "ip", Select: []string{"ip_address"}}, {ID: "emails", Detector: "email"}},
		{{ID: "emails", Detector: "email"}, {ID: "user", Select: []string{"request.body.**.v"}}},
		{{ID: "emails", Detector: "email"}, {ID: "cards", Detector: "card_number"}},
		{{ID: "mail", Detector: "email"}, {ID: "again", Detector: "email"}},
	}
	r := rand.New(rand.NewPCG(38, 6))
	fastRead := 0
	for i := range 3000 {
		keys := keySets[i%len(keySets)]
		c, err := Compile(RuleSet{Subjects: keys}, []byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		reqBody, reqType := randomBody(r)
		respBody, respType := randomBody(r)
		m := domain.Message{ID: fmt.Sprint(i), Path: "/v1/users?email=ana%40example.com", IPAddress: "203.0.113.9",
			Request:  domain.Content{Body: reqBody, ContentType: reqType, Header: domain.Header{"X-Customer-Id": {"cus_42"}, "From": {"Ana@Example.com"}}},
			Response: domain.Content{Body: respBody, ContentType: respType}}
		before, headers := m, m.Request.Header.Clone()
		got, want := c.subjectsOf(&m), c.subjectsByWalk(&m)
		if !slices.Equal(got, want) {
			t.Fatalf("keys %v, request body %q, response body %q: subjects %v, the walk finds %v", keys, reqBody, respBody, got, want)
		}
		if !reflect.DeepEqual(m, before) || !reflect.DeepEqual(m.Request.Header, headers) {
			t.Fatalf("subjectsOf changed the message: %+v", m)
		}
		if c.readAnchoredBody(sideRequest, reqBody, reqType, func(v string) string { return v }) {
			fastRead++
		}
	}
	if fastRead < 500 {
		t.Fatalf("the anchored read took %d bodies of 3000: the test no longer compares it", fastRead)
	}
}
