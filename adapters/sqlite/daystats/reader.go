package daystats

import (
	"context"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Reader answers statistics queries from a data directory's day files. It
// is safe for concurrent use.
type Reader struct {
	dir   *dayfile.Dir
	cfg   Config
	hours *hourCache
}

// New returns the reader of dir's statistics, with cfg's plan for a q of
// one word.
func New(dir *dayfile.Dir, cfg Config) *Reader {
	return &Reader{dir: dir, cfg: cfg.withDefaults(), hours: newHourCache()}
}

// Stats counts q at now from the day files of its range, each held while
// it is read (retention waits for it), by the first read that can answer
// it:
//
//   - a scope or one application over a range (stats.Query.RollupsAnswer):
//     the rollups, and the messages of the minutes they cannot stand for
//     (fromRollups, rollups.go);
//   - no q: the statistics index of each day walked (stream, samples.go);
//   - a q: by the plan of one word from the word index (word.go), or from
//     the messages holding its words, read whole and checked (search,
//     samples.go).
//
// A Trace in ctx (WithTrace) is told what the call read.
func (r *Reader) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	c := &call{r: r, q: q, f: q.Filter, now: now, trace: &Trace{}}
	if t, ok := ctx.Value(traceKey{}).(*Trace); ok && t != nil {
		c.trace = t
	}
	if c.f.From, c.f.To = q.CountedRange(); !c.f.From.Before(c.f.To) {
		return stats.NewBuilder(q).Stats(), nil
	}
	c.days = r.dir.NewestFirst(dayfile.Range(c.f, nil))
	switch {
	case q.RollupsAnswer():
		return c.fromRollups(ctx)
	case c.f.Text == "":
		return c.stream(ctx)
	}
	return c.words(ctx)
}

// call is one Stats call: its query, the days of its range, its trace.
type call struct {
	r     *Reader
	q     stats.Query
	f     domain.Filter // q's, over its counted range
	now   time.Time
	days  []time.Time // newest first
	trace *Trace
}

// eachFile calls fn with the file of each of the call's days, held for
// fn's call alone (dayfile.Dir.Each).
func (c *call) eachFile(ctx context.Context, fn func(*dayfile.File) error) error {
	return c.r.dir.Each(ctx, c.days, fn)
}

// Wrote tells the reader that a transaction that wrote msgs into f has
// ended, committed or not: the hours it may have written are read again.
func (r *Reader) Wrote(f *dayfile.File, msgs []domain.Message) { r.hours.wrote(f, msgs) }

// Forget drops what the reader keeps of f, a file retention dropped.
func (r *Reader) Forget(f *dayfile.File) { r.hours.forget(f) }

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
