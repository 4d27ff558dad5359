package domain

import "slices"

// RulesRecord is what a stored message keeps of the account's rule sets
// that wrote it: which version, what captured it, and which rules changed
// which of its fields. It holds rule ids and field paths, never values.
type RulesRecord struct {
	// Version is the rule set version the message was written under; 0:
	// none, or written before messages kept this record.
	Version int64
	// Source is what captured the exchange ("api", "proxy", "otlp"); "" when
	// unknown.
	Source string
	// Rescrubbed is the newest version a re-scrub applied to the stored
	// message; 0: none.
	Rescrubbed int64
	// Changes are the enforced privacy rules' changes, at ingest and by
	// re-scrubs, each once.
	Changes []RuleChange
	// Submitted is the SubmissionDigest of the message as submitted, before
	// the rules, when it came with an Idempotency-Key: a retry is told from
	// another request by it, whatever the rules changed since; "" otherwise.
	Submitted string
}

// RuleChange says a privacy rule changed a field of a message.
type RuleChange struct {
	Rule  string `json:"rule"`
	Field string `json:"field"`
}

// IsZero reports whether r records nothing: a store keeps no record then.
func (r RulesRecord) IsZero() bool {
	return r.Version == 0 && r.Source == "" && r.Rescrubbed == 0 && len(r.Changes) == 0 && r.Submitted == ""
}

// Applied is the newest version whose privacy rules the stored message went
// through: at ingest or by a re-scrub.
func (r RulesRecord) Applied() int64 { return max(r.Version, r.Rescrubbed) }

// AddChanges adds changes not yet recorded, in order.
func (r *RulesRecord) AddChanges(changes []RuleChange) {
	for _, c := range changes {
		if !slices.Contains(r.Changes, c) {
			r.Changes = append(r.Changes, c)
		}
	}
}

// Clone returns a copy of r that shares nothing with it.
func (r RulesRecord) Clone() RulesRecord {
	r.Changes = slices.Clone(r.Changes)
	return r
}
