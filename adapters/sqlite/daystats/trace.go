package daystats

import "context"

// Trace is what one Stats call read, for tests and benchmarks: a call
// given one in its context (WithTrace) adds to it, so that nothing is
// counted in package state.
type Trace struct {
	// RollupMinutes are the minutes (of one application each) counted from
	// their rollup, KeptHours the whole hours counted from the kept hours.
	RollupMinutes, KeptHours int
	// The day files a q of one word counted by each read of its plan
	// (WordRead): DaysBySeq the messages holding it read by seq,
	// DaysLessTheRest the rollups less the messages lacking it, DaysWalked
	// the statistics index walked.
	DaysBySeq, DaysLessTheRest, DaysWalked int
	// MessagesRead are the messages read whole and checked with the filter's
	// Matcher (a q of more than one word).
	MessagesRead int64
}

type traceKey struct{}

// WithTrace returns ctx carrying t: a Stats call given it adds what it
// reads to t, which only that call may use meanwhile.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// traceOf is the Trace ctx carries, or a new one nobody reads.
func traceOf(ctx context.Context) *Trace {
	if t, ok := ctx.Value(traceKey{}).(*Trace); ok && t != nil {
		return t
	}
	return &Trace{}
}
