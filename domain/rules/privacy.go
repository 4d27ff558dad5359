package rules

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
)

// privacyRule is a compiled PrivacyRule.
type privacyRule struct {
	id          string
	scope       scope
	selectors   []selector
	except      []selector
	pattern     *regexp.Regexp
	literal     literal    // every match of pattern holds it
	needs       byteCounts // every match of pattern or detector holds at least these counts of bytes
	group       int
	detector    *detector
	action      Action
	dryRun      bool
	readsFields [3]bool // by side: a selector needs the body's fields
	reach       uint16  // the classes of places its selectors may pick
	submatches  bool    // the action needs the match's groups
}

func compilePrivacy(fe *domain.FieldErrors, field string, r PrivacyRule) (privacyRule, bool) {
	before := len(fe.List)
	p := privacyRule{id: r.ID, scope: compileScope(fe, field, r.Scope), action: r.Action, dryRun: compileMode(fe, field, r.Mode)}
	if len(r.Select) == 0 || len(r.Select) > maxListItems {
		fe.Add(field+".select", "must list 1 to %d selectors", maxListItems)
	}
	for list, out := range map[string]*[]selector{"select": &p.selectors, "except": &p.except} {
		texts := r.Select
		if list == "except" {
			texts = r.Except
		}
		for i, text := range texts {
			s, err := parseSelector(text)
			if err != nil {
				fe.Add(fmt.Sprintf("%s.%s[%d]", field, list, i), "%s", err)
				continue
			}
			*out = append(*out, s)
			if list == "select" {
				p.reach |= s.reach()
				if s.readsFields() {
					p.readsFields[s.side] = true
				}
			}
		}
	}
	switch {
	case r.Match.Pattern != "" && r.Match.Detector != "":
		fe.Add(field+".match", "names a pattern or a detector, not both")
	case r.Match.Pattern != "":
		p.literal, p.needs = requiredLiteral(r.Match.Pattern), patternNeeds(r.Match.Pattern).packed()
		if p.pattern = compilePattern(fe, field+".match.pattern", r.Match.Pattern); p.pattern != nil &&
			(r.Match.Group < 0 || r.Match.Group > p.pattern.NumSubexp()) {
			fe.Add(field+".match.group", "must be 0 to %d, the pattern's groups", p.pattern.NumSubexp())
		}
		p.group = r.Match.Group
	case r.Match.Detector != "":
		d, ok := detectors[r.Match.Detector]
		if !ok {
			fe.Add(field+".match.detector", "must be one of %s", strings.Join(DetectorNames(), ", "))
		}
		p.detector, p.needs = &d, d.needs
	case r.Match.Group != 0:
		fe.Add(field+".match.group", "needs a pattern")
	}
	switch r.Action.Type {
	case ActionMask, ActionHash, ActionRemove:
	case ActionReplace:
		if len(r.Action.With) > 256 {
			fe.Add(field+".action.with", "must be at most 256 bytes")
		}
	case ActionPartial:
		if r.Action.KeepFirst < 0 || r.Action.KeepLast < 0 || r.Action.KeepFirst+r.Action.KeepLast == 0 || r.Action.KeepFirst+r.Action.KeepLast > 64 {
			fe.Add(field+".action", "partial keeps 1 to 64 characters in all (keep_first, keep_last)")
		}
	case ActionKeepScheme:
		if p.pattern == nil && (p.detector == nil || !p.detector.scheme) {
			fe.Add(field+".action.type", "keep_scheme needs the bearer_token detector, or a pattern whose first group is the scheme")
		}
	default:
		fe.Add(field+".action.type", "must be mask, replace, hash, remove, partial or keep_scheme")
	}
	p.submatches = r.Match.Group > 0 || r.Action.Type == ActionKeepScheme
	if r.Action.Type != ActionReplace && r.Action.With != "" {
		fe.Add(field+".action.with", "is for replace alone")
	}
	return p, len(fe.List) == before
}

// selects reports whether the rule picks the value at l.
func (p *privacyRule) selects(l *location) bool {
	return anyMatches(p.selectors, l) && !anyMatches(p.except, l)
}

func anyMatches(selectors []selector, l *location) bool {
	for i := range selectors {
		if selectors[i].matches(l) {
			return true
		}
	}
	return false
}

// spans returns where in value the rule's match is, as submatch index lists;
// counts are value's (countText).
func (p *privacyRule) spans(value string, counts byteCounts) [][]int {
	switch {
	case p.pattern != nil && (!counts.covers(p.needs) || !p.literal.holds(value)):
		return nil // the pattern cannot match: spare running it
	case p.pattern != nil && p.submatches:
		return p.pattern.FindAllStringSubmatchIndex(value, -1)
	case p.pattern != nil:
		return p.pattern.FindAllStringIndex(value, -1) // cheaper: no groups kept
	case p.detector != nil:
		return p.detector.findCounted(value, counts)
	}
	if value == "" {
		return nil
	}
	return [][]int{{0, len(value)}}
}

// scrub returns value with the rule's action done on each match, how many
// matches there were, and whether the value goes; counts are value's.
func (p *privacyRule) scrub(value string, counts byteCounts, hasher *keyedHash) (string, int, bool) {
	spans := p.spans(value, counts)
	n := 0
	var b strings.Builder
	last := 0
	for _, m := range spans {
		start, end := m[0], m[1]
		if p.group > 0 {
			if start, end = m[2*p.group], m[2*p.group+1]; start < 0 {
				continue
			}
		}
		if end == start || start < last {
			continue // an empty match changes nothing
		}
		n++
		if p.action.Type == ActionRemove {
			return "", n, true
		}
		b.WriteString(value[last:start])
		b.WriteString(p.replacement(value[start:end], m, start, hasher))
		last = end
	}
	if n == 0 {
		return value, 0, false
	}
	b.WriteString(value[last:])
	return b.String(), n, false
}

// replacement is what the action puts in place of match, found at start with
// its submatches m.
func (p *privacyRule) replacement(match string, m []int, start int, hasher *keyedHash) string {
	switch p.action.Type {
	case ActionReplace:
		return p.action.With
	case ActionHash:
		return hasher.value(match)
	case ActionPartial:
		runes := []rune(match)
		first, lastN := min(p.action.KeepFirst, len(runes)), min(p.action.KeepLast, len(runes))
		if first+lastN >= len(runes) {
			return strings.Repeat("*", len(runes)) // too short to keep any of it
		}
		return string(runes[:first]) + strings.Repeat("*", len(runes)-first-lastN) + string(runes[len(runes)-lastN:])
	case ActionKeepScheme:
		if len(m) >= 4 && m[2] >= start && m[3] > m[2] {
			scheme := match[m[2]-start : m[3]-start]
			if utf8.ValidString(scheme) {
				return scheme + "***"
			}
		}
	}
	return domain.Mask
}
