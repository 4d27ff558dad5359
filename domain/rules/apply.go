package rules

import (
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Outcome is what Apply did to a message and what the write must do.
type Outcome struct {
	// Stored is false when an ingest rule drops the message: it is counted in
	// the statistics (a rollup) and not stored.
	Stored bool
	// IngestRule is the id of the ingest rule that decided, "" for none.
	IngestRule string
	// SampleRate is N when the message is the one kept of N (a sample rule),
	// else 1: the statistics count it N times.
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
	// Subjects are the keyed hashes of the message's subject values.
	Subjects []string
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
	out := Outcome{Stored: true, SampleRate: 1}
	if c == nil {
		return out
	}
	c.decideIngest(m, src, &out)
	if !out.Stored {
		return out
	}
	out.Subjects = c.subjectsOf(m)
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
	var active []*privacyRule
	for i := range c.privacy {
		if c.privacy[i].scope.matches(m, src) {
			active = append(active, &c.privacy[i])
		}
	}
	if len(active) == 0 {
		return
	}
	// Each value is tried with the rules that may pick its kind of place
	// alone, in their order.
	var byClass [classes][]int
	for i, r := range active {
		for c := range classes {
			if r.reach&(1<<c) != 0 {
				byClass[c] = append(byClass[c], i)
			}
		}
	}
	matches := make([]int, len(active))
	out.Withheld = walkMessage(m, func(l *location, value string) (string, bool) {
		for _, i := range byClass[l.class()] {
			r := active[i]
			if !r.selects(l) {
				continue
			}
			kept, n, remove := r.scrub(value, c.hashKey)
			if n == 0 {
				continue
			}
			matches[i] += n
			if r.dryRun {
				continue
			}
			// A message holds few changes: a scan finds a repeat sooner than
			// a map is made.
			if change := (Change{Rule: r.id, Field: l.String()}); !slices.Contains(out.Changes, change) {
				out.Changes = append(out.Changes, change)
			}
			if remove {
				return "", true
			}
			value = kept
		}
		return value, false
	}, func(s side) bool {
		for _, r := range active {
			if !r.dryRun && (r.readsFields[s] || r.readsFields[sideBoth]) {
				return true
			}
		}
		return false
	})
	for i, r := range active {
		if matches[i] > 0 {
			out.Counts = append(out.Counts, Count{Rule: r.id, Matches: matches[i], DryRun: r.dryRun})
		}
	}
}
