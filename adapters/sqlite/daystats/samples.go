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

// searchSamples adds the sample of each of f's messages that passes w and
// match, a filter's Matcher, whose q is not one word: from the messages
// holding q's words (the word index's tokens), each read whole and checked
// with match, which decides the phrase, without its bodies once they
// have expired at now.
func (r *Reader) searchSamples(ctx context.Context, f *dayfile.File, w *dayfile.Where, match func(domain.Message) bool,
	words string, now time.Time, trace *Trace, add func(stats.Sample)) error {
	few, none, err := f.ByWords(ctx, words, w, r.cfg.FewMessages)
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
	rows, err := f.Read.QueryContext(ctx, "SELECT "+dayfile.MessageColumns+" FROM "+from+" WHERE "+w.String(), w.Args...)
	if err != nil {
		return f.Error(ctx, "stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := f.ScanMessage(rows)
		if err != nil {
			return f.Error(ctx, "stats", err)
		}
		trace.MessagesRead++
		if match(m.WithoutExpiredBodies(now)) {
			add(stats.SampleOf(m))
		}
	}
	if err := rows.Err(); err != nil {
		return f.Error(ctx, "stats", err)
	}
	return nil
}
