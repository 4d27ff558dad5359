package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// subjectKey is a compiled SubjectKey.
type subjectKey struct {
	id        string
	selectors []selector
	detector  *detector
}

func compileSubject(fe *domain.FieldErrors, field string, k SubjectKey) (subjectKey, bool) {
	before := len(fe.List)
	p := subjectKey{id: k.ID}
	if (len(k.Select) == 0) == (k.Detector == "") {
		fe.Add(field, "names selectors or a detector, one of them")
	}
	for i, text := range k.Select {
		s, err := parseSelector(text)
		if err != nil {
			fe.Add(fmt.Sprintf("%s.select[%d]", field, i), "%s", err)
			continue
		}
		p.selectors = append(p.selectors, s)
	}
	if k.Detector != "" {
		d, ok := detectors[k.Detector]
		if !ok {
			fe.Add(field+".detector", "must be one of %s", strings.Join(DetectorNames(), ", "))
		}
		p.detector = &d
	}
	return p, len(fe.List) == before
}

// NormalizeSubject is a subject value as it is hashed: without surrounding
// space, in lower case, so that "Ana@Example.com " names who "ana@example.com"
// does.
func NormalizeSubject(value string) string { return strings.ToLower(strings.TrimSpace(value)) }

// Subjects returns the keyed hashes of m's subject values, each once, as
// Apply finds them (before any privacy rule): a backfill indexes a stored
// message by them.
func (c *Compiled) Subjects(m *domain.Message) []string { return c.subjectsOf(m) }

// subjectsOf returns the hashes of the subject values of m, each once. It
// only reads m.
func (c *Compiled) subjectsOf(m *domain.Message) []string {
	if len(c.subjects) == 0 {
		return nil
	}
	var out, seen []string // seen: the values hashed, normalised, so that a repeat is not hashed again
	keep := func(value string) string {
		if normal := NormalizeSubject(value); !slices.Contains(seen, normal) {
			seen = append(seen, normal)
			if h := c.hasher.normalSubject(normal); !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
		return value
	}
	walkMessageReading(m, func(l *location, value string) (string, bool) {
		return c.subjectsAt(l, value, keep), false
	}, func(side) bool { return false }, func(s side, body, contentType string) bool {
		return c.readAnchoredBody(s, body, contentType, keep)
	})
	return out
}

// eachSubject calls replace with each subject value of m (a selected value
// whole, or a detector's match in it), not blank, and writes back what it
// returns.
func (c *Compiled) eachSubject(m *domain.Message, replace func(value string) string) {
	walkMessage(m, func(l *location, value string) (string, bool) {
		return c.subjectsAt(l, value, replace), false
	}, func(side) bool { return false })
}

// subjectsAt calls replace with each subject value in value, found at l, and
// returns value with what it returned.
func (c *Compiled) subjectsAt(l *location, value string, replace func(value string) string) string {
	for i := range c.subjects {
		k := &c.subjects[i]
		for j := range k.selectors {
			if k.selectors[j].matches(l) && NormalizeSubject(value) != "" {
				value = replace(value)
			}
		}
		if k.detector != nil {
			spans := k.detector.find(value)
			// Backwards, so that a replacement leaves the spans before it.
			for s := len(spans) - 1; s >= 0; s-- {
				span := spans[s]
				if part := value[span[0]:span[1]]; NormalizeSubject(part) != "" {
					if kept := replace(part); kept != part {
						value = value[:span[0]] + kept + value[span[1]:]
					}
				}
			}
		}
	}
	return value
}

// readAnchoredBody visits, for subjectsOf, only the string values of a JSON
// body that hold a detector's anchor, when that is all the walk would find
// subjects in: no key selects in that body, every key's detector has an
// anchor, and each value is a part of the text (no escape).
func (c *Compiled) readAnchoredBody(s side, body, contentType string, replace func(string) string) bool {
	bodyClasses := uint16(1<<classRequestBody | 1<<classRequestText)
	if s == sideResponse {
		bodyClasses = 1<<classResponseBody | 1<<classResponseText
	}
	var anchors []byte
	for i := range c.subjects {
		k := &c.subjects[i]
		for j := range k.selectors {
			if k.selectors[j].reach()&bodyClasses != 0 {
				return false
			}
		}
		if k.detector != nil {
			if k.detector.anchor == 0 {
				return false
			}
			anchors = append(anchors, k.detector.anchor)
		}
	}
	trimmed := strings.TrimLeft(body, " \t\r\n\ufeff")
	if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "[") || strings.IndexByte(trimmed, '\\') >= 0 ||
		jsonbytes.Check(trimmed, maxJSONDepth, nil) != jsonbytes.Valid {
		return false // a text, a form or JSON the walk reads otherwise
	}
	loc := location{kind: kindBody, side: s}
	for i := 0; i < len(trimmed); {
		at := strings.IndexAny(trimmed[i:], string(anchors))
		if at < 0 {
			break
		}
		// Without escapes, the quotes around an anchor are its string's.
		at += i
		open := strings.LastIndexByte(trimmed[:at], '"')
		closing := at + strings.IndexByte(trimmed[at:], '"')
		i = closing + 1
		if after := jsonbytes.SkipSpace(trimmed, i); after < len(trimmed) && trimmed[after] == ':' {
			continue // a member's name, no value
		}
		c.subjectsAt(&loc, unquote(trimmed[open:i]), replace)
	}
	return true
}

// Forget is what becomes of a message of a forgotten subject.
type Forget uint8

// The futures of a forgotten subject's messages.
const (
	ForgetNone   Forget = iota // stored as any other
	ForgetRedact               // stored, the subject's values redacted
	ForgetDrop                 // not stored
)

// Forgetting tells which subjects an account's erasures keep forgetting.
type Forgetting interface {
	// Forgets is what becomes of a message holding the subject of hash.
	Forgets(hash string) Forget
}

// Redacted replaces a forgotten subject's values (ForgetRedact).
const Redacted = "[erased]"

// forget applies f to m, whose subject hashes out holds: the strongest
// future of its subjects decides; a redaction replaces each value of a
// forgotten subject, and its hash leaves the message's subjects.
func (c *Compiled) forget(m *domain.Message, f Forgetting, out *Outcome) {
	for _, h := range out.Subjects {
		out.Forgotten = max(out.Forgotten, f.Forgets(h))
	}
	switch out.Forgotten {
	case ForgetDrop:
		out.Stored, out.Subjects = false, nil
	case ForgetRedact:
		c.eachSubject(m, func(value string) string {
			if f.Forgets(c.hasher.subject(value)) != ForgetNone {
				return Redacted
			}
			return value
		})
		out.Subjects = slices.DeleteFunc(out.Subjects, func(h string) bool { return f.Forgets(h) != ForgetNone })
	}
}
