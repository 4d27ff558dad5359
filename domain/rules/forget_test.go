package rules_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/reqlog/reqlog/domain/rules"
)

// forgetting forgets the subjects of its hashes with one future.
type forgetting map[string]rules.Forget

func (f forgetting) Forgets(hash string) rules.Forget { return f[hash] }

func TestForgettingDropsOrRedactsAnErasedSubject(t *testing.T) {
	c := compile(t, `{"subjects": [{"id": "user", "select": ["request.headers.x-user-id"]}, {"id": "emails", "detector": "email"}]}`)
	ana, user := rules.SubjectHash(hashKey, "ana@example.com"), rules.SubjectHash(hashKey, "u-1001")

	m := signup()
	m.Request.Header["X-User-Id"] = []string{"U-1001"}
	if out := c.ApplyForgetting(&m, rules.SourceAPI, forgetting{user: rules.ForgetDrop}); out.Stored || out.Forgotten != rules.ForgetDrop || out.Subjects != nil {
		t.Errorf("a forgotten subject dropped: Stored %v, Forgotten %v, Subjects %v; want false, drop, none", out.Stored, out.Forgotten, out.Subjects)
	}

	m = signup()
	out := c.ApplyForgetting(&m, rules.SourceAPI, forgetting{ana: rules.ForgetRedact})
	if !out.Stored || out.Forgotten != rules.ForgetRedact {
		t.Fatalf("a forgotten subject redacted: Stored %v, Forgotten %v; want true, redact", out.Stored, out.Forgotten)
	}
	if strings.Contains(m.Request.Body, "ana@") || strings.Contains(m.Response.Body, "ana%40") || strings.Contains(m.Response.Body, "ana@") {
		t.Errorf("ana's address is still stored: %s | %s", m.Request.Body, m.Response.Body)
	}
	if !strings.Contains(m.Request.Body, rules.Redacted) || !strings.Contains(m.Request.Body, "bob@example.org") {
		t.Errorf("the redaction replaced ana's address alone: %s", m.Request.Body)
	}
	if slices.Contains(out.Subjects, ana) || !slices.Contains(out.Subjects, rules.SubjectHash(hashKey, "bob@example.org")) {
		t.Errorf("subjects after the redaction: %v; want bob's and not ana's", out.Subjects)
	}

	m = signup()
	if out := c.ApplyForgetting(&m, rules.SourceAPI, forgetting{"0123": rules.ForgetDrop}); !out.Stored || out.Forgotten != rules.ForgetNone {
		t.Errorf("no forgotten subject: Stored %v, Forgotten %v; want true, none", out.Stored, out.Forgotten)
	}
}
