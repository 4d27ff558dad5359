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

// subjectPlan is what the keys let subjectsOf pass over in a message.
type subjectPlan struct {
	// anchored: every key's detector has an anchor, anchors: those bytes. A
	// value holding none of them yields no detector's match.
	anchored bool
	anchors  string
	// reach is where the keys' selectors may pick values (selector.reach).
	reach uint16
}

func planSubjects(keys []subjectKey) subjectPlan {
	p := subjectPlan{anchored: true}
	for i := range keys {
		k := &keys[i]
		for j := range k.selectors {
			p.reach |= k.selectors[j].reach()
		}
		switch {
		case k.detector == nil:
		case k.detector.anchor == 0:
			p.anchored = false
		case strings.IndexByte(p.anchors, k.detector.anchor) < 0:
			p.anchors += string(k.detector.anchor)
		}
	}
	return p
}

// looks reports whether a key may find a subject in value, at a place of
// class cl: a selector may pick it, or it holds an anchor.
func (p *subjectPlan) looks(cl class, value string) bool {
	return p.reach&(1<<cl) != 0 || p.holdsAnchor(value)
}

func (p *subjectPlan) holdsAnchor(value string) bool { return strings.ContainsAny(value, p.anchors) }

// Subjects returns the keyed hashes of m's subject values, each once, as
// Apply finds them (before any privacy rule): a backfill indexes a stored
// message by them.
func (c *Compiled) Subjects(m *domain.Message) []string { return c.subjectsOf(m) }

// subjectsOf returns the hashes of the subject values of m, each once, in
// the order the walk meets them. It only reads m.
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
	if c.subjectPlan.anchored {
		c.readSubjects(m, keep)
	} else {
		c.eachSubject(m, keep) // keep changes nothing: the walk writes nothing
	}
	return out
}

// readSubjects calls found with each subject value of m, in the walk's
// order, when every key's detector has an anchor: it looks only at the
// values a key may find one in (subjectPlan.looks), and at a JSON body's
// strings holding an anchor alone when it can (readAnchoredBody).
func (c *Compiled) readSubjects(m *domain.Message, found func(value string) string) {
	p := &c.subjectPlan
	visit := func(l *location, value string) (string, bool) { return c.subjectsAt(l, value, found), false }
	if m.IPAddress != "" && p.looks(classIP, m.IPAddress) {
		c.subjectsAt(&location{kind: kindIP}, m.IPAddress, found)
	}
	path, query, hasQuery := strings.Cut(m.Path, "?")
	if p.looks(classPath, path) {
		c.subjectsAt(&location{kind: kindPath}, path, found)
	}
	// A query's values are decoded: an escape, or a '+' (a space), may make
	// an anchor.
	if hasQuery && (p.looks(classQuery, query) || strings.ContainsAny(query, "%+")) {
		walkQuery(query, location{kind: kindQuery}, visit)
	}
	for _, half := range [...]struct {
		side    side
		content *domain.Content
	}{{sideRequest, &m.Request}, {sideResponse, &m.Response}} {
		c.readHeaderSubjects(half.content.Header, half.side, found)
		if half.content.Body != "" && !c.readAnchoredBody(half.side, half.content, found) {
			walkBody(half.content, half.side, visit)
		}
	}
}

// readHeaderSubjects is readSubjects of a side's header: the names a key
// selects or holding an anchor in a value, in the walk's order (sorted).
func (c *Compiled) readHeaderSubjects(h domain.Header, s side, found func(value string) string) {
	cl := classRequestHeader
	if s == sideResponse {
		cl = classResponseHeader
	}
	selects := c.subjectPlan.reach&(1<<cl) != 0
	var onStack [16]string
	names := onStack[:0]
	loc := location{kind: kindHeader, side: s}
	for name, values := range h {
		loc.name = name
		if selects && c.selects(&loc) || slices.ContainsFunc(values, c.subjectPlan.holdsAnchor) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		loc.name = name
		for _, value := range h[name] {
			c.subjectsAt(&loc, value, found)
		}
	}
}

// selects reports whether a key's selector picks the values at l.
func (c *Compiled) selects(l *location) bool {
	for i := range c.subjects {
		for j := range c.subjects[i].selectors {
			if c.subjects[i].selectors[j].matches(l) {
				return true
			}
		}
	}
	return false
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
		if k.detector == nil || k.detector.anchor != 0 && strings.IndexByte(value, k.detector.anchor) < 0 {
			continue // every match holds the anchor
		}
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
	return value
}

// readAnchoredBody visits, for readSubjects, only the string values of a
// JSON body that hold a detector's anchor, when that is all the walk would
// find subjects in: no key selects in that body, and each value is a part
// of the text (no escape). Validation's verdict that the body is JSON
// (domain.Content.BodyIsJSON) spares checking it again.
func (c *Compiled) readAnchoredBody(s side, content *domain.Content, found func(string) string) bool {
	bodyClasses := uint16(1<<classRequestBody | 1<<classRequestText)
	if s == sideResponse {
		bodyClasses = 1<<classResponseBody | 1<<classResponseText
	}
	if c.subjectPlan.reach&bodyClasses != 0 {
		return false
	}
	trimmed := strings.TrimLeft(content.Body, " \t\r\n\ufeff")
	if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "[") || strings.IndexByte(trimmed, '\\') >= 0 ||
		!content.BodyIsJSON() && jsonbytes.Check(trimmed, maxJSONDepth, nil) != jsonbytes.Valid {
		return false // a text, a form or JSON the walk reads otherwise
	}
	anchors := c.subjectPlan.anchors
	loc := location{kind: kindBody, side: s}
	for i := 0; i < len(trimmed); {
		at := strings.IndexAny(trimmed[i:], anchors)
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
		c.subjectsAt(&loc, unquote(trimmed[open:i]), found)
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
