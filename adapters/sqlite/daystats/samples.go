package daystats

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// The narrow rows: six columns of each message (created, status, duration,
// name, path, route), read from the statistics index, which holds every
// column a filter but q reads, or by seq, through the driver
// (sqlitedb.EachRow). They are what a statistics engine streams from a
// store that keeps no rollups of a query.
const (
	statsIndexWalk = "messages INDEXED BY messages_stats"
	// bySeq reads each message of a seq IN clause (dayfile.Where.AddSeqs) by
	// its rowid: SQLite's planner would walk an index instead.
	bySeq = "messages NOT INDEXED"
)

// stream counts the call's filter (no q) into stats.Builder from each day's
// statistics index: no message is read.
func (c *call) stream(ctx context.Context) (stats.Stats, error) {
	b := stats.NewBuilder(c.q)
	err := c.eachFile(ctx, func(f *dayfile.File) error {
		return streamSamples(ctx, f, c.q.Scope, c.f, c.now, b.Add)
	})
	if err != nil {
		return stats.Stats{}, err
	}
	return b.Stats(), nil
}

// streamSamples adds the samples of f's messages and tallies of scope
// readable at now that pass filter but for its q.
func streamSamples(ctx context.Context, f *dayfile.File, scope domain.Scope, filter domain.Filter, now time.Time, add func(stats.Sample)) error {
	w := dayfile.ReadableWhere(scope, filter, now)
	if err := walkSamples(ctx, f, statsIndexWalk, w, nil, add); err != nil {
		return err
	}
	return walkTallies(ctx, f, scope, w, func(m domain.Message) { add(stats.SampleOf(m)) })
}

// walkSamples adds the sample of each message of from (a table or index)
// that passes w, and whose seq holding holds unless it is nil.
func walkSamples(ctx context.Context, f *dayfile.File, from string, w *dayfile.Where, holding *bitset.BitSet, add func(stats.Sample)) error {
	err := sqlitedb.EachRow(ctx, f.Read, "SELECT seq, created, status, duration, name, path, route FROM "+from+" WHERE "+w.String(), w.Args,
		func(row []driver.Value) error {
			seq, okSeq := row[0].(int64)
			created, okCreated := row[1].(int64)
			status, okStatus := row[2].(int64)
			if !okSeq || !okCreated || !okStatus {
				return fmt.Errorf("a row of seq %v holds created %v, status %v: not integers", row[0], row[1], row[2])
			}
			if holding != nil && (seq < 0 || !holding.Test(uint(seq))) {
				return nil
			}
			sample := stats.Sample{CreatedAt: time.UnixMicro(created).UTC(), StatusCode: int(status),
				Name: sqlitedb.TextOf(row[4]), Path: sqlitedb.TextOf(row[5]), Route: sqlitedb.TextOf(row[6])}
			if duration, ok := row[3].(int64); ok {
				sample.Duration, sample.HasDuration = time.Duration(duration)*time.Microsecond, true
			}
			add(sample)
			return nil
		})
	if err != nil {
		return f.Error(ctx, "stats", err)
	}
	return nil
}

// search counts the call's filter, whose q is not one word, into
// stats.Builder from the messages holding q's words (the word index's
// tokens), each read whole and checked with the filter's Matcher, which
// decides the phrase, and from the tallies it matches.
func (c *call) search(ctx context.Context, words string) (stats.Stats, error) {
	b := stats.NewBuilder(c.q)
	match := c.f.Matcher()
	err := c.eachFile(ctx, func(f *dayfile.File) error {
		if err := c.tallies(ctx, f, b.Add); err != nil {
			return err
		}
		w := dayfile.ReadableWhere(c.q.Scope, c.f, c.now)
		few, none, err := f.ByWords(ctx, words, w, c.r.cfg.FewMessages)
		from := bySeq
		switch {
		case err != nil:
			return f.Error(ctx, "stats: search", err)
		case none:
			return nil
		case !few: // many: the range, each message's seq looked up in them
			from = "messages"
			w.Add("seq IN (SELECT rowid FROM words WHERE words MATCH ?)", words)
		}
		if err := c.readWhole(ctx, f, from, w, match, b.Add); err != nil {
			return f.Error(ctx, "stats", err)
		}
		return nil
	})
	if err != nil {
		return stats.Stats{}, err
	}
	return b.Stats(), nil
}

// readWhole adds the sample of each message of from that passes w and
// match, read whole.
func (c *call) readWhole(ctx context.Context, f *dayfile.File, from string, w *dayfile.Where,
	match func(domain.Message) bool, add func(stats.Sample)) error {
	rows, err := f.Read.QueryContext(ctx, "SELECT "+dayfile.MessageColumns+" FROM "+from+" WHERE "+w.String(), w.Args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		m, err := dayfile.ScanMessage(rows)
		if err != nil {
			return err
		}
		c.trace.MessagesRead++
		if match(m) {
			add(stats.SampleOf(m))
		}
	}
	return rows.Err()
}
