package rules_test

import (
	"slices"
	"testing"

	"github.com/reqlog/reqlog/domain/rules"
)

// A re-scrub runs the enforced privacy rules a stored message has not been
// through: added or changed since the version that wrote it, in the
// current order; never one both hold alike (a hash would hash its hash),
// nor a dry run. A message of unknown source meets source-scoped rules too.
func TestRetroactive(t *testing.T) {
	mask := rules.Action{Type: rules.ActionMask}
	applied := rules.RuleSet{Privacy: []rules.PrivacyRule{
		{ID: "same", Select: []string{"headers.x-partner"}, Action: rules.Action{Type: rules.ActionHash}},
		{ID: "changed", Select: []string{"query.token"}, Action: mask},
	}}
	current := rules.RuleSet{
		Privacy: []rules.PrivacyRule{
			{ID: "added", Select: []string{"body"}, Match: rules.Match{Detector: "email"}, Action: mask},
			{ID: "same", Select: []string{"headers.x-partner"}, Action: rules.Action{Type: rules.ActionHash}},
			{ID: "changed", Select: []string{"query.token"}, Action: rules.Action{Type: rules.ActionRemove}},
			{ID: "dry", Select: []string{"**"}, Action: mask, Mode: rules.ModeDryRun},
			{ID: "proxied", Scope: rules.Scope{Sources: []rules.Source{rules.SourceProxy}}, Select: []string{"path"}, Action: mask},
		},
		Ingest: []rules.IngestRule{{ID: "drop", Scope: rules.Scope{Paths: []string{"/healthz"}}, Action: rules.IngestDrop}},
	}
	ids := func(rs rules.RuleSet) []string {
		var out []string
		for _, r := range rs.Privacy {
			out = append(out, r.ID)
		}
		return out
	}
	known := rules.Retroactive(current, applied, true)
	if got, want := ids(known), []string{"added", "changed", "proxied"}; !slices.Equal(got, want) || len(known.Ingest) != 0 {
		t.Errorf("Retroactive = %v (ingest %v), want %v and no ingest rule", got, known.Ingest, want)
	}
	if s := known.Privacy[2].Scope.Sources; !slices.Equal(s, []rules.Source{rules.SourceProxy}) {
		t.Errorf("a known source keeps the scope's sources: %v", s)
	}
	unknown := rules.Retroactive(current, applied, false)
	if s := unknown.Privacy[2].Scope.Sources; s != nil {
		t.Errorf("an unknown source drops the scope's sources, got %v", s)
	}
	if s := current.Privacy[4].Scope.Sources; len(s) != 1 {
		t.Errorf("Retroactive changed the current set's rule: %v", s)
	}
	if got := ids(rules.Retroactive(current, rules.RuleSet{}, true)); !slices.Equal(got, []string{"added", "same", "changed", "proxied"}) {
		t.Errorf("over a message written under no rules: %v, want every enforced rule", got)
	}
	if _, err := rules.Compile(unknown, []byte("a-test-hash-key-of-16")); err != nil {
		t.Errorf("the retroactive set does not compile: %v", err)
	}
}
