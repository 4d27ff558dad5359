package rules_test

import (
	"slices"
	"testing"

	"github.com/reqlog/reqlog/domain/rules"
)

func TestDiffByRuleID(t *testing.T) {
	parse := func(doc string) rules.RuleSet {
		rs, err := rules.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	before := parse(`{
		"privacy": [{"id": "emails", "select": ["body"], "match": {"detector": "email"}, "action": {"type": "mask"}},
		            {"id": "token", "select": ["query.token"], "action": {"type": "remove"}}],
		"ingest": [{"id": "health", "scope": {"paths": ["/healthz"]}, "action": "drop"}],
		"retention": [{"id": "payments", "scope": {"applications": ["payments"]}, "keep": "7d"}]}`)
	after := parse(`{
		"privacy": [{"id": "emails", "select": ["body"], "match": {"detector": "email"}, "action": {"type": "hash"}},
		            {"id": "card", "select": ["body.**"], "match": {"detector": "card_number"}, "action": {"type": "partial", "keep_last": 4}}],
		"ingest": [{"id": "health", "scope": {"paths": ["/healthz"]}, "action": "drop"}],
		"retention": [{"id": "token", "scope": {"applications": ["auth"]}, "keep": "1d"}]}`)
	d := rules.Diff(before, after)
	if !slices.Equal(d.Added, []string{"card"}) || !slices.Equal(d.Removed, []string{"payments"}) ||
		!slices.Equal(d.Changed, []string{"emails", "token"}) || d.Reordered {
		t.Errorf("diff %+v: want card added, payments removed, emails (its action) and token (its kind) changed", d)
	}
	if d := rules.Diff(after, after); len(d.Added)+len(d.Removed)+len(d.Changed) != 0 || d.Reordered {
		t.Errorf("a set against itself: %+v", d)
	}
	swapped := after
	swapped.Privacy = []rules.PrivacyRule{after.Privacy[1], after.Privacy[0]}
	if d := rules.Diff(after, swapped); len(d.Changed) != 0 || !d.Reordered {
		t.Errorf("two privacy rules swapped: %+v, want reordered and nothing changed", d)
	}
	if d := rules.Diff(rules.RuleSet{}, before); len(d.Added) != 4 || d.Removed == nil {
		t.Errorf("the first version adds every rule, and lists are never null: %+v", d)
	}
	if !after.UsesHashKey() || before.UsesHashKey() {
		t.Error("UsesHashKey: a hash action needs the key, masking does not")
	}
}
