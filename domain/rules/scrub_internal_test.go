package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// scrubByEveryRule is scrub the slow way: each value meets every privacy
// rule in order, its scope, selectors and match tried as they are, none of
// the shortcuts (dispatch, the rules ruled out by a body's text or by a
// value's counts, a pattern's literal, a detector's hint). It returns the
// changes and the counts scrub would.
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
			kept, n, remove := r.scrubWithoutShortcuts(value, c.hasher)
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

// scrubWithoutShortcuts is scrub with the pattern or detector run on every
// value: no counts, literal or hint rule a value out first, and a detector's
// own pattern, not its shape.
func (p *privacyRule) scrubWithoutShortcuts(value string, hasher *keyedHash) (string, int, bool) {
	plain := *p
	plain.literal = literal{}
	if p.detector != nil {
		d := *p.detector
		d.needs, d.hint, d.shapeAt = 0, func(string) bool { return true }, nil
		plain.detector = &d
	}
	plain.needs = 0
	return plain.scrub(value, 0, hasher) // no needs: no counts needed
}

// compileFifty compiles the fifty rules of the benchmarks.
func compileFifty(t testing.TB) *Compiled {
	t.Helper()
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
	return c
}

// scrubDiffers scrubs m, and a copy of it by every rule, and says how the
// two differ (message, changes, counts), "" when they do not. scrub meets
// m's bodies with validation's verdict on them (Content.JSONBody), as ingest
// hands them over; the slow way without, checking every body itself.
func (c *Compiled) scrubDiffers(m domain.Message) string {
	slow := m.Clone()
	slow.Request.JSONBody, slow.Response.JSONBody = "", ""
	m.Request.JSONBody, m.Response.JSONBody = validatorsVerdict(m.Request.Body), validatorsVerdict(m.Response.Body)
	var out Outcome
	c.scrub(&m, SourceAPI, &out)
	changes, counts := c.scrubByEveryRule(&slow, SourceAPI)
	m.Request.JSONBody, m.Response.JSONBody = "", "" // no store keeps it
	if reflect.DeepEqual(m, slow) && slices.Equal(out.Changes, changes) && slices.Equal(out.Counts, counts) {
		return ""
	}
	return fmt.Sprintf("scrub:      %+v\n%v\n%v\nevery rule: %+v\n%v\n%v", m, out.Changes, out.Counts, slow, changes, counts)
}

// verdictValidator is the validator of ingest, whose redacted fields make
// it look at a body's JSON.
var verdictValidator = domain.DefaultPolicy().Validator()

// validatorsVerdict is the Content.JSONBody validation gives body, "" when
// it finds it no JSON it may vouch for or changes it (a redacted field).
func validatorsVerdict(body string) string {
	e := domain.Exchange{Name: "x", CreatedAt: time.Now().Add(-time.Minute), Method: "POST", Path: "/",
		Request: domain.ExchangeRequest{Body: body}, Response: domain.ExchangeResponse{StatusCode: 200}}
	batch, err := verdictValidator.ValidateSubmissions(domain.DraftsOf([]domain.Exchange{e}), time.Now())
	if err != nil || batch.Submissions[0].Request.Body != body {
		return ""
	}
	return batch.Submissions[0].Request.JSONBody
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
	c := compileFifty(t)
	r := rand.New(rand.NewPCG(37, 1))
	for k := range 2000 {
		m := randomExchange(r, k)
		if diff := c.scrubDiffers(m); diff != "" {
			t.Fatalf("exchange %d:\n%s", k, diff)
		}
	}
}

// randomPrivacyRules is a rule set of up to 24 privacy rules drawn from
// selectors, matches and actions of every kind, some scoped, some dry-run.
func randomPrivacyRules(r *rand.Rand) RuleSet {
	pick := func(values ...string) string { return values[r.IntN(len(values))] }
	selectors := []string{"**", "body", "body.**", "body.*", "request.body", "response.body.**", "body.**.note", "body.**.card",
		"request.body.customer.*", "body.items.*.note", "body.*.email", "body.wrapped", "headers.*", "headers", "request.headers.x-partner-id",
		"headers.authorization", "response.headers.x-trace", "headers.kelvin", "query.*", "query.token", "query.q", "query", "path",
		"ip_address", `body."a.b"`, "body.key", "body.card", "body.note", "request.body.**.x"}
	patterns := []string{`\b\d{6,}\b`, `\bORD-\d{8}\b`, `(?i)passport[:= ]+([A-Z0-9]{6,9})`, `\d{4}-\d{2}-\d{2}`, `/users/(\d+)`, `(?i)secret`,
		`(?i)k+`, `[A-Z]{2}\d{2}`, `(?i)(bearer)\s+\S+`, `@`, `a|b`, `x*`, `\s`, `ſ`, `(?i)wrap`, `\pL{3}`, `[^a]+`, `^$`, `_`}
	var rs RuleSet
	for i := range 1 + r.IntN(24) {
		rule := PrivacyRule{ID: fmt.Sprint("r", i), Select: []string{pick(selectors...)}, Action: Action{Type: pick(ActionMask, ActionHash, ActionRemove, ActionReplace, ActionPartial)}}
		if r.IntN(4) == 0 {
			rule.Select = append(rule.Select, pick(selectors...))
		}
		if r.IntN(6) == 0 {
			rule.Except = []string{pick(selectors...)}
		}
		switch r.IntN(3) {
		case 0:
			rule.Match.Pattern = pick(patterns...)
			if re := regexp.MustCompile(rule.Match.Pattern); re.NumSubexp() > 0 && r.IntN(2) == 0 {
				rule.Match.Group = 1
			}
		case 1:
			rule.Match.Detector = pick(detectorOrder[:]...)
		}
		switch rule.Action.Type {
		case ActionReplace:
			rule.Action.With = pick("[x]", "", "a@b.cc", "4111 1111 1111 1111")
		case ActionPartial:
			rule.Action.KeepLast = 1 + r.IntN(4)
		}
		if rule.Match.Detector == "bearer_token" && r.IntN(2) == 0 {
			rule.Action = Action{Type: ActionKeepScheme}
		}
		if r.IntN(5) == 0 {
			rule.Mode = "dry_run"
		}
		if r.IntN(6) == 0 {
			rule.Scope.Paths = []string{pick("/v1/orders/**", "/v1/users/*")}
		}
		rs.Privacy = append(rs.Privacy, rule)
	}
	return rs
}

// hostileText is a value of the kinds that trip shortcuts: escapes,
// invalid UTF-8, letters folding to ASCII (K, ſ), percent-encoding, JSON
// held in a string, matches split across values.
func hostileText(r *rand.Rand) string {
	parts := []string{"gift wrap", "ana@example.com", "ana%40example.com", "ana@", "example.com", "4111 1111", "1111 1111", "4111 1111 1111 1111",
		"Bearer\tabc.def", "bearer  x", "BEARER", "\xff\xfe", "Kelvin", "paſſport: X1234567", "PASSPORT=AB12345", "ſecret", "SECRET",
		`{"card":"4111111111111111","note":"123456"}`, `["a@b.cc",{"x":"9"}]`, `"quoted"`, `back\slash`, "tab\there", "line\nbreak",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "AKIAIOSFODNN7EXAMPLE", "sk_live_0123456789abcdef", "203.0.113.9", "::1",
		"DE89370400440532013000", "123-45-6789", "ORD-00000042", "1990-01-31", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "github_pat_", "a+b", "%zz", "", " ", "_", "a.b", "k", "K"}
	n := 1 + r.IntN(3)
	out := ""
	for range n {
		out += parts[r.IntN(len(parts))]
	}
	return out
}

// hostileExchange is a message whose every place holds hostileText, in JSON,
// form and text bodies, headers of odd casing, query parameters encoded.
func hostileExchange(r *rand.Rand, k int) domain.Message {
	names := []string{"note", "card", "email", "key", "x", "a.b", "wrapped", "customer", "items", "Kelvin", "ſ", "token", "q"}
	name := func() string { return names[r.IntN(len(names))] }
	text := func() string { return hostileText(r) }
	body := func() (string, string) {
		switch r.IntN(5) {
		case 0:
			form := url.Values{}
			for range 1 + r.IntN(4) {
				form.Add(name(), text())
			}
			return form.Encode(), formType
		case 1:
			return text(), "text/plain"
		case 2:
			inner, _ := json.Marshal(randomJSON(r, 0, text, name))
			raw, _ := json.Marshal(map[string]any{"wrapped": string(inner), "note": text()})
			return string(raw), "application/json"
		case 3:
			return `{"broken": "` + text(), "application/json"
		}
		raw, _ := json.Marshal(map[string]any{"customer": randomJSON(r, 1, text, name), "items": []any{randomJSON(r, 1, text, name)}, name(): text()})
		return "  " + string(raw), "application/json"
	}
	header := func() domain.Header {
		h := domain.Header{}
		for _, n := range []string{"Authorization", "x-partner-id", "X-TRACE", "\u212aelvin", "Kelvin"} {
			if r.IntN(2) == 0 {
				h[n] = []string{text()}
			}
		}
		return h
	}
	reqBody, reqType := body()
	respBody, respType := body()
	query := url.Values{}
	for range r.IntN(4) {
		query.Add(name(), text())
	}
	path := []string{"/v1/orders/", "/v1/users/", "/other/"}[r.IntN(3)] + fmt.Sprint(k)
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return domain.Message{ID: fmt.Sprint(k), Account: "bench", Name: "shop", Method: "POST", Path: path, IPAddress: text(),
		Request:  domain.Content{Header: header(), Body: reqBody, ContentType: reqType},
		Response: domain.Content{Header: header(), Body: respBody, ContentType: respType}}
}

// TestScrubAsEveryRuleOnRandomRuleSets is TestScrubAsEveryRuleOnEveryValue
// over random rule sets and hostile exchanges.
func TestScrubAsEveryRuleOnRandomRuleSets(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 9))
	for set := range 300 {
		rs := randomPrivacyRules(r)
		c, err := Compile(rs, []byte("key"))
		if err != nil {
			t.Fatalf("rule set %d: %v", set, err)
		}
		for k := range 30 {
			m := hostileExchange(r, k)
			if r.IntN(3) == 0 {
				m = randomExchange(r, k)
			}
			if diff := c.scrubDiffers(m); diff != "" {
				rules, _ := json.Marshal(rs)
				t.Fatalf("rule set %d, exchange %d:\n%s\n%s", set, k, rules, diff)
			}
		}
	}
}

// FuzzScrubAsEveryRule is TestScrubAsEveryRuleOnRandomRuleSets with the
// exchange's texts from the fuzzer, under the fifty rules and a random rule
// set drawn from seed.
func FuzzScrubAsEveryRule(f *testing.F) {
	f.Add("/v1/orders/1?token=a%40b.cc&q=4111+1111+1111+1111", `{"customer":{"email":"ana@example.com"},"items":[{"note":"call 0151234567"}]}`,
		"a=b&card=4111%201111%201111%201111", "Bearer sk_live_0123456789abcdef", uint8(0), uint64(1))
	f.Add("/v1/users/7", `{"wrapped":"{\"card\":\"4111111111111111\"}","k":"paſſport: X1234567"}`, "\xff{\"a\":", "\u212aelvin 203.0.113.9", uint8(1), uint64(2))
	fifty := compileFifty(f)
	f.Fuzz(func(t *testing.T, path, reqBody, respBody, header string, types uint8, seed uint64) {
		random, err := Compile(randomPrivacyRules(rand.New(rand.NewPCG(seed, 11))), []byte("key"))
		if err != nil {
			t.Fatal(err)
		}
		contentType := func(bit uint8) string {
			if types&bit != 0 {
				return formType
			}
			return "application/json"
		}
		for _, c := range []*Compiled{fifty, random} {
			m := domain.Message{ID: "x", Name: "signup", Method: "POST", Path: "/" + path, IPAddress: header,
				Request:  domain.Content{Header: domain.Header{"Authorization": {header}, "X-Partner-Id": {reqBody}}, Body: reqBody, ContentType: contentType(1)},
				Response: domain.Content{Header: domain.Header{"x-trace": {header, respBody}}, Body: respBody, ContentType: contentType(2)}}
			if diff := c.scrubDiffers(m); diff != "" {
				t.Fatal(diff)
			}
		}
	})
}
