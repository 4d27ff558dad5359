package rules

import (
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Outcome is what Apply did to a message and what the write must do.
type Outcome struct {
	// Stored is false when an ingest rule drops the message: Apply has made
	// it a tally (domain.Message.AsTally), scrubbed, which the store writes
	// for the statistics and no read returns.
	Stored bool
	// IngestRule is the id of the ingest rule that decided, "" for none.
	IngestRule string
	// SampleRate is N when a sample rule decided (1 in N), else 1. The one
	// kept carries it (domain.Message.SampleRate); the statistics count it
	// once, as they count each of the others, tallies: counts are exact, not
	// re-weighted.
	SampleRate int
	// BodiesStripped says a strip_bodies rule took both bodies out.
	BodiesStripped bool
	// RetentionRule is the id of the retention rule that set ExpiresAt, ""
	// for the policy's; BodiesExpireAt is when the bodies go, zero with the
	// message.
	RetentionRule  string
	BodiesExpireAt time.Time
	// Changes are the enforced privacy rules' changes: which rule changed
	// which field, never the values.
	Changes []Change
	// Counts are the matches of each privacy rule, enforced or dry-run, and
	// each ingest rule that matched, for metrics and for trying a rule set.
	Counts []Count
	// Withheld names the bodies withheld because the rules could not read them.
	Withheld []string
	// Subjects are the keyed hashes of the message's subject values: those
	// of forgotten subjects left out.
	Subjects []string
	// Forgotten says an erased subject's future was applied: ForgetDrop (the
	// message is not stored) or ForgetRedact (its values were redacted).
	Forgotten Forget
}

// Change says a privacy rule changed a field; a stored message keeps its
// changes in its domain.RulesRecord.
type Change = domain.RuleChange

// Count is how many times a rule matched one message.
type Count struct {
	Rule    string `json:"rule"`
	Matches int    `json:"matches"`
	DryRun  bool   `json:"dry_run,omitempty"`
}

// Apply applies c to m, a validated message captured by src, in place: the
// ingest verdict, subject hashes, privacy scrubbing and retention, in that
// order (package doc). A nil c applies nothing and stores.
func (c *Compiled) Apply(m *domain.Message, src Source) Outcome {
	return c.ApplyForgetting(m, src, nil)
}

// ApplyForgetting is Apply that also keeps forgetting the subjects f
// forgets (erasures asking it): right after the subject hashes, a message
// holding one is dropped, or has that subject's values redacted before the
// privacy rules run. A nil f forgets none.
func (c *Compiled) ApplyForgetting(m *domain.Message, src Source, f Forgetting) Outcome {
	out := Outcome{Stored: true, SampleRate: 1}
	if c == nil {
		return out
	}
	c.decideIngest(m, src, &out)
	switch {
	case !out.Stored:
		*m = m.AsTally() // before the scrub: it walks no header nor body then
	case out.SampleRate > 1:
		m.SampleRate = out.SampleRate
	}
	out.Subjects = c.subjectsOf(m)
	if f != nil && len(out.Subjects) > 0 {
		c.forget(m, f, &out)
		if !out.Stored {
			return out
		}
	}
	c.scrub(m, src, &out)
	if r := c.retentionOf(m, src); r != nil {
		out.RetentionRule = r.id
		m.ExpiresAt = m.CreatedAt.Add(r.keep)
		if r.bodies > 0 && r.bodies < r.keep {
			out.BodiesExpireAt = m.CreatedAt.Add(r.bodies)
		}
	}
	return out
}

func (c *Compiled) decideIngest(m *domain.Message, src Source, out *Outcome) {
	for i := range c.ingest {
		r := &c.ingest[i]
		if !r.matches(m, src) {
			continue
		}
		out.Counts = append(out.Counts, Count{Rule: r.id, Matches: 1, DryRun: r.dryRun})
		if r.dryRun {
			continue
		}
		out.IngestRule = r.id
		switch r.action {
		case IngestDrop:
			out.Stored = false
		case IngestSample:
			out.Stored = sampled(m.ID, r.sampleRate)
			out.SampleRate = r.sampleRate
		case IngestStripBodies:
			out.BodiesStripped = true
			m.Request.Body, m.Response.Body = "", ""
		}
		return
	}
}

// scrub runs the privacy rules that scope m, in order, on each value in one
// walk of the message: a rule acts on what the ones before it left.
func (c *Compiled) scrub(m *domain.Message, src Source, out *Outcome) {
	active := make([]bool, len(c.privacy))
	anyActive := false
	readsFields := [3]bool{}
	for i := range c.privacy {
		r := &c.privacy[i]
		if active[i] = r.scope.matches(m, src); active[i] {
			anyActive = true
			if !r.dryRun {
				for s, reads := range r.readsFields {
					readsFields[s] = readsFields[s] || reads
				}
			}
		}
	}
	if !anyActive {
		return
	}
	activeIn := c.activeInBodies(m, active)
	open := c.dispatch.openActive(active, activeIn)
	matches := make([]int, len(c.privacy))
	var counts byteCounts // of counted, taken for the first detector a value meets
	counted := false
	var unnarrowed *[classes][]candidate // open without activeIn's narrowing, made when first needed
	gates := c.gatesOf(&open)
	out.Withheld = walkMessage(m, func(l *location, value string) (string, bool) {
		counted = false
		removed := false
		class := l.class()
		if !gates[class].always {
			// Each rule that may pick the value changes it only through a
			// match: most values are ruled out by their counts here, before
			// the rules' loop.
			if counts, counted = countText(value), true; !gates[class].passes(counts, value) && !c.keyedMayMatch(class, l.key(), value, counts) {
				return value, false
			}
		}
		act := activeIn.of(class, active)
		// The body's text ruled some rules out for its values as they came; a
		// value an earlier rule rewrote meets them again from there on.
		narrowed, resumeAfter := activeIn.narrows(class, active), -1
		try := func(e candidate) bool {
			i, r := e.rule, &c.privacy[e.rule]
			if i <= resumeAfter || !act[i] || !e.all && !r.selects(l) {
				return true
			}
			if r.detector != nil || r.pattern != nil {
				if !counted {
					counts, counted = countText(value), true
				}
				if !counts.covers(r.needs) {
					return true // most values: ruled out before the rule's scrub is called
				}
			}
			kept, n, remove := r.scrub(value, counts, c.hasher)
			if n == 0 {
				return true
			}
			matches[i] += n
			if r.dryRun {
				return true
			}
			// A message holds few changes: a scan finds a repeat sooner than
			// a map is made.
			if change := (Change{Rule: r.id, Field: l.String()}); !slices.Contains(out.Changes, change) {
				if out.Changes == nil {
					out.Changes = make([]Change, 0, 16) // a message changed is changed in several places
				}
				out.Changes = append(out.Changes, change)
			}
			if remove {
				removed = true
				return false
			}
			if kept != value {
				value, counted = kept, false
				if narrowed {
					resumeAfter = i
					return false
				}
			}
			return true
		}
		c.dispatch.candidates(class, l.key(), open[class], try)
		if resumeAfter >= 0 && !removed && c.mayChangeRewritten(class, l.key(), value, resumeAfter, active) {
			if unnarrowed == nil {
				all := c.dispatch.openActive(active, bodyActive{active, active})
				unnarrowed = &all
			}
			act, narrowed = active, false
			c.dispatch.candidates(class, l.key(), unnarrowed[class], try)
		}
		if removed {
			return "", true
		}
		return value, false
	}, func(s side) bool { return readsFields[s] || readsFields[sideBoth] })
	for i, r := range c.privacy {
		if matches[i] > 0 {
			out.Counts = append(out.Counts, Count{Rule: r.id, Matches: matches[i], DryRun: r.dryRun})
		}
	}
}

// gate is a necessary condition for a value of a class to meet an open
// rule that may change it: always, or one of entries holding.
type gate struct {
	always  bool
	entries [8]gateEntry // the first n; none asks less than another
	n       int
}

// gateEntry holds for a value whose counts cover needs and which may hold
// literal (a pattern's).
type gateEntry struct {
	needs   byteCounts
	literal literal
}

func (e *gateEntry) holds(counts byteCounts, value string) bool {
	return counts.covers(e.needs) && e.literal.holds(value)
}

func (g *gate) passes(counts byteCounts, value string) bool {
	for i := range g.entries[:g.n] {
		if g.entries[i].holds(counts, value) {
			return true
		}
	}
	return false
}

// gatesOf is the gate of each class for its open rules.
func (c *Compiled) gatesOf(open *[classes][]candidate) (out [classes]gate) {
	for class, list := range open {
		out[class] = c.gateOf(list, nil)
	}
	return out
}

// gateOf is the gate of the rules of list active in act (nil: all).
func (c *Compiled) gateOf(list []candidate, act []bool) (g gate) {
	for _, e := range list {
		r := &c.privacy[e.rule]
		switch {
		case act != nil && !act[e.rule]:
		case r.detector == nil && r.pattern == nil:
			g.always = true
			return g
		case !g.add(gateEntry{needs: r.needs, literal: r.literal}):
			g.always = true // too many to list: every value passes
			return g
		}
	}
	return g
}

// add adds e to g's entries unless one of them asks less already, dropping
// those that ask more; false when there is no room.
func (g *gate) add(e gateEntry) bool {
	asksLess := func(a, b gateEntry) bool { // a holds wherever b does
		return b.needs.covers(a.needs) && (a.literal.text == "" || a.literal == b.literal)
	}
	for _, o := range g.entries[:g.n] {
		if asksLess(o, e) {
			return true
		}
	}
	kept := 0
	for _, o := range g.entries[:g.n] {
		if !asksLess(e, o) {
			g.entries[kept] = o
			kept++
		}
	}
	if g.n = kept; g.n == len(g.entries) {
		return false
	}
	g.entries[g.n] = e
	g.n++
	return true
}

// keyedMayMatch reports whether a rule keyed by key in class c may match
// value, of counts: one matching anything, or one whose gate entry holds.
func (c *Compiled) keyedMayMatch(class class, key, value string, counts byteCounts) bool {
	for _, e := range c.dispatch.keyedOf(class, key) {
		r := &c.privacy[e.rule]
		if r.detector == nil && r.pattern == nil || counts.covers(r.needs) && r.literal.holds(value) {
			return true
		}
	}
	return false
}

// mayChangeRewritten reports whether a value of class with key, rewritten
// by rule after, may be changed by an active rule after that one: the
// rules the body's text ruled out for the value as it came included.
func (c *Compiled) mayChangeRewritten(class class, key, value string, after int, active []bool) bool {
	counts := countText(value)
	for _, list := range [2][]candidate{c.dispatch.open[class], c.dispatch.keyedOf(class, key)} {
		for _, e := range list {
			r := &c.privacy[e.rule]
			if e.rule > after && active[e.rule] &&
				(r.detector == nil && r.pattern == nil || counts.covers(r.needs) && r.literal.holds(value)) {
				return true
			}
		}
	}
	return false
}

// activeInBodies is active for the request's body and the response's, less
// the rules whose match cannot be in that body at all, so that its values
// need not meet them: a body whose values are all parts of its text (no
// escape, no percent-encoding, no form's '+') holds no match where its
// whole text holds none, and a detector's hint, or a pattern's literal,
// tells that from one look at the text.
func (c *Compiled) activeInBodies(m *domain.Message, active []bool) (out bodyActive) {
	for s, content := range []*domain.Content{&m.Request, &m.Response} {
		out[s] = active
		body := content.Body
		if body == "" || strings.IndexByte(body, '\\') >= 0 || strings.IndexByte(body, '%') >= 0 ||
			content.ContentType == formType && strings.IndexByte(body, '+') >= 0 { // a form's '+' is read as a space
			continue
		}
		cloned := false
		var seen [len(detectorOrder)]int8 // by detector: 0 unknown, 1 present, -1 absent
		for i := range c.privacy {
			r := &c.privacy[i]
			if !active[i] {
				continue
			}
			present := true
			switch {
			case r.detector != nil:
				k := r.detector.index
				if seen[k] == 0 {
					seen[k] = -1
					if r.detector.hint(body) {
						seen[k] = 1
					}
				}
				present = seen[k] > 0
			case r.pattern != nil:
				present = r.literal.holds(body)
			}
			if !present {
				if !cloned {
					out[s], cloned = slices.Clone(active), true
				}
				out[s][i] = false
			}
		}
	}
	return out
}
