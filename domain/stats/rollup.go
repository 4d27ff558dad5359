package stats

import (
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Rollup is what the statistics need of the messages of one span of time (a
// minute, or minutes merged) of one scope and one application: a store writes
// it with the messages, in the same transaction, and answers statistics from
// it instead of reading the messages again (RollupBuilder). Its zero
// value is empty.
//
// A store keeps one rollup per scope, application and minute of created_at,
// and adds to it each message it newly stores (AddMessage; a retry of a
// message already stored must not count twice). Every stored message is then
// counted in exactly one rollup, and a minute without a rollup has no
// message.
type Rollup struct {
	Count int64
	// Dropped is how many of Count are tallies (Sample.Dropped).
	Dropped   int64
	Status    StatusCounts
	Durations DurationDigest
	Paths     KeyCounter // by PathOf(path)
	Routes    RouteCounter
	// AllVisibleAt is the latest VisibleAt, and FirstExpiresAt the earliest
	// ExpiresAt, of the messages counted: the rollup stands for all of them
	// only in between (ReadableAt). Zero when no message said (Add).
	AllVisibleAt, FirstExpiresAt time.Time
}

// Add counts one message's sample. It does not know when the message is
// readable: AddMessage does.
func (r *Rollup) Add(s Sample) {
	r.Count++
	if s.Dropped {
		r.Dropped++
	}
	r.Status.Add(s.StatusCode)
	if s.HasDuration {
		r.Durations.Add(s.Duration)
	}
	r.Paths.Add(PathOf(s.Path), IsError(s.StatusCode))
	countRoute(&r.Routes, s)
}

// AddMessage counts m, and when it is readable.
func (r *Rollup) AddMessage(m domain.Message) {
	r.Add(SampleOf(m))
	if m.VisibleAt.After(r.AllVisibleAt) {
		r.AllVisibleAt = m.VisibleAt
	}
	if r.FirstExpiresAt.IsZero() || m.ExpiresAt.Before(r.FirstExpiresAt) {
		r.FirstExpiresAt = m.ExpiresAt
	}
}

// Merge adds the messages of o, which it leaves as it was.
func (r *Rollup) Merge(o *Rollup) {
	r.MergeSeries(o)
	r.Paths.Merge(&o.Paths)
	r.Routes.Merge(&o.Routes)
}

// MergeSeries adds the messages of o as Merge does, but not their paths and
// routes: what a bucket counts of them (RollupBuilder.AddBuckets).
func (r *Rollup) MergeSeries(o *Rollup) {
	r.Count += o.Count
	r.Dropped += o.Dropped
	for c := range r.Status {
		r.Status[c] += o.Status[c]
	}
	r.Durations.Merge(&o.Durations)
	if o.AllVisibleAt.After(r.AllVisibleAt) {
		r.AllVisibleAt = o.AllVisibleAt
	}
	if r.FirstExpiresAt.IsZero() || (!o.FirstExpiresAt.IsZero() && o.FirstExpiresAt.Before(r.FirstExpiresAt)) {
		r.FirstExpiresAt = o.FirstExpiresAt
	}
}

// Errors is how many of the messages have a status of 400 or more.
func (r *Rollup) Errors() int64 { return r.Status[3] + r.Status[4] }

// ReadableAt reports whether every message r counts is readable at now:
// visible, and not expired.
func (r *Rollup) ReadableAt(now time.Time) bool {
	return !now.Before(r.AllVisibleAt) && (r.FirstExpiresAt.IsZero() || now.Before(r.FirstExpiresAt))
}

// Reset empties the rollup, keeping its memory.
func (r *Rollup) Reset() {
	r.Count, r.Dropped, r.Status, r.AllVisibleAt, r.FirstExpiresAt = 0, 0, StatusCounts{}, time.Time{}, time.Time{}
	r.Durations.Reset()
	r.Paths.Reset()
	r.Routes.Reset()
}
