package rules

import (
	"encoding/json"
	"slices"
	"time"
)

// Version is one saved version of an account's rule set: the rules, and who
// saved them, when and why. Versions are numbered 1, 2, … in the order they
// were saved; 0 is the version of an account that never had rules.
type Version struct {
	Account string
	Number  int64
	Rules   RuleSet
	KeyID   string // the id of the API key that saved it
	Reason  string
	At      time.Time
}

// Difference is what a version changed from the one before, by rule id (ids
// are unique across the kinds of a rule set).
type Difference struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
	// Reordered says rules both versions hold alike run in another order: privacy
	// rules act on what the ones before them left, and ingest rules stop at
	// the first match.
	Reordered bool `json:"reordered"`
}

// Diff compares two rule sets rule by rule: a rule whose id is in both but
// whose kind or any field differs is changed.
func Diff(before, after RuleSet) Difference {
	old, next := rulesByID(before), rulesByID(after)
	d := Difference{Added: []string{}, Removed: []string{}, Changed: []string{}}
	for _, r := range next.order {
		switch prior, ok := old.text[r]; {
		case !ok:
			d.Added = append(d.Added, r)
		case prior != next.text[r]:
			d.Changed = append(d.Changed, r)
		}
	}
	for _, r := range old.order {
		if _, ok := next.text[r]; !ok {
			d.Removed = append(d.Removed, r)
		}
	}
	unchanged := func(ids []string) []string { // in both, alike: of one kind
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return old.text[id] != next.text[id] })
	}
	d.Reordered = !slices.Equal(unchanged(old.order), unchanged(next.order))
	return d
}

// ruleTexts are a rule set's rules by id, each as its kind and JSON, in the
// order they run (kind by kind).
type ruleTexts struct {
	order []string
	text  map[string]string
}

func rulesByID(rs RuleSet) ruleTexts {
	out := ruleTexts{text: map[string]string{}}
	add := func(kind, id string, rule any) {
		raw, _ := json.Marshal(rule) // rule structs always encode
		if _, dup := out.text[id]; !dup {
			out.order = append(out.order, id)
		}
		out.text[id] = kind + string(raw)
	}
	for _, r := range rs.Privacy {
		add("privacy", r.ID, r)
	}
	for _, r := range rs.Ingest {
		add("ingest", r.ID, r)
	}
	for _, r := range rs.Retention {
		add("retention", r.ID, r)
	}
	for _, k := range rs.Subjects {
		add("subjects", k.ID, k)
	}
	return out
}
