package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// Stats answers a query the rollups can answer (a scope or one application
// over a range: stats.Query.RollupsAnswer) from each day's per-minute
// rollups (rollup.go). Any other it streams, day file by day file, into
// stats.Builder: five columns of each matching message from the
// messages_stats index, which holds every column the query reads. A q of one
// word (isOneWord) is answered from the word index, with no message read
// whole (statsOfOneWord). With any other q, the messages whose words hold
// q's words are read whole and checked with domain.Search.
func (s *Store) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	f := q.Filter
	f.From, f.To = q.CountedRange()
	if !f.From.Before(f.To) {
		return stats.NewBuilder(q).Stats(), nil
	}
	days := s.dir.NewestFirst(dayfile.Range(f, nil))
	if q.RollupsAnswer() {
		b := stats.NewRollupBuilder(q, now)
		for _, day := range days {
			err := s.withDay(ctx, day, func(d *dayfile.File) error {
				refused, err := s.statsFromRollups(ctx, d, q, now, b)
				for _, m := range refused {
					if err == nil {
						err = streamSamples(ctx, d, q.Scope, m.filter(f), now, b.Add)
					}
				}
				return err
			})
			if err != nil {
				return stats.Stats{}, err
			}
		}
		return b.Stats(), nil
	}
	b := stats.NewBuilder(q)
	words := ""
	if f.Text != "" {
		var ok bool
		if words, ok = dayfile.WordsQuery(f.Text); !ok {
			return b.Stats(), nil
		}
	}
	if dayfile.IsOneWord(f.Text) {
		return s.statsOfOneWord(ctx, q, words, days, now)
	}
	match := f.Matcher()
	for _, day := range days {
		err := s.withDay(ctx, day, func(d *dayfile.File) error {
			if words == "" {
				return streamSamples(ctx, d, q.Scope, f, now, b.Add)
			}
			return searchSamples(ctx, d, q.Scope, f, words, match, now, b.Add)
		})
		if err != nil {
			return stats.Stats{}, err
		}
	}
	return b.Stats(), nil
}

// withoutText is q without its q.
func withoutText(q stats.Query) stats.Query {
	q.Filter.Text = ""
	return q
}

// statsMessagesRead counts the messages Stats has read whole, for tests that
// the word index alone answered; daysReadBySeq and daysLessTheRest the day
// files it counted from the messages holding a q's word read by seq, and as
// their rollups less the messages lacking it (statsOfOneWord).
var statsMessagesRead, daysReadBySeq, daysLessTheRest atomic.Int64

// withDay calls use with day's file held, if it still exists.
func (s *Store) withDay(ctx context.Context, day time.Time, use func(*dayfile.File) error) error {
	d, err := s.dir.Acquire(ctx, day, false)
	if err != nil || d == nil {
		return err
	}
	defer d.Release()
	return use(d)
}

// lookupCostInRows is what reading one message by its seq costs, in rows of
// a walk of the statistics index: about 4.3 µs against 1.5 µs with the
// counting, at a million messages (2026-11-27).
const lookupCostInRows = 3

// oneWordDay is how statsOfOneWord counts one day file's messages holding
// the word: those few (or fewer than a third of the scope's), read by seq;
// or the walk of the statistics index, each entry's seq tested against the
// word's, read into a bit set (SQLite's own test, seq IN the word's rowids,
// seeks a temporary b-tree per row, three times the CPU); or the day's
// rollups less the messages lacking the word.
type oneWordDay struct {
	day     time.Time
	bySeq   *dayfile.Where // the where of the messages read by seq
	holding *bitset.BitSet // the word's seqs
	// The day's rollups, the minutes they cannot stand for, and the seqs of
	// the messages lacking the word: counted less the rest when rollups is
	// set.
	rollups *stats.RollupBuilder
	refused []refusedMinute
	lacking []int64
}

// statsOfOneWord answers q, whose q is one word (isOneWord) of token words.
// It plans each day file first (oneWordDay): where the messages lacking the
// word cost less to read by seq than the scope's messages cost to walk, and
// the rollups answer q but for its q, it counts the day's rollups and the
// refused minutes' messages holding the word, and takes the lacking messages
// of the minutes counted from rollups out at the end
// (stats.RollupBuilder.Subtract). A word nearly every message holds (a
// content type, a host) then costs its word index and a few lookups, not a
// walk of the day. Without such a day the answer is stats.Builder's, exact;
// with one it is a stats.RollupBuilder's, within the bounds it keeps; and
// where the rest cannot be told so (Subtract reports false), every day is
// walked and the answer is stats.Builder's again.
func (s *Store) statsOfOneWord(ctx context.Context, q stats.Query, words string, days []time.Time, now time.Time) (stats.Stats, error) {
	f := q.Filter
	f.From, f.To = q.CountedRange()
	withRollups := withoutText(q).RollupsAnswer()
	plans := make([]oneWordDay, 0, len(days))
	subtract := false
	for _, day := range days {
		err := s.withDay(ctx, day, func(d *dayfile.File) error {
			plan := oneWordDay{day: day}
			w := dayfile.ReadableWhere(q.Scope, f, now)
			few, none, err := d.ByWords(ctx, words, w, maxWordCandidates)
			switch {
			case err != nil:
				return d.Error(ctx, "stats: search", err)
			case none:
				return nil
			case few:
				plan.bySeq = w
				plans = append(plans, plan)
				return nil
			}
			var lastSeq int64
			if err := d.Read.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM messages`).Scan(&lastSeq); err != nil {
				return d.Error(ctx, "stats", err)
			}
			if plan.holding, err = d.WordSeqs(ctx, words); err != nil {
				return d.Error(ctx, "stats: search", err)
			}
			defer func() { plans = append(plans, plan) }()
			if !withRollups {
				return nil
			}
			// Reading the word's messages by seq, or those lacking it, pays
			// when they are fewer than a third of the scope's messages in the
			// range, which the rollups count: never when both are a third of
			// the day's messages or more.
			holding := int64(plan.holding.Count())
			if min(holding, lastSeq-holding)*lookupCostInRows >= lastSeq {
				return nil
			}
			rollups := stats.NewRollupBuilder(withoutText(q), now)
			if plan.refused, err = s.statsFromRollups(ctx, d, withoutText(q), now, rollups); err != nil {
				return err
			}
			switch walked := rollups.Count(); {
			case (lastSeq-holding)*lookupCostInRows < walked:
				lacking := seqsLacking(plan.holding, lastSeq)
				if warm, err := lookupsWarm(ctx, d, lacking); err != nil || !warm {
					return err
				}
				plan.lacking, plan.rollups, subtract = lacking, rollups, true
			case holding*lookupCostInRows < walked:
				seqs := seqsOf(plan.holding)
				if warm, err := lookupsWarm(ctx, d, seqs); err != nil || !warm {
					return err
				}
				plan.bySeq = w
				plan.bySeq.AddSeqs(seqs)
			}
			return nil
		})
		if err != nil {
			return stats.Stats{}, err
		}
	}
	if subtract {
		all, lacking := stats.NewRollupBuilder(withoutText(q), now), stats.NewRollupBuilder(withoutText(q), now)
		for _, plan := range plans {
			// The day's rollups count only if its file is still there to
			// take the rest out of (retention may have dropped it since).
			read, err := s.countOneWordDay(ctx, plan, q.Scope, f, now, all.Add, lacking.Add)
			if err != nil {
				return stats.Stats{}, err
			}
			if plan.rollups != nil && read {
				all.Merge(plan.rollups)
			}
		}
		if all.Subtract(lacking) {
			return all.Stats(), nil
		}
	}
	b := stats.NewBuilder(q)
	for _, plan := range plans {
		plan.rollups = nil // walk every day
		if _, err := s.countOneWordDay(ctx, plan, q.Scope, f, now, b.Add, nil); err != nil {
			return stats.Stats{}, err
		}
	}
	return b.Stats(), nil
}

// countOneWordDay adds to add the samples of plan's day of scope readable at
// now that pass f and hold the word, but for those its rollups count; and to
// lacking the samples its rollups count of the messages lacking the word.
// It reports whether the day's file was still there to read.
func (s *Store) countOneWordDay(ctx context.Context, plan oneWordDay, scope domain.Scope, f domain.Filter, now time.Time,
	add, lacking func(stats.Sample)) (read bool, err error) {
	err = s.withDay(ctx, plan.day, func(d *dayfile.File) error {
		read = true
		switch {
		case plan.bySeq != nil:
			daysReadBySeq.Add(1)
			return walkSamples(ctx, d, "messages NOT INDEXED", plan.bySeq, nil, add)
		case plan.rollups == nil:
			return walkSamples(ctx, d, statsIndexWalk, dayfile.ReadableWhere(scope, f, now), plan.holding, add)
		}
		daysLessTheRest.Add(1)
		type minute struct {
			start int64 // Unix seconds
			name  string
		}
		notCounted := make(map[minute]bool, len(plan.refused))
		for _, m := range plan.refused {
			notCounted[minute{m.start.Unix(), m.name}] = true
			if err := walkSamples(ctx, d, statsIndexWalk, dayfile.ReadableWhere(scope, m.filter(f), now), plan.holding, add); err != nil {
				return err
			}
		}
		w := dayfile.ReadableWhere(scope, f, now)
		w.AddSeqs(plan.lacking)
		return walkSamples(ctx, d, "messages NOT INDEXED", w, nil, func(sample stats.Sample) {
			if at := sample.CreatedAt.Unix(); !notCounted[minute{at - at%60, sample.Name}] {
				lacking(sample)
			}
		})
	})
	return read, err
}

// maxWarmLookup is the most a message read by seq may cost on average for
// lookupCostInRows to hold: a few microseconds when its page is in memory
// (SQLite's cache or the operating system's), a hundred and more when it
// must be read from disk, where the walk of the statistics index, whose
// pages are dense and read in order, costs far less.
var maxWarmLookup = 25 * time.Microsecond

// lookupsWarm reports whether reading the messages of seqs by seq costs what
// lookupCostInRows assumes, from a probe of up to 256 of them at random (the
// same ones each time would be in memory from the probe before, whatever the
// others), read 32 at a time: the median of those reads decides, so that a
// read the scheduler or the collector held up does not. No seq costs
// nothing.
func lookupsWarm(ctx context.Context, d *dayfile.File, seqs []int64) (bool, error) {
	if len(seqs) == 0 {
		return true, nil
	}
	const probes, each = 8, 32
	took := make([]time.Duration, 0, probes)
	for range probes {
		probe := make([]int64, min(len(seqs), each))
		for i := range probe {
			probe[i] = seqs[rand.IntN(len(seqs))]
		}
		w := &dayfile.Where{}
		w.AddSeqs(probe)
		start := time.Now()
		if err := walkSamples(ctx, d, "messages NOT INDEXED", w, nil, func(stats.Sample) {}); err != nil {
			return false, err
		}
		took = append(took, time.Since(start)/time.Duration(len(probe)))
	}
	slices.Sort(took)
	return took[len(took)/2] <= maxWarmLookup, nil
}

// seqsOf returns the seqs in set, ascending.
func seqsOf(set *bitset.BitSet) []int64 {
	seqs := make([]int64, 0, set.Count())
	for seq, ok := set.NextSet(0); ok; seq, ok = set.NextSet(seq + 1) {
		seqs = append(seqs, int64(seq))
	}
	return seqs
}

// seqsLacking returns the seqs from 1 to last not in holding.
func seqsLacking(holding *bitset.BitSet, last int64) []int64 {
	seqs := []int64{}
	for seq := int64(1); seq <= last; seq++ {
		next, ok := holding.NextSet(uint(seq))
		if !ok || int64(next) > last {
			next = uint(last + 1)
		}
		for ; seq < int64(next); seq++ {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// statsIndexWalk is the walk of the statistics index, which holds every column
// walkSamples reads.
const statsIndexWalk = "messages INDEXED BY messages_stats"

// streamSamples adds the samples of d's messages of scope readable at now
// that pass f but for its q, from the messages_stats index: no message is
// read.
func streamSamples(ctx context.Context, d *dayfile.File, scope domain.Scope, f domain.Filter, now time.Time, add func(stats.Sample)) error {
	return walkSamples(ctx, d, statsIndexWalk, dayfile.ReadableWhere(scope, f, now), nil, add)
}

// walkSamples adds the sample of each message of from (a table or index)
// that passes w, and whose seq holding holds unless it is nil.
func walkSamples(ctx context.Context, d *dayfile.File, from string, w *dayfile.Where, holding *bitset.BitSet, add func(stats.Sample)) error {
	err := sqlitedb.EachRow(ctx, d.Read, "SELECT seq, created, status, duration, name, path, route FROM "+from+" WHERE "+w.String(), w.Args,
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
		return d.Error(ctx, "stats", err)
	}
	return nil
}

// searchSamples adds the samples of d's messages of scope readable at now
// that hold words' tokens and pass match (q included), read whole.
func searchSamples(ctx context.Context, d *dayfile.File, scope domain.Scope, f domain.Filter, words string,
	match func(domain.Message) bool, now time.Time, add func(stats.Sample)) error {
	w := dayfile.ReadableWhere(scope, f, now)
	few, none, err := d.ByWords(ctx, words, w, maxWordCandidates)
	from := "messages NOT INDEXED"
	switch {
	case err != nil:
		return d.Error(ctx, "stats: search", err)
	case none:
		return nil
	case !few: // many: the range, each message's seq looked up in them
		from = "messages"
		w.Add("seq IN (SELECT rowid FROM words WHERE words MATCH ?)", words)
	}
	rows, err := d.Read.QueryContext(ctx, "SELECT "+dayfile.MessageColumns+" FROM "+from+" WHERE "+w.String(), w.Args...)
	if err != nil {
		return d.Error(ctx, "stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := dayfile.ScanMessage(rows)
		if err != nil {
			return d.Error(ctx, "stats", err)
		}
		statsMessagesRead.Add(1)
		if match(m) {
			add(stats.SampleOf(m))
		}
	}
	if err := rows.Err(); err != nil {
		return d.Error(ctx, "stats", err)
	}
	return nil
}
