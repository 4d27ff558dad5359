package rules

import (
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Retroactive is the rule set a re-scrub runs over a message stored under
// applied (the rules its stored form already went through): current's
// enforced privacy rules that applied does not hold alike, in current's
// order. A rule both hold alike already acted on the message; running it
// again would change what it left (a hash of a hash), so it is left out.
// When the message's source is unknown (sourceKnown false: written before
// messages recorded it), rules scoped to sources drop that narrowing, so a
// re-scrub errs towards scrubbing. Ingest, retention and subject rules are
// not retroactive: a re-scrub only tightens what is stored.
func Retroactive(current, applied RuleSet, sourceKnown bool) RuleSet {
	done := rulesByID(RuleSet{Privacy: applied.Privacy})
	var out RuleSet
	for _, r := range current.Privacy {
		if r.Mode == ModeDryRun {
			continue
		}
		if prior, ok := done.text[r.ID]; ok && prior == rulesByID(RuleSet{Privacy: []PrivacyRule{r}}).text[r.ID] {
			continue
		}
		if !sourceKnown {
			r.Scope.Sources = nil
		}
		out.Privacy = append(out.Privacy, r)
	}
	return out
}

// RescrubState is where a re-scrub job is.
type RescrubState string

// The states of a re-scrub job: running until every message of its range was
// read and what the rewrites left behind was expunged, then done; failed
// when it cannot go on (its rule set version is gone).
const (
	RescrubRunning RescrubState = "running"
	RescrubDone    RescrubState = "done"
	RescrubFailed  RescrubState = "failed"
)

// RescrubKind is what a job does to the messages it reads.
type RescrubKind string

// The kinds of a job: a re-scrub (the privacy rules the messages have not
// been through), or a backfill of the subject index (the subject keys of
// the version, for messages stored before them). Both walk the range a page
// at a time, under a lease, saving the cursor after each page.
const (
	KindRescrub  RescrubKind = ""
	KindSubjects RescrubKind = "subjects"
)

// RescrubDomains are the domains a job walks, in order: an account's rule
// set covers both.
var RescrubDomains = []string{domain.DomainLive, domain.DomainTest}

// RescrubCursor is where a job has got to: every message of Domain up to
// and including (CreatedAt, ID), oldest first, and of the domains before
// it, was read. The zero cursor is the start.
type RescrubCursor struct {
	Domain    string
	CreatedAt time.Time
	ID        string
}

// RescrubJob runs an account's rule set version over the messages it
// stored in [From, To), of Applications (none: all), and rewrites those
// it changes. It is kept in the store, so that a restarted replica takes
// it up where it stopped.
type RescrubJob struct {
	Account string
	// Kind is what the job does to each message of its range.
	Kind RescrubKind
	// Number is the job's number within its account: 1, 2, ...
	Number       int64
	Version      int64 // the rule set version it runs
	From, To     time.Time
	Applications []string
	KeyID        string // who started it
	State        RescrubState
	Cursor       RescrubCursor
	// Scanned messages read; Changed rewritten (a backfill: indexed under
	// one subject or more); Skipped already under Version's rules (written
	// or re-scrubbed by it or a newer one; a backfill: no subject value).
	Scanned, Changed, Skipped int64
	// Error says why a failed job stopped, or the last error a running one
	// met (it tries again).
	Error                            string
	CreatedAt, UpdatedAt, FinishedAt time.Time
	// Owner is the replica running it until LeaseUntil; another takes it
	// up after that. Revision counts its saves: each is a compare-and-set.
	Owner      string
	LeaseUntil time.Time
	Revision   int64
}

// Bounds of a re-scrub request.
const (
	MaxRescrubApplications = 100
	maxApplicationName     = 200
)

// ValidateRescrub checks a job's range and applications: From before To,
// both set, at most MaxRescrubApplications names of 1 to 200 characters.
func ValidateRescrub(from, to time.Time, applications []string) error {
	var fe domain.FieldErrors
	switch {
	case from.IsZero():
		fe.Add("from", "is required: the start of the range of created_at, RFC 3339")
	case to.IsZero():
		fe.Add("to", "is required: the end of the range of created_at (excluded), RFC 3339")
	case !from.Before(to):
		fe.Add("to", "must be after from")
	}
	if len(applications) > MaxRescrubApplications {
		fe.Add("applications", "must list at most %d applications", MaxRescrubApplications)
	}
	for i, name := range applications {
		if name == "" || len([]rune(name)) > maxApplicationName {
			fe.Add("applications", "item %d must be 1 to %d characters", i, maxApplicationName)
		}
	}
	return fe.Err("the re-scrub request is invalid")
}
