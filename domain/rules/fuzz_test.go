package rules_test

import (
	"strings"
	"testing"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/domain/rules"
)

// Apply never panics; a JSON body stays JSON; no e-mail address survives a
// rule that masks them everywhere, wherever the fuzzer hides it.
func FuzzApply(f *testing.F) {
	m := signup()
	f.Add(m.Path, m.Request.Body, m.Response.Body, "x-any")
	f.Add("/a?b=%zz&c", `{"a":"{\"b\":[1,\"x@y.io\"]}"}`, "a=b&c=%40", "X")
	f.Add("/", `[1,2,{"k":null,"e":"a@b.cc"}]`, `{"broken":`, "")
	c := compile(f, signupRules+"")
	every := compile(f, `{"privacy": [{"id": "e", "select": ["**"], "match": {"detector": "email"}, "action": {"type": "mask"}}]}`)
	removing := compile(f, `{"privacy": [{"id": "r", "select": ["body.**.k", "body.*"], "match": {"pattern": "[0-9a]"}, "action": {"type": "remove"}}]}`)
	f.Fuzz(func(t *testing.T, path, reqBody, respBody, header string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		for _, rs := range []*rules.Compiled{c, every, removing} {
			m := domain.Message{ID: "x", Path: path, Method: "POST",
				Request:  domain.Content{Body: reqBody, ContentType: "application/json", Header: domain.Header{"X-Fuzz": {header}}},
				Response: domain.Content{Body: respBody, ContentType: "application/x-www-form-urlencoded"}}
			rs.Apply(&m, rules.SourceProxy)
			if jsonbytes.IsValid(strings.TrimLeft(reqBody, " \t\r\n\ufeff")) && !jsonbytes.IsValid(strings.TrimLeft(m.Request.Body, " \t\r\n\ufeff")) && m.Request.Body != rules.Withheld {
				t.Fatalf("a JSON body became %q", m.Request.Body)
			}
			if rs == every {
				for _, v := range []string{m.Path, m.Request.Body, m.Response.Body, m.Request.Header.Clone()["X-Fuzz"][0]} {
					if strings.Contains(v, "@") && emailIn(v) {
						t.Fatalf("an address survives in %q", v)
					}
				}
			}
		}
	})
}

// emailIn reports whether the email detector finds an address in v (by
// applying it again: a masked value has none).
func emailIn(v string) bool {
	rs, _ := rules.Compile(rules.RuleSet{Privacy: []rules.PrivacyRule{{ID: "e", Select: []string{"**"}, Match: rules.Match{Detector: "email"}, Action: rules.Action{Type: "mask"}}}}, nil)
	m := domain.Message{Path: "/", Request: domain.Content{Body: v}}
	return len(rs.Apply(&m, rules.SourceAPI).Changes) > 0
}
