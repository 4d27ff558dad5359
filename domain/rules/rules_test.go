package rules_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

var hashKey = []byte("test-hash-key-0123456789")

func compile(t testing.TB, doc string) *rules.Compiled {
	t.Helper()
	rs, err := rules.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rules.Compile(rs, hashKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// signup is the exchange of issue 37: personal data in a body, a nested
// object, JSON held in a string, a query token, a header of odd casing.
func signup() domain.Message {
	created := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	return domain.Message{
		ID: "0193a0c4-0000-7000-8000-000000000001", Account: "acme", Domain: "live", Name: "signup",
		Method: "POST", Path: "/v1/users?token=9f8e7d%2Bsecret&page=2", Route: "/v1/users", StatusCode: 201, IPAddress: "203.0.113.7",
		CreatedAt: created, ExpiresAt: created.Add(domain.DefaultRetention),
		Request: domain.Content{
			Header: domain.Header{"X-Partner-Id": {"partner-42"}, "X-Debug": {"Bearer abc.def.ghi"}},
			Body: `{"email": "ana@example.com", "iban": "DE89370400440532013000", "card": "4111 1111 1111 1111",` +
				` "profile": {"national_id": "123-45-6789", "tags": ["x", "bob@example.org"]},` +
				` "meta": "{\"contact\":\"eve@example.net\"}"}`,
			ContentType: "application/json",
		},
		Response: domain.Content{Body: "token=abc&email=ana%40example.com", ContentType: "application/x-www-form-urlencoded"},
	}
}

const signupRules = `{
  "privacy": [
    {"id": "mask-emails", "scope": {"paths": ["/v1/users"]}, "select": ["body"], "match": {"detector": "email"}, "action": {"type": "mask"}},
    {"id": "drop-token", "select": ["query.token"], "action": {"type": "remove"}},
    {"id": "card-last4", "select": ["body.**"], "match": {"detector": "card_number"}, "action": {"type": "partial", "keep_last": 4}},
    {"id": "iban", "select": ["**"], "match": {"detector": "iban"}, "action": {"type": "replace", "with": "[iban]"}},
    {"id": "ssn", "select": ["request.body.profile.*"], "match": {"detector": "us_ssn"}, "action": {"type": "mask"}},
    {"id": "partner", "select": ["request.headers.x-partner-id"], "action": {"type": "hash"}},
    {"id": "bearer", "select": ["headers"], "match": {"detector": "bearer_token"}, "action": {"type": "keep_scheme"}},
    {"id": "count-ips", "select": ["ip_address"], "match": {"detector": "ipv4"}, "action": {"type": "mask"}, "mode": "dry_run"}
  ]
}`

func TestPrivacyRulesScrubEveryPlace(t *testing.T) {
	c := compile(t, signupRules)
	m := signup()
	out := c.Apply(&m, rules.SourceProxy)
	all := m.Path + m.IPAddress + m.Request.Body + m.Response.Body + strings.Join(m.Request.Header["X-Partner-Id"], "") + strings.Join(m.Request.Header["X-Debug"], "")
	for _, secret := range []string{"ana@example.com", "ana%40example.com", "bob@example.org", "eve@example.net", "9f8e7d", "DE89370400440532013000",
		"4111 1111 1111", "123-45-6789", "partner-42", "abc.def.ghi"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q is still stored in %s", secret, all)
		}
	}
	for _, kept := range []string{"page=2", "1111", "Bearer ***", "[iban]", rules.HashValue(hashKey, "partner-42"), "203.0.113.7", `"tags"`} {
		if !strings.Contains(all, kept) {
			t.Errorf("%q is not in %s", kept, all)
		}
	}
	if !strings.HasPrefix(m.Path, "/v1/users?page=2") {
		t.Errorf("path %q: the token parameter must go, the rest stay", m.Path)
	}
	alone := signup()
	alone.Path = "/v1/reset?token=9f8e7d"
	c.Apply(&alone, rules.SourceAPI)
	if alone.Path != "/v1/reset" {
		t.Errorf("path %q: the only parameter removed leaves no '?'", alone.Path)
	}
	if !strings.Contains(m.Request.Body, `"meta": "{\"contact\":\"`+domain.Mask+`\"}"`) {
		t.Errorf("JSON in a string is scrubbed and kept a string: %s", m.Request.Body)
	}
	wantChanges := []rules.Change{
		{Rule: "drop-token", Field: "query.token"},
		{Rule: "bearer", Field: "request.headers.x-debug"},
		{Rule: "partner", Field: "request.headers.x-partner-id"},
		{Rule: "mask-emails", Field: "request.body.email"},
		{Rule: "iban", Field: "request.body.iban"},
		{Rule: "card-last4", Field: "request.body.card"},
		{Rule: "ssn", Field: "request.body.profile.national_id"},
		{Rule: "mask-emails", Field: "request.body.profile.tags.1"},
		{Rule: "mask-emails", Field: "request.body.meta.contact"},
		{Rule: "mask-emails", Field: "response.body.email"},
	}
	if !slices.Equal(out.Changes, wantChanges) {
		t.Errorf("changes %v\nwant %v", out.Changes, wantChanges)
	}
	if i := slices.IndexFunc(out.Counts, func(c rules.Count) bool { return c.Rule == "count-ips" }); i < 0 || !out.Counts[i].DryRun || out.Counts[i].Matches != 1 {
		t.Errorf("a dry-run rule is counted and changes nothing: %v", out.Counts)
	}
	if !out.Stored || out.SampleRate != 1 {
		t.Errorf("no ingest rule: stored %v, rate %d", out.Stored, out.SampleRate)
	}
}

// Rules outside their scope do nothing; a rule acts on what the ones before
// it left; the same message scrubbed twice is scrubbed once.
func TestPrivacyRulesScopeAndIdempotence(t *testing.T) {
	c := compile(t, signupRules)
	m := signup()
	m.Path = "/v1/orders"
	c.Apply(&m, rules.SourceAPI)
	if !strings.Contains(m.Request.Body, "ana@example.com") {
		t.Errorf("mask-emails is scoped to /v1/users, yet scrubbed %s", m.Request.Body)
	}
	m = signup()
	c.Apply(&m, rules.SourceAPI)
	once := m.Clone()
	second := c.Apply(&m, rules.SourceAPI)
	if m.Request.Body != once.Request.Body || m.Path != once.Path || m.Response.Body != once.Response.Body {
		t.Errorf("scrubbed again: %s", m.Request.Body)
	}
	for _, ch := range second.Changes {
		if ch.Rule != "partner" { // hashing a hash changes it again, by design of a keyed hash
			t.Errorf("a second pass changed %v", ch)
		}
	}
}

func TestIngestRules(t *testing.T) {
	c := compile(t, `{"ingest": [
		{"id": "health", "scope": {"paths": ["/healthz"]}, "action": "drop"},
		{"id": "search", "scope": {"routes": ["/v1/search"]}, "status": ["2xx"], "action": "sample", "sample_rate": 10},
		{"id": "slow", "min_duration_ms": 1000, "action": "keep"},
		{"id": "big", "scope": {"applications": ["files"]}, "action": "strip_bodies"},
		{"id": "would", "scope": {"methods": ["OPTIONS"]}, "action": "drop", "mode": "dry_run"}
	]}`)
	msg := func(path, route string, status int) domain.Message {
		return domain.Message{ID: "0193a0c4-0000-7000-8000-00000000000a", Name: "shop", Method: "GET", Path: path, Route: route, StatusCode: status,
			Request: domain.Content{Body: "req"}, Response: domain.Content{Body: "resp"}}
	}
	m := msg("/healthz", "", 200)
	if out := c.Apply(&m, rules.SourceAPI); out.Stored || out.IngestRule != "health" {
		t.Errorf("health check: %+v", out)
	}
	m = msg("/healthz", "", 503) // errors are kept unless a rule names them
	if out := c.Apply(&m, rules.SourceAPI); !out.Stored {
		t.Errorf("a failing health check was dropped: %+v", out)
	}
	kept := 0
	for i := range 1000 {
		m = msg("/v1/search?q=x", "/v1/search", 200)
		m.ID = fmt.Sprintf("0193a0c4-0000-7000-8000-%012d", i)
		out := c.Apply(&m, rules.SourceAPI)
		if out.SampleRate != 10 {
			t.Fatalf("sampled message rate %d", out.SampleRate)
		}
		again := msg("/v1/search?q=x", "/v1/search", 200)
		again.ID = m.ID
		if retry := c.Apply(&again, rules.SourceAPI); retry.Stored != out.Stored {
			t.Fatal("a retried submission got another verdict")
		}
		if out.Stored {
			kept++
		}
	}
	if kept < 60 || kept > 140 {
		t.Errorf("kept %d of 1000 at 1 in 10", kept)
	}
	m = msg("/files/1", "", 200)
	m.Name = "files"
	if out := c.Apply(&m, rules.SourceAPI); !out.Stored || !out.BodiesStripped || m.Request.Body != "" || m.Response.Body != "" {
		t.Errorf("strip_bodies: %+v, bodies %q %q", out, m.Request.Body, m.Response.Body)
	}
	m = msg("/x", "", 200)
	m.Method = "OPTIONS"
	if out := c.Apply(&m, rules.SourceAPI); !out.Stored || len(out.Counts) != 1 || !out.Counts[0].DryRun {
		t.Errorf("dry run: %+v", out)
	}
}

func TestRetentionRules(t *testing.T) {
	c := compile(t, `{"retention": [
		{"id": "payments", "scope": {"applications": ["payments"]}, "keep": "7d", "bodies": "2d"},
		{"id": "refunds", "scope": {"applications": ["payments"], "routes": ["/v1/refunds/**"]}, "keep": "400d"}
	]}`)
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := domain.Message{Name: "payments", Path: "/v1/pay", CreatedAt: created, ExpiresAt: created.Add(domain.DefaultRetention)}
	out := c.Apply(&m, rules.SourceAPI)
	if out.RetentionRule != "payments" || !m.ExpiresAt.Equal(created.Add(7*24*time.Hour)) || !out.BodiesExpireAt.Equal(created.Add(48*time.Hour)) {
		t.Errorf("payments: %+v, expires %s", out, m.ExpiresAt)
	}
	m = domain.Message{Name: "payments", Path: "/v1/refunds/9", Route: "/v1/refunds/{id}", CreatedAt: created}
	if out := c.Apply(&m, rules.SourceAPI); out.RetentionRule != "refunds" || !m.ExpiresAt.Equal(created.Add(400*24*time.Hour)) {
		t.Errorf("the route rule is more specific: %+v", out)
	}
	m = domain.Message{Name: "shop", CreatedAt: created, ExpiresAt: created.Add(time.Hour)}
	if out := c.Apply(&m, rules.SourceAPI); out.RetentionRule != "" || !m.ExpiresAt.Equal(created.Add(time.Hour)) {
		t.Errorf("no rule: the policy's retention stays: %+v", out)
	}
}

func TestSubjects(t *testing.T) {
	c := compile(t, `{"subjects": [{"id": "user", "select": ["request.headers.x-user-id"]}, {"id": "emails", "detector": "email"}]}`)
	m := signup()
	m.Request.Header["X-User-Id"] = []string{" U-1001 "}
	out := c.Apply(&m, rules.SourceAPI)
	for _, value := range []string{"u-1001", "ANA@example.com", "bob@example.org", "eve@example.net"} {
		if !slices.Contains(out.Subjects, rules.SubjectHash(hashKey, value)) {
			t.Errorf("subject %q not found in %v", value, out.Subjects)
		}
	}
	for _, h := range out.Subjects {
		if strings.Contains(h, "@") || strings.Contains(h, "1001") {
			t.Errorf("a subject kept raw: %s", h)
		}
	}
}

// A body that looks like JSON the rules cannot read is withheld when a rule
// reads its fields; kept when none does.
func TestUnreadableBodiesAreWithheld(t *testing.T) {
	deep := strings.Repeat(`{"a":`, domain.MaxNesting+5) + `"ana@example.com"` + strings.Repeat("}", domain.MaxNesting+5)
	c := compile(t, `{"privacy": [{"id": "e", "select": ["body.**.email"], "action": {"type": "mask"}}]}`)
	for _, body := range []string{deep, `{"email": "ana@example.com"`} {
		m := domain.Message{Path: "/", Request: domain.Content{Body: body, ContentType: "application/json"}}
		out := c.Apply(&m, rules.SourceAPI)
		if m.Request.Body != rules.Withheld || !slices.Equal(out.Withheld, []string{"request.body"}) {
			t.Errorf("body %.30q… kept as %.40q, withheld %v", body, m.Request.Body, out.Withheld)
		}
	}
	plain := compile(t, `{"privacy": [{"id": "e", "select": ["**"], "match": {"detector": "email"}, "action": {"type": "mask"}}]}`)
	m := domain.Message{Path: "/", Request: domain.Content{Body: `{"email": "ana@example.com"`}}
	if out := plain.Apply(&m, rules.SourceAPI); len(out.Withheld) != 0 || strings.Contains(m.Request.Body, "ana@") || !strings.Contains(m.Request.Body, domain.Mask) {
		t.Errorf("a text rule scrubs broken JSON as text: %q %v", m.Request.Body, out.Withheld)
	}
}

func TestBadRuleSetsNameTheField(t *testing.T) {
	many := `{"privacy": [` + strings.TrimSuffix(strings.Repeat(`{"id": "x", "select": ["**"], "action": {"type": "mask"}},`, rules.MaxRules+1), ",") + `]}`
	for doc, field := range map[string]string{
		`{"privacy": [{"id": "p", "select": ["**"], "match": {"pattern": "(a+"}, "action": {"type": "mask"}}]}`:                               "privacy[0].match.pattern",
		`{"privacy": [{"id": "p", "select": ["**"], "match": {"pattern": "a{1000}{1000}"}, "action": {"type": "mask"}}]}`:                     "privacy[0].match.pattern",
		`{"privacy": [{"id": "p", "select": ["**"], "match": {"detector": "dna"}, "action": {"type": "mask"}}]}`:                              "privacy[0].match.detector",
		`{"privacy": [{"id": "p", "select": ["request.cookies"], "action": {"type": "mask"}}]}`:                                               "privacy[0].select[0]",
		`{"privacy": [{"id": "p", "select": ["**"], "action": {"type": "shred"}}]}`:                                                           "privacy[0].action.type",
		`{"privacy": [{"id": "p", "select": ["**"], "action": {"type": "mask"}}, {"id": "p", "select": ["**"], "action": {"type": "mask"}}]}`: "privacy[1].id",
		`{"ingest": [{"id": "all", "action": "drop"}]}`:                                                                                       "ingest[0]",
		`{"ingest": [{"id": "s", "action": "sample", "sample_rate": 0}]}`:                                                                     "ingest[0].sample_rate",
		`{"ingest": [{"id": "s", "action": "sample", "sample_rate": 1000001}]}`:                                                               "ingest[0].sample_rate",
		`{"ingest": [{"id": "s", "action": "archive"}]}`:                                                                                      "ingest[0].action",
		`{"ingest": [{"id": "s", "status": ["6xx"], "action": "drop"}]}`:                                                                      "ingest[0].status[0]",
		`{"retention": [{"id": "a", "keep": "7d"}, {"id": "b", "keep": "30d"}]}`:                                                              "retention[1]",
		`{"retention": [{"id": "a", "keep": "7 days"}]}`:                                                                                      "retention[0].keep",
		`{"retention": [{"id": "a", "keep": "7d", "bodies": "8d"}]}`:                                                                          "retention[0].bodies",
		many: "privacy",
	} {
		rs, err := rules.Parse([]byte(doc))
		if err == nil {
			_, err = rules.Compile(rs, hashKey)
		}
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || len(verr.Fields) == 0 || verr.Fields[0].Field != field {
			t.Errorf("%.60s…: err %v, want one naming %q", doc, err, field)
		}
	}
	if _, err := rules.Parse([]byte(`{"privacy": [], "masking": []}`)); err == nil {
		t.Error("an unknown field is accepted")
	}
}

// A pattern catastrophic in a backtracking engine runs in linear time in
// RE2's: it is accepted, and a long input that would take a backtracking
// engine ages is scrubbed at once.
func TestHostilePatternRunsLinear(t *testing.T) {
	c := compile(t, `{"privacy": [{"id": "p", "select": ["**"], "match": {"pattern": "(a+)+$"}, "action": {"type": "mask"}}]}`)
	m := domain.Message{Path: "/", Request: domain.Content{Body: strings.Repeat("a", 1<<16) + "!"}}
	if out := c.Apply(&m, rules.SourceAPI); len(out.Changes) != 0 {
		t.Errorf("matched %v", out.Changes)
	}
}

// Every detector finds what it names inside a longer text (its cheap hint
// lets it through), and leaves near misses alone.
func TestDetectorsFindWhatTheyName(t *testing.T) {
	for name, tc := range map[string]struct{ found, missed string }{
		"email":           {"write to ana.lopez+x@mail.example.com today", "ana at example dot com"},
		"card_number":     {"card 4111 1111 1111 1111 ok", "card 4111 1111 1111 1112 ok"},
		"iban":            {"pay DE89 3704 0044 0532 0130 00 now", "pay DE00 3704 0044 0532 0130 00 now"},
		"jwt":             {"t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJ only"},
		"bearer_token":    {"Authorization: Bearer abc.def-ghi", "no scheme here"},
		"aws_access_key":  {"key AKIAIOSFODNN7EXAMPLE end", "key AKIAIOSFODNN7 end"},
		"github_token":    {"ghp_" + strings.Repeat("a", 36), "ghp_short"},
		"stripe_key":      {"sk_live_" + strings.Repeat("Z", 24), "sk_prod_" + strings.Repeat("Z", 24)},
		"pem_private_key": {"-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----"},
		"us_ssn":          {"ssn 123-45-6789.", "ssn 000-45-6789."},
		"ipv4":            {"from 203.0.113.7:443", "version 1.2.3"},
		"ipv6":            {"from 2001:db8::1 ok", "at 12:00 ok"},
	} {
		c := compile(t, fmt.Sprintf(`{"privacy": [{"id": "d", "select": ["**"], "match": {"detector": %q}, "action": {"type": "mask"}}]}`, name))
		for text, want := range map[string]bool{tc.found: true, tc.missed: false} {
			m := domain.Message{Path: "/", Request: domain.Content{Body: text}}
			if got := len(c.Apply(&m, rules.SourceAPI).Changes) > 0; got != want {
				t.Errorf("%s in %q: found %v, want %v", name, text, got, want)
			}
		}
	}
	if len(rules.DetectorNames()) != 12 {
		t.Errorf("detectors %v: a new one needs a case here", rules.DetectorNames())
	}
}

// A pattern is run only on values holding the text every match holds: the
// shortcut never hides a match.
func TestPatternShortcutKeepsEveryMatch(t *testing.T) {
	for pattern, texts := range map[string][]string{
		`\bORD-\d{8}\b`:            {"see ORD-12345678.", "ORD-1234567"},
		`(?i)passport:\s*(\w+)`:    {"PASSPORT: X1", "paſſport: X1"}, // folded: no shortcut
		`(ab)+c|xyz`:               {"ababc", "xyz", "abxyz"},
		`/users/(\d+)`:             {"/v1/users/42", "/v1/users/x"},
		`a{2,}b`:                   {"caab", "ab"},
		`[0-9]+-[0-9]+`:            {"12-34", "12 34"},
		`(?:key|token)=([^&]{4,})`: {"token=abcd", "key=ab"},
		`(?i)-id=\d`:               {"X-ID=5", "x-iD=5", "x_id=5"},
		`(?i)bearer x`:             {"BEARER X", "Bearer-x"},
	} {
		c := compile(t, fmt.Sprintf(`{"privacy": [{"id": "p", "select": ["**"], "match": {"pattern": %q}, "action": {"type": "mask"}}]}`, pattern))
		re := regexp.MustCompile(pattern)
		for _, text := range texts {
			m := domain.Message{Path: "/", Request: domain.Content{Body: text}}
			if got, want := len(c.Apply(&m, rules.SourceAPI).Changes) > 0, re.MatchString(text); got != want {
				t.Errorf("%s on %q: changed %v, the pattern matches %v", pattern, text, got, want)
			}
		}
	}
}

// A body's fields are removed and changed as a walk of its decoded value
// would, whatever the nesting, the white space and which members go: the
// text rewritten in place stays the JSON it claims to be.
func TestBodyWalkAgreesWithTheDecodedValue(t *testing.T) {
	c := compile(t, `{"privacy": [
	  {"id": "drop-x", "select": ["body.**.x"], "action": {"type": "remove"}},
	  {"id": "secret", "select": ["body"], "match": {"pattern": "secret"}, "action": {"type": "mask"}}]}`)
	rng := rand.New(rand.NewPCG(7, 41))
	space := func() string { return []string{"", " ", "\n  ", "\t"}[rng.IntN(4)] }
	var gen func(depth int) string
	gen = func(depth int) string {
		switch n := rng.IntN(10); {
		case depth < 4 && n < 3:
			var members []string
			for range rng.IntN(5) {
				members = append(members, space()+`"`+[]string{"x", "y", "z"}[rng.IntN(3)]+`"`+space()+":"+space()+gen(depth+1)+space())
			}
			return "{" + strings.Join(members, ",") + space() + "}"
		case depth < 4 && n < 5:
			var elements []string
			for range rng.IntN(5) {
				elements = append(elements, space()+gen(depth+1)+space())
			}
			return "[" + strings.Join(elements, ",") + space() + "]"
		case n < 7:
			return `"` + []string{"a", "secret", "a secret and secret", "é", `q\"uote`}[rng.IntN(5)] + `"`
		case n < 8:
			return []string{"null", "true", "1.50", "-2"}[rng.IntN(4)]
		}
		return `"plain"`
	}
	// expect is what the two rules do to a decoded value.
	var expect func(v any) any
	expect = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, member := range v {
				_, container := member.(map[string]any)
				_, array := member.([]any)
				if k == "x" && member != nil && !container && !array {
					delete(v, k) // duplicate keys: the last one decoded stands in for all
					continue
				}
				v[k] = expect(member)
			}
		case []any:
			for i := range v {
				v[i] = expect(v[i])
			}
		case string:
			return strings.ReplaceAll(v, "secret", domain.Mask)
		}
		return v
	}
	decode := func(s string) (any, error) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v)
	}
	for i := range 3000 {
		body := gen(0)
		if !strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "[") {
			continue
		}
		if strings.Count(body, `"x"`) > 0 && hasDuplicateKeys(body) {
			continue // the decoded value keeps one of them; the walk removes each
		}
		m := domain.Message{ID: fmt.Sprint(i), Path: "/", Request: domain.Content{Body: body, ContentType: "application/json"}}
		c.Apply(&m, rules.SourceAPI)
		got, err := decode(m.Request.Body)
		if err != nil {
			t.Fatalf("%s became %s, not JSON: %v", body, m.Request.Body, err)
		}
		want, _ := decode(body)
		if want = expect(want); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s became %s, want the value %v", body, m.Request.Body, want)
		}
	}
}

// hasDuplicateKeys reports whether an object of the JSON text s repeats a key.
func hasDuplicateKeys(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	var stack []map[string]bool
	expectKey := []bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = append(expectKey, true)
				continue
			case '[':
				stack = append(stack, nil)
				expectKey = append(expectKey, false)
				continue
			default:
				stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			}
		case string:
			if top := len(stack) - 1; top >= 0 && stack[top] != nil && expectKey[top] {
				if stack[top][tok] {
					return true
				}
				stack[top][tok] = true
				expectKey[top] = false
				continue
			}
		}
		if top := len(stack) - 1; top >= 0 && stack[top] != nil {
			expectKey[top] = true
		}
	}
}

// A dropped exchange is still counted: Apply makes it a tally, scrubbed by
// the privacy rules like a stored message, without headers and bodies; the
// one a sample keeps carries its rate.
func TestDroppedMessagesBecomeScrubbedTallies(t *testing.T) {
	c := compile(t, `{
	  "ingest": [
	    {"id": "health", "scope": {"paths": ["/healthz"]}, "action": "drop"},
	    {"id": "search", "scope": {"paths": ["/v1/search"]}, "action": "sample", "sample_rate": 4}
	  ],
	  "privacy": [{"id": "drop-token", "select": ["query.token"], "action": {"type": "remove"}}]
	}`)
	m := domain.Message{ID: "0193a0c4-0000-7000-8000-00000000000a", Name: "shop", Method: "GET", Path: "/healthz?token=9f8e7d&x=1", StatusCode: 200,
		Request:  domain.Content{Body: "req", Header: domain.Header{"X-Id": {"a"}}, Size: 3, ContentType: "text/plain"},
		Response: domain.Content{Body: "resp", Size: 4}}
	out := c.Apply(&m, rules.SourceAPI)
	if out.Stored || !m.Tally || m.Path != "/healthz?x=1" || m.Request.Body != "" || m.Request.Header != nil || m.Request.Size != 0 ||
		m.Response.Body != "" || m.Name != "shop" || m.StatusCode != 200 || m.SampleRate != 0 {
		t.Errorf("dropped: stored %v, message %+v", out.Stored, m)
	}
	var kept, tallies int
	for i := range 100 {
		m := domain.Message{ID: fmt.Sprintf("0193a0c4-0000-7000-8000-%012d", i), Path: "/v1/search", StatusCode: 200, Response: domain.Content{Body: "b"}}
		switch out := c.Apply(&m, rules.SourceAPI); {
		case out.Stored && m.SampleRate == 4 && !m.Tally && m.Response.Body == "b":
			kept++
		case !out.Stored && m.Tally && m.SampleRate == 0 && m.Response.Body == "":
			tallies++
		default:
			t.Fatalf("sampled: stored %v, message %+v", out.Stored, m)
		}
	}
	if kept == 0 || tallies == 0 || kept+tallies != 100 {
		t.Errorf("kept %d, tallied %d", kept, tallies)
	}
}

// Members removed one after another behind a kept one each take the
// separator before them: a second one once took it from the kept member's
// end again, behind what the first had dropped (a panic, slice bounds out
// of range, and no ingest of such a body).
func TestMembersRemovedInARowAfterOneKept(t *testing.T) {
	c := compile(t, `{"privacy": [
	  {"id": "drop", "select": ["body.**.x", "body.**.w"], "action": {"type": "remove"}},
	  {"id": "drop-gone", "select": ["body"], "match": {"pattern": "gone"}, "action": {"type": "remove"}},
	  {"id": "mask", "select": ["body.**.y"], "action": {"type": "mask"}}]}`)
	for body, want := range map[string]string{
		`{"y":1,"x":2,"w":3}`:             `{"y":"***"}`,
		`{"y":1,"x":2,"w":3,"z":4}`:       `{"y":"***","z":4}`,
		`{"z":1, "x":2, "w":3, "x":4}`:    `{"z":1}`,
		`{"a":{"y":1,"x":2,"w":3},"b":5}`: `{"a":{"y":"***"},"b":5}`,
		`[1,"gone","gone",2,"gone"]`:      `[1,2]`,
		`["gone",1,"gone","gone"]`:        `[1]`,
		`{"x":1,"w":2,"y":3,"x":4,"w":5}`: `{"y":"***"}`,
	} {
		m := domain.Message{ID: "x", Path: "/", Request: domain.Content{Body: body, ContentType: "application/json"}}
		c.Apply(&m, rules.SourceAPI)
		if want = strings.ReplaceAll(want, "***", domain.Mask); m.Request.Body != want {
			t.Errorf("%s became %s, want %s", body, m.Request.Body, want)
		}
	}
}

// A form's '+' is a space once decoded: a private key sent as
// "BEGIN+RSA+PRIVATE+KEY" is one, though the body's text holds no
// "PRIVATE KEY" (the shortcut that rules a detector out by the whole text
// once let it through).
func TestAFormsPlusIsReadAsASpace(t *testing.T) {
	c := compile(t, `{"privacy": [{"id": "pem", "select": ["body"], "match": {"detector": "pem_private_key"}, "action": {"type": "remove"}}]}`)
	m := domain.Message{ID: "x", Path: "/", Request: domain.Content{ContentType: "application/x-www-form-urlencoded",
		Body: "a=1&key=-----BEGIN+RSA+PRIVATE+KEY-----MIIB-----END+RSA+PRIVATE+KEY-----"}}
	c.Apply(&m, rules.SourceAPI)
	if m.Request.Body != "a=1" {
		t.Errorf("the form became %q, want the key removed", m.Request.Body)
	}
}

// A later rule sees what an earlier rule wrote, in a body whose text held
// none of the later rule's match: the e-mail a replacement brings is masked
// as it would be in a body that held one before.
func TestALaterRuleSeesWhatAnEarlierRuleWrote(t *testing.T) {
	c := compile(t, `{"privacy": [
		{"id": "note", "select": ["body.note"], "action": {"type": "replace", "with": "ask admin@example.com"}},
		{"id": "email", "select": ["**"], "match": {"detector": "email"}, "action": {"type": "mask"}}]}`)
	// The second body's escape has it walked value by value, as every body
	// was before the whole-text shortcut.
	for _, body := range []string{`{"note":"hello","n":1}`, `{"note":"hel\"lo","n":1}`} {
		m := domain.Message{ID: "x", Path: "/", Request: domain.Content{ContentType: "application/json", Body: body}}
		c.Apply(&m, rules.SourceAPI)
		if strings.Contains(m.Request.Body, "admin@example.com") || !strings.Contains(m.Request.Body, `"note":"ask `) {
			t.Errorf("%s became %s, want the note replaced and the e-mail the replacement brought masked", body, m.Request.Body)
		}
	}
}
