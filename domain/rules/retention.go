package rules

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// retentionRule is a compiled RetentionRule.
type retentionRule struct {
	id           string
	field        string
	scope        scope
	applications []string
	keep, bodies time.Duration
}

func compileRetention(fe *domain.FieldErrors, field string, r RetentionRule) (retentionRule, bool) {
	before := len(fe.List)
	if len(r.Scope.Domains)+len(r.Scope.Methods)+len(r.Scope.Sources) > 0 {
		fe.Add(field+".scope", "of a retention rule names applications, paths and routes alone")
	}
	p := retentionRule{id: r.ID, field: field, scope: compileScope(fe, field, r.Scope), applications: r.Scope.Applications}
	var ok bool
	if p.keep, ok = parseRetention(r.Keep); !ok {
		fe.Add(field+".keep", "must be a duration such as 7d, 36h or 90m, at most 10 years")
	}
	if r.Bodies != "" {
		if p.bodies, ok = parseRetention(r.Bodies); !ok || p.bodies > p.keep {
			fe.Add(field+".bodies", "must be a duration such as 2d, at most keep")
		}
	}
	return p, len(fe.List) == before
}

// checkRetentionPrecedence refuses two rules that may both hold a message
// with nothing to say which wins: the most specific wins (routes and paths
// over applications over the account's default), so rules of one specificity
// must name applications no other of them names (or, for route and path
// rules, be told apart by their applications).
func checkRetentionPrecedence(fe *domain.FieldErrors, rules []retentionRule) {
	for i, a := range rules {
		for _, b := range rules[:i] {
			if a.scope.specificity != b.scope.specificity {
				continue
			}
			overlap := len(a.applications) == 0 || len(b.applications) == 0 ||
				slices.ContainsFunc(a.applications, func(name string) bool { return slices.Contains(b.applications, name) })
			if overlap {
				fe.Add(a.field, "may hold the same messages as %s (%s), and neither is more specific: give them distinct applications", b.field, b.id)
			}
		}
	}
}

// retentionOf is the rule that sets m's retention: the most specific that
// holds it, or nil.
func (c *Compiled) retentionOf(m *domain.Message, src Source) *retentionRule {
	var best *retentionRule
	for i := range c.retention {
		r := &c.retention[i]
		if r.scope.matches(m, src) && (best == nil || r.scope.specificity > best.scope.specificity) {
			best = r
		}
	}
	return best
}

func (r *retentionRule) String() string { return fmt.Sprintf("%s (%s)", r.id, r.field) }

// RuleRetention is the current retention of the rule id: how long its
// messages and their bodies are kept (bodies equal to keep when the rule
// says none); ok false when the set has no such rule. The purge applies it
// to what the rule's class holds (ports.RetentionPurger).
func (c *Compiled) RuleRetention(id string) (keep, bodies time.Duration, ok bool) {
	if c == nil {
		return 0, 0, false
	}
	for _, r := range c.retention {
		if r.id == id {
			return r.keep, cmp.Or(r.bodies, r.keep), true
		}
	}
	return 0, 0, false
}

// CheckRetentionCap refuses a set whose rules keep messages longer than
// limit, the store's (REQLOG_SQLITE_MAX_RETENTION with the sqlite store):
// a *domain.ValidationError naming each rule's keep.
func (c *Compiled) CheckRetentionCap(limit time.Duration) error {
	if c == nil || limit <= 0 {
		return nil
	}
	var fe domain.FieldErrors
	for _, r := range c.retention {
		if r.keep > limit {
			fe.Add(r.field+".keep", "must be at most %s, the longest retention the store keeps", formatRetention(limit))
		}
	}
	return fe.Err("the rule set is invalid")
}

// formatRetention writes d as a rule does: whole days as such ("3660d"),
// whole hours ("36h"), else minutes.
func formatRetention(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}
