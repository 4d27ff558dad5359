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

// Stats counts q at now, holding the day files of its range for the call
// (retention waits), by the first read that can answer it:
//
//   - a scope or one application over a range (stats.Query.RollupsAnswer):
//     the rollups, and the messages of the minutes they cannot stand for
//     (fromRollups, rollups.go);
//   - no q: the statistics index of each day walked (stream, samples.go);
//   - a q of one word: the word index, with no message read whole, by the
//     plan (oneWord, word.go);
//   - any other q: the messages holding its words, read whole and checked
//     (search, samples.go).
//
// A Trace in ctx (WithTrace) is told what the call read.
func (r *Reader) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	c := &call{r: r, q: q, f: q.Filter, now: now, trace: traceOf(ctx)}
	c.f.From, c.f.To = q.CountedRange()
	words, ok := dayfile.WordsQuery(c.f.Text)
	if !c.f.From.Before(c.f.To) || c.f.Text != "" && !ok {
		return stats.NewBuilder(q).Stats(), nil
	}
	first, last := dayfile.Range(c.f, nil)
	files, err := r.dir.Hold(ctx, first, last)
	if err != nil {
		return stats.Stats{}, err
	}
	defer dayfile.Release(files)
	c.files = files
	switch {
	case q.RollupsAnswer():
		return c.fromRollups(ctx)
	case words == "":
		return c.stream(ctx)
	case dayfile.IsOneWord(c.f.Text):
		return c.oneWord(ctx, words)
	}
	return c.search(ctx, words)
}

// call is one Stats call: its query, the files it holds, its trace.
type call struct {
	r     *Reader
	q     stats.Query
	f     domain.Filter // q's, over its counted range
	now   time.Time
	files []*dayfile.File // newest first
	trace *Trace
}

// Wrote tells the reader that a transaction that wrote msgs into f has
// ended, committed or not: the hours it may have written are read again.
func (r *Reader) Wrote(f *dayfile.File, msgs []domain.Message) { r.hours.wrote(f, msgs) }

// Forget drops what the reader keeps of f, a file retention dropped.
func (r *Reader) Forget(f *dayfile.File) { r.hours.forget(f) }
