package daystats

import (
	"context"
	"database/sql/driver"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Each day file keeps the exchanges ingest rules dropped as tallies
// (dayfile.TallyColumns), counted in its rollups with the messages. Where
// the statistics read the messages instead (a filter the rollups do not
// answer, the minutes they cannot stand for, a q), they read the tallies
// too, from their own table: a tally is a message without headers and
// bodies, so a q finds it in its path alone.

// walkTallies calls yield with each tally of f that passes w (a
// dayfile.ReadableWhere); the tally is valid during the call.
func walkTallies(ctx context.Context, f *dayfile.File, scope domain.Scope, w *dayfile.Where, yield func(domain.Message)) error {
	err := sqlitedb.EachRow(ctx, f.Read, "SELECT "+dayfile.TallyColumns+" FROM tallies WHERE "+w.String(), w.Args,
		func(row []driver.Value) error {
			m, err := dayfile.TallyOf(scope, row)
			if err == nil {
				yield(m)
			}
			return err
		})
	if err != nil {
		return f.Error(ctx, "stats: tallies", err)
	}
	return nil
}

// tallies adds the samples of f's tallies readable at now that pass the
// call's filter, its q included.
func (c *call) tallies(ctx context.Context, f *dayfile.File, add func(stats.Sample)) error {
	return streamTallies(ctx, f, c.q.Scope, dayfile.TallyWhere(c.q.Scope, c.f, c.now), c.f.Matcher(), add)
}

// talliesLessTheRest adds the tallies of f, a day counted as its rollups
// less the rest (ReadLessTheRest), as countDay adds its messages: the rollups
// count every tally of the minutes they stand for, so those of the other
// minutes (refused) holding the word go to add, and those of its minutes
// lacking it to lacking.
func (c *call) talliesLessTheRest(ctx context.Context, f *dayfile.File, refused func(stats.Sample) bool, add, lacking func(stats.Sample)) error {
	match := c.f.Matcher()
	return walkTallies(ctx, f, c.q.Scope, dayfile.TallyWhere(c.q.Scope, c.f, c.now), func(m domain.Message) {
		switch s := stats.SampleOf(m); {
		case match(m) && refused(s):
			add(s)
		case !match(m) && !refused(s):
			lacking(s)
		}
	})
}

// streamTallies adds the samples of file's tallies of scope that w, a
// ReadableWhere, selects and match passes, its q included (StreamSamples).
func streamTallies(ctx context.Context, file *dayfile.File, scope domain.Scope, w *dayfile.Where, match func(domain.Message) bool, add func(stats.Sample)) error {
	return walkTallies(ctx, file, scope, w, func(m domain.Message) {
		if match(m) {
			add(stats.SampleOf(m))
		}
	})
}
