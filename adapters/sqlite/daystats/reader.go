package daystats

import (
	"context"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/rollupfile"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Reader answers statistics queries from a data directory's day files,
// through the statistics engine it feeds (source.go). It is safe for
// concurrent use.
type Reader struct {
	dir      *dayfile.Dir
	kept     *rollupfile.File // nil: no rollups outlive their day files
	cfg      Config
	versions *hourVersions
	engine   *statsengine.Engine
	bodies   *bodiesWatch
}

// New returns the reader of dir's statistics, with cfg's plan for a q of
// one word, and the rollups of the day files retention dropped in kept
// (nil: none).
func New(dir *dayfile.Dir, kept *rollupfile.File, cfg Config) *Reader {
	r := &Reader{dir: dir, kept: kept, cfg: cfg.withDefaults(), versions: newHourVersions(), bodies: newBodiesWatch()}
	// New fails only without samples, which the reader always streams.
	r.engine, _ = statsengine.New(statsengine.Sources{Samples: r, Rollups: r, Store: wordPlan{r}, RollupsOutliveMessages: kept != nil}, statsengine.Config{})
	return r
}

// Stats counts q at now through the statistics engine, from the day files
// of its range, each held while it is read (retention waits for it):
//
//   - a q of one word: by the store's plan of one word from the word index
//     (word.go), which counts a day's rollups through the engine
//     (statsengine.Engine.CountRollups) when it takes them less the rest;
//   - any other query: by the engine's plans, from the minute rollups and
//     their hours kept in its cache where they answer, otherwise from the
//     narrow rows (StreamSamples).
//
// A Trace in ctx (WithTrace) is told what the call read.
func (r *Reader) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	st, tr, err := r.engine.Stats(ctx, q, now)
	traceOf(ctx).Engine.Add(tr)
	return st, err
}

// Wrote tells the reader that a transaction that wrote msgs into f has
// ended, committed or not: the hours it may have written take another
// version, so that the engine reads them again.
func (r *Reader) Wrote(f *dayfile.File, msgs []domain.Message) { r.versions.wrote(f, msgs) }

// Forget drops what the reader keeps of f, a file retention dropped.
func (r *Reader) Forget(f *dayfile.File) { r.versions.forget(f) }

// Trace is what Stats calls read, for tests and benchmarks: a call given
// one in its context (WithTrace) adds to it, so that nothing is counted in
// package state.
type Trace struct {
	// Engine is what the statistics engine read, summed over the calls:
	// its plan, the minute rollups and kept hours counted (also those of a
	// day the word plan counted less the rest), the messages streamed.
	Engine statsengine.Trace
	// The day files a q of one word counted by each read of its plan
	// (WordRead): DaysBySeq the messages holding it read by seq,
	// DaysLessTheRest the rollups less the messages lacking it, DaysWalked
	// the statistics index walked, DaysWhole its messages read whole (the
	// file holds bodies expired and not yet taken out: bodies.go).
	DaysBySeq, DaysLessTheRest, DaysWalked, DaysWhole int
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

// traceOf is the Trace ctx carries, or one no one reads.
func traceOf(ctx context.Context) *Trace {
	if t, ok := ctx.Value(traceKey{}).(*Trace); ok && t != nil {
		return t
	}
	return &Trace{}
}
