package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/reqlog/reqlog/domain"
)

// Stats answers a query the rollups can answer (a scope or one application
// over a range: domain.StatsQuery.RollupsAnswer) from each day's per-minute
// rollups (rollup.go). Any other it streams, day file by day file, into
// domain.StatsBuilder: five columns of each matching message from the
// messages_stats index, which holds every column the query reads; a q of one
// word (isOneWord) narrows them to the messages the word index finds for it.
// With any other q, the messages whose words hold q's words are read whole
// and checked with domain.Search.
func (s *Store) Stats(ctx context.Context, q domain.StatsQuery, now time.Time) (domain.Stats, error) {
	f := q.Filter
	f.From, f.To = q.CountedRange()
	if !f.From.Before(f.To) {
		return domain.NewStatsBuilder(q).Stats(), nil
	}
	days := s.daysNewestFirst(dayRange(f, nil))
	if q.RollupsAnswer() {
		b := domain.NewRollupStatsBuilder(q, now)
		for _, day := range days {
			if err := s.withDay(ctx, day, func(d *dayFile) error { return s.statsFromRollups(ctx, d, q, now, b) }); err != nil {
				return domain.Stats{}, err
			}
		}
		return b.Stats(), nil
	}
	b := domain.NewStatsBuilder(q)
	words := ""
	if f.Text != "" {
		var ok bool
		if words, ok = wordsQuery(f.Text); !ok {
			return b.Stats(), nil
		}
	}
	match, indexAnswers := f.Matcher(), words != "" && isOneWord(f.Text)
	for _, day := range days {
		err := s.withDay(ctx, day, func(d *dayFile) error {
			switch {
			case words == "":
				return streamSamples(ctx, d, q.Scope, f, "", now, b.Add)
			case indexAnswers:
				return streamSamples(ctx, d, q.Scope, f, words, now, b.Add)
			}
			return searchSamples(ctx, d, q.Scope, f, words, match, now, b.Add)
		})
		if err != nil {
			return domain.Stats{}, err
		}
	}
	return b.Stats(), nil
}

// statsMessagesRead counts the messages Stats has read whole, for tests that
// the word index alone answered.
var statsMessagesRead atomic.Int64

// withDay calls use with day's file held, if it still exists.
func (s *Store) withDay(ctx context.Context, day time.Time, use func(*dayFile) error) error {
	d, err := s.acquire(ctx, day, false)
	if err != nil || d == nil {
		return err
	}
	defer d.use.RUnlock()
	return use(d)
}

// streamSamples adds the samples of d's messages of scope readable at now
// that pass f but for its q, and hold words' tokens unless words is empty,
// from the messages_stats index: no message is read.
func streamSamples(ctx context.Context, d *dayFile, scope domain.Scope, f domain.Filter, words string, now time.Time,
	add func(domain.StatsSample)) error {
	w := readableWhere(scope, f, now)
	from := "messages INDEXED BY messages_stats"
	var holdWords *bitset.BitSet // nil: every row read counts
	if words != "" {
		// A word of few messages: read those rows by seq, rather than walk
		// the day's statistics index testing each entry against them. A word
		// of many: walk the index and test each seq against the word's, read
		// into a bit set; SQLite's own test (seq IN the word's rowids) seeks
		// a temporary b-tree per row, three times the CPU.
		few, none, err := byWords(ctx, d, words, w)
		switch {
		case err != nil:
			return d.fileError(ctx, "stats: search", err)
		case none:
			return nil
		case few:
			from = "messages NOT INDEXED"
		default:
			if holdWords, err = wordSeqs(ctx, d.read, words); err != nil {
				return d.fileError(ctx, "stats: search", err)
			}
		}
	}
	err := eachRow(ctx, d.read, "SELECT seq, created, status, duration, name, path, route FROM "+from+" WHERE "+w.String(), w.args,
		func(row []driver.Value) error {
			seq, okSeq := row[0].(int64)
			created, okCreated := row[1].(int64)
			status, okStatus := row[2].(int64)
			if !okSeq || !okCreated || !okStatus {
				return fmt.Errorf("a row of seq %v holds created %v, status %v: not integers", row[0], row[1], row[2])
			}
			if holdWords != nil && (seq < 0 || !holdWords.Test(uint(seq))) {
				return nil
			}
			sample := domain.StatsSample{CreatedAt: time.UnixMicro(created).UTC(), StatusCode: int(status),
				Name: textOf(row[4]), Path: textOf(row[5]), Route: textOf(row[6])}
			if duration, ok := row[3].(int64); ok {
				sample.Duration, sample.HasDuration = time.Duration(duration)*time.Microsecond, true
			}
			add(sample)
			return nil
		})
	if err != nil {
		return d.fileError(ctx, "stats", err)
	}
	return nil
}

// textOf is a TEXT column's value as the driver gives it, "" for NULL.
func textOf(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// wordSeqs returns the seqs of all the messages whose words hold words'
// tokens.
func wordSeqs(ctx context.Context, db *sql.DB, words string) (*bitset.BitSet, error) {
	var seqs bitset.BitSet
	err := eachRow(ctx, db, `SELECT rowid FROM words WHERE words MATCH ?`, []any{words}, func(row []driver.Value) error {
		seq, ok := row[0].(int64)
		if !ok || seq < 0 {
			return fmt.Errorf("the word index holds rowid %v", row[0])
		}
		seqs.Set(uint(seq))
		return nil
	})
	return &seqs, err
}

// searchSamples adds the samples of d's messages of scope readable at now
// that hold words' tokens and pass match (q included), read whole.
func searchSamples(ctx context.Context, d *dayFile, scope domain.Scope, f domain.Filter, words string,
	match func(domain.Message) bool, now time.Time, add func(domain.StatsSample)) error {
	w := readableWhere(scope, f, now)
	few, none, err := byWords(ctx, d, words, w)
	from := "messages NOT INDEXED"
	switch {
	case err != nil:
		return d.fileError(ctx, "stats: search", err)
	case none:
		return nil
	case !few: // many: the range, each message's seq looked up in them
		from = "messages"
		w.add("seq IN (SELECT rowid FROM words WHERE words MATCH ?)", words)
	}
	rows, err := d.read.QueryContext(ctx, "SELECT "+messageColumns+" FROM "+from+" WHERE "+w.String(), w.args...)
	if err != nil {
		return d.fileError(ctx, "stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return d.fileError(ctx, "stats", err)
		}
		statsMessagesRead.Add(1)
		if match(m) {
			add(domain.SampleOf(m))
		}
	}
	if err := rows.Err(); err != nil {
		return d.fileError(ctx, "stats", err)
	}
	return nil
}
