package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/reqlog/reqlog/domain"
)

// scrubByEveryRule is scrub the slow way: each value meets every privacy
// rule in order, its scope, selectors and match tried as they are, none of
// the shortcuts (dispatch, the rules ruled out by a body's text or by a
// value's counts). It returns the changes and the counts scrub would.
func (c *Compiled) scrubByEveryRule(m *domain.Message, src Source) ([]Change, []Count) {
	var changes []Change
	matches := make([]int, len(c.privacy))
	active := make([]bool, len(c.privacy))
	readsFields := [3]bool{}
	for i := range c.privacy {
		r := &c.privacy[i]
		if active[i] = r.scope.matches(m, src); active[i] && !r.dryRun {
			for s, reads := range r.readsFields {
				readsFields[s] = readsFields[s] || reads
			}
		}
	}
	walkMessage(m, func(l *location, value string) (string, bool) {
		for i := range c.privacy {
			r := &c.privacy[i]
			if !active[i] || !r.selects(l) {
				continue
			}
			counts := countText(value)
			kept, n, remove := r.scrub(value, &counts, c.hasher)
			if n == 0 {
				continue
			}
			matches[i] += n
			if r.dryRun {
				continue
			}
			if change := (Change{Rule: r.id, Field: l.String()}); !slices.Contains(changes, change) {
				changes = append(changes, change)
			}
			if remove {
				return "", true
			}
			value = kept
		}
		return value, false
	}, func(s side) bool { return readsFields[s] || readsFields[sideBoth] })
	var counts []Count
	for i, r := range c.privacy {
		if matches[i] > 0 {
			counts = append(counts, Count{Rule: r.id, Matches: matches[i], DryRun: r.dryRun})
		}
	}
	return changes, counts
}

// randomExchange is a message of the benchmarks' kind, its values drawn at
// random from those the fifty rules look for and others.
func randomExchange(r *rand.Rand, k int) domain.Message {
	pick := func(values ...string) string { return values[r.IntN(len(values))] }
	text := func() string {
		return pick("gift wrap", "call back on 01512345678", "4111 1111 1111 1111", "4111-1111-1111-1112", "ana@example.com",
			"Bearer sk_live_0123456789abcdef", "AKIAIOSFODNN7EXAMPLE", "ghp_"+fmt.Sprintf("%036d", k), "DE89 3704 0044 0532 0130 00",
			"203.0.113.9", "2001:db8::1", "123-45-6789", "ORD-0000004"+fmt.Sprint(k%10), "passport: X1234567", "1990-01-31",
			"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "Hauptstraße 1", "+49 151 2345 6789", "", "12.5", "ü@ß.de",
			"-----BEGIN RSA PRIVATE KEY-----MIIB-----END RSA PRIVATE KEY-----")
	}
	fields := []string{"note", "card", "iban", "ssn", "email", "phone", "address", "dob", "secret_answer", "national_id", "sku", "holder", "x"}
	value := func(depth int) any { return randomJSON(r, depth, text, func() string { return pick(fields...) }) }
	body := func() string {
		doc := map[string]any{"customer": value(1), "items": []any{value(1), map[string]any{"note": text()}}, "payment": value(1), "reference": text()}
		raw, _ := json.Marshal(doc)
		switch r.IntN(6) {
		case 0:
			raw, _ = json.Marshal(map[string]any{"wrapped": string(raw)}) // JSON in a string: escapes
		case 1:
			return "note=" + url.QueryEscape(text()) + "&card=4111+1111+1111+1111&email=ana@example.com&key=" + url.QueryEscape(text())
		}
		return string(raw)
	}
	header := func() domain.Header {
		return domain.Header{"Authorization": {pick("Bearer sk_live_0123456789abcdef", "Basic abc")}, "X-Partner-Id": {text()},
			"X-Forwarded-For": {pick("203.0.113.9", "10.0.0.1, 203.0.113.9")}, "X-User-Email": {text()}, "X-Customer-Id": {"cus_0042"}, "X-Trace": {text()}}
	}
	return domain.Message{ID: fmt.Sprint(k), Account: "bench", Name: pick("shop", "signup", "payments"), Method: "POST",
		Path: pick("/v1/orders/", "/v1/users/", "/other/") + fmt.Sprint(k) + pick("?token=t&expand=items", "?q="+text(), ""), IPAddress: "203.0.113.9",
		Request:  domain.Content{Header: header(), Body: body(), ContentType: pick("application/json", "application/x-www-form-urlencoded")},
		Response: domain.Content{Header: header(), Body: body(), ContentType: "application/json"}}
}

// TestScrubAsEveryRuleOnEveryValue compares scrub, with its shortcuts, with
// every rule tried on every value, for the fifty rules of the benchmarks on
// random exchanges: the same message, changes and counts.
func TestScrubAsEveryRuleOnEveryValue(t *testing.T) {
	doc, err := os.ReadFile("testdata/fifty-rules.json")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(rs, []byte("key"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(37, 1))
	for k := range 2000 {
		m := randomExchange(r, k)
		slow := m.Clone()
		var out Outcome
		c.scrub(&m, SourceAPI, &out)
		changes, counts := c.scrubByEveryRule(&slow, SourceAPI)
		if !reflect.DeepEqual(m, slow) || !slices.Equal(out.Changes, changes) || !slices.Equal(out.Counts, counts) {
			t.Fatalf("exchange %d:\nscrub:      %+v\n%v\n%v\nevery rule: %+v\n%v\n%v", k, m, out.Changes, out.Counts, slow, changes, counts)
		}
	}
}
