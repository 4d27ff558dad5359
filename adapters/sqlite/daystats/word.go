package daystats

import (
	"context"
	"slices"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// A q of one word (dayfile.Words) is answered from the word index, with
// no message read whole: the messages whose words hold the word are exactly
// those q matches. The plan picks, in each day file, the read that costs
// least (Config's costs, and its Probe for the reads by seq), and names it.

// WordRead names how the plan counts one day file's messages holding a q's
// word.
type WordRead string

const (
	// ReadBySeq reads the messages holding the word by seq: when they are
	// few (Config.FewMessages), or, their pages in memory, under
	// 1/LookupCostInRows of the scope's messages in the range (which the
	// rollups count).
	ReadBySeq WordRead = "by seq"
	// ReadLessTheRest counts the day's rollups less the messages lacking the
	// word, read by seq (stats.RollupBuilder.Subtract): when those are under
	// 1/LookupCostInRows of the scope's, their pages in memory. A word nearly
	// every message holds (a content type, a host) then costs its word index
	// and a few lookups, not a walk of the day.
	ReadLessTheRest WordRead = "rollups less the rest"
	// ReadWalk walks the statistics index, each entry's seq tested against
	// the word's, read into a bit set (SQLite's own test, seq IN the word's
	// rowids, seeks a temporary b-tree per row, three times the CPU).
	ReadWalk WordRead = "walk"
	// readTalliesAlone counts a day no message of which holds the word
	// from its tallies alone (tallies.go).
	readTalliesAlone WordRead = "tallies alone"
)

// choose is the read of a day file of lastSeq messages, holding of them
// holding the word, where the rollups count counted messages of the query's
// scope and range (but for its q); the read by seq still waits for the
// probe. Nothing here reads a clock: the same counts give the same read.
func (c Config) choose(holding, lastSeq, counted int64) WordRead {
	switch lacking := lastSeq - holding; {
	case lacking*c.LookupCostInRows < counted:
		return ReadLessTheRest
	case holding*c.LookupCostInRows < counted:
		return ReadBySeq
	}
	return ReadWalk
}

// bySeqMayPay reports whether a read by seq can cost less than the walk
// before the rollups are counted: never when both the messages holding the
// word and those lacking it are 1/LookupCostInRows of the day's or more.
func (c Config) bySeqMayPay(holding, lastSeq int64) bool {
	return min(holding, lastSeq-holding)*c.LookupCostInRows < lastSeq
}

// wordDay is the plan of one day file.
type wordDay struct {
	part dayfile.Part
	// shared: the day has other files (retention classes), whose messages
	// the day's rollups count too, so they cannot stand for this file's
	// (planDay walks it).
	shared bool
	read   WordRead
	// bySeq is the where of the messages read by seq (ReadBySeq), holding
	// the word's seqs (ReadWalk, ReadLessTheRest), of the file's lastSeq.
	bySeq   *dayfile.Where
	holding *bitset.BitSet
	lastSeq int64
	// ReadLessTheRest: the day's rollups, the minutes they cannot stand for,
	// and the seqs of the messages lacking the word.
	rollups *stats.RollupBuilder
	refused []statsengine.Minute
	lacking []int64
}

// call is one Stats call of a q of one word: its query, its trace.
type call struct {
	r     *Reader
	q     stats.Query
	f     domain.Filter // q's, over its counted range
	words string
	now   time.Time
	trace *Trace
}

// wordPlan is the plan of a q of one word, the store's own plan the
// engine takes for it (statsengine.StorePlan).
type wordPlan struct{ r *Reader }

// Takes reports whether q's q is one word.
func (p wordPlan) Takes(q stats.Query) bool {
	_, oneWord := dayfile.Words(q.Filter.Text)
	return oneWord
}

// CountInto answers q, whose q is one word, over f, its counted range,
// exactly into b or within the bounds of a day's rollups (count). It reads
// what each day file's word index says of the word (findWord), plans each
// day (planDay), then counts each by its read.
func (p wordPlan) CountInto(ctx context.Context, q stats.Query, f domain.Filter, now time.Time, b *stats.Builder) (stats.Stats, error) {
	words, _ := dayfile.Words(q.Filter.Text)
	c := &call{r: p.r, q: q, f: f, words: words, now: now, trace: traceOf(ctx)}
	plans, err := c.findWord(ctx, words)
	if err != nil {
		return stats.Stats{}, err
	}
	for i := range plans {
		if err := c.planDay(ctx, &plans[i]); err != nil {
			return stats.Stats{}, err
		}
	}
	return c.count(ctx, plans, b)
}

// findWord plans each day file of the call's range, newest first, by what
// its word index says of the word: by seq when it finds few messages; its
// tallies alone when no message holds it; otherwise the walk, until planDay finds a
// read that costs less.
func (c *call) findWord(ctx context.Context, words string) ([]wordDay, error) {
	var plans []wordDay
	parts := c.r.dir.NewestFirst(dayfile.Range(c.f, nil))
	perDay := map[time.Time]int{}
	for _, p := range parts {
		perDay[p.Day]++
	}
	err := c.r.dir.Each(ctx, parts, func(f *dayfile.File) error {
		plan := wordDay{part: f.Part(), shared: perDay[f.Day] > 1}
		w := dayfile.ReadableWhere(c.q.Scope, c.f, c.now)
		expired, err := c.r.bodies.expired(ctx, f, c.now)
		if err != nil {
			return err
		}
		held, err := f.Held(ctx, words, w, c.r.cfg.FewMessages)
		switch {
		case err != nil:
			return f.Error(ctx, "stats: search", err)
		case expired && !held.None:
			plan.read = readWhole
		case held.None:
			plan.read = readTalliesAlone
		case held.Few:
			plan.read, plan.bySeq = ReadBySeq, w
		default:
			plan.read, plan.holding, plan.lastSeq = ReadWalk, held.Seqs, held.LastSeq
		}
		plans = append(plans, plan)
		return nil
	})
	return plans, err
}

// count counts each day of plans by its read. Without a day counted less
// the rest the answer is b's, the call's stats.Builder, exact; with one it
// is a stats.RollupBuilder's, within the bounds it keeps; and where the
// rest cannot be told so (Subtract reports false), every such day is
// walked and the answer is b's again.
func (c *call) count(ctx context.Context, plans []wordDay, b *stats.Builder) (stats.Stats, error) {
	if slices.ContainsFunc(plans, func(plan wordDay) bool { return plan.read == ReadLessTheRest }) {
		q := withoutText(c.q)
		all, lacking := stats.NewRollupBuilder(q, c.now), stats.NewRollupBuilder(q, c.now)
		for _, plan := range plans {
			if err := c.countDay(ctx, plan, all.Add, lacking.Add); err != nil {
				return stats.Stats{}, err
			}
			if plan.read == ReadLessTheRest {
				all.Merge(plan.rollups)
			}
		}
		if all.Subtract(lacking) {
			return all.Stats(), nil
		}
	}
	for _, plan := range plans {
		if plan.read == ReadLessTheRest {
			plan.read = ReadWalk
		}
		if err := c.countDay(ctx, plan, b.Add, nil); err != nil {
			return stats.Stats{}, err
		}
	}
	return b.Stats(), nil
}

// planDay picks the read of a day findWord left to the walk: when the
// rollups answer the query but for its q and a read by seq may pay, by the
// counts (Config.choose) of the day's rollups, counted through the engine,
// and the probe; else the walk. No file is held meanwhile: the engine holds
// the day's file for each of its reads.
func (c *call) planDay(ctx context.Context, plan *wordDay) error {
	if plan.read != ReadWalk || plan.shared {
		return nil
	}
	holding := int64(plan.holding.Count())
	q := c.dayQuery(plan.part.Day)
	if !q.RollupsAnswer() || !c.r.cfg.bySeqMayPay(holding, plan.lastSeq) {
		return nil
	}
	rollups := stats.NewRollupBuilder(withoutText(c.q), c.now)
	var tr statsengine.Trace
	refused, err := c.r.engine.CountRollups(ctx, q, c.now, rollups, &tr)
	c.trace.Engine.Add(tr)
	if err != nil {
		return err
	}
	read := c.r.cfg.choose(holding, plan.lastSeq, rollups.Count())
	var seqs []int64
	switch read {
	case ReadLessTheRest:
		seqs = seqsLacking(plan.holding, plan.lastSeq)
	case ReadBySeq:
		seqs = seqsOf(plan.holding)
	default:
		return nil
	}
	if len(seqs) > 0 { // no seq to read costs nothing
		warm := false
		err := c.r.dir.Each(ctx, []dayfile.Part{plan.part}, func(f *dayfile.File) error {
			var err error
			warm, err = c.r.cfg.Probe.Warm(ctx, f, seqs)
			return err
		})
		if err != nil || !warm {
			return err
		}
	}
	if read == ReadLessTheRest {
		plan.read, plan.rollups, plan.refused, plan.lacking = read, rollups, refused, seqs
		return nil
	}
	plan.read, plan.bySeq = read, dayfile.ReadableWhere(c.q.Scope, c.f, c.now)
	plan.bySeq.AddSeqs(seqs)
	return nil
}

// dayQuery is the call's query without its q, over its counted range's
// part in day.
func (c *call) dayQuery(day time.Time) stats.Query {
	q := withoutText(c.q)
	q.Filter.From, q.Filter.To = c.f.From, c.f.To
	if q.Filter.From.Before(day) {
		q.Filter.From = day
	}
	if end := day.Add(24 * time.Hour); q.Filter.To.After(end) {
		q.Filter.To = end
	}
	return q
}

// countDay adds to add the samples of plan's day of the call's scope and
// filter that hold the word, but for those its rollups count; and to
// lacking, for ReadLessTheRest, the samples its rollups count of the
// messages lacking the word. Its tallies after its messages (tallies.go). It holds the day's file for the read; reads
// nothing when retention dropped the day meanwhile.
func (c *call) countDay(ctx context.Context, plan wordDay, add, lacking func(stats.Sample)) error {
	refused := make([]domain.Filter, len(plan.refused)) // ReadLessTheRest: the minutes walked
	for i, m := range plan.refused {
		refused[i] = minuteFilter(m, c.f)
	}
	return c.r.dir.Each(ctx, []dayfile.Part{plan.part}, func(f *dayfile.File) error {
		switch plan.read {
		case readTalliesAlone:
			return c.tallies(ctx, f, add)
		case readWhole:
			c.trace.DaysWhole++
			w := dayfile.ReadableWhere(c.q.Scope, c.f, c.now)
			if err := c.r.searchSamples(ctx, f, w, c.f.Matcher(), c.words, c.now, c.trace, add); err != nil {
				return err
			}
			return c.tallies(ctx, f, add)
		case ReadBySeq:
			c.trace.DaysBySeq++
			if err := walkSamples(ctx, f, bySeq, plan.bySeq, nil, add); err != nil {
				return err
			}
			return c.tallies(ctx, f, add)
		case ReadWalk:
			c.trace.DaysWalked++
			if err := walkSamples(ctx, f, statsIndexWalk, dayfile.ReadableWhere(c.q.Scope, c.f, c.now), plan.holding, add); err != nil {
				return err
			}
			return c.tallies(ctx, f, add)
		}
		c.trace.DaysLessTheRest++
		type minute struct {
			start int64 // Unix seconds
			name  string
		}
		notCounted := make(map[minute]bool, len(plan.refused))
		for i, m := range plan.refused {
			notCounted[minute{m.Start.Unix(), m.Name}] = true
			w := dayfile.ReadableWhere(c.q.Scope, refused[i], c.now)
			if err := walkSamples(ctx, f, statsIndexWalk, w, plan.holding, add); err != nil {
				return err
			}
		}
		refusedMinute := func(sample stats.Sample) bool {
			at := sample.CreatedAt.Unix()
			return notCounted[minute{at - at%60, sample.Name}]
		}
		w := dayfile.ReadableWhere(c.q.Scope, c.f, c.now)
		w.AddSeqs(plan.lacking)
		err := walkSamples(ctx, f, bySeq, w, nil, func(sample stats.Sample) {
			if !refusedMinute(sample) {
				lacking(sample)
			}
		})
		if err != nil {
			return err
		}
		return c.talliesLessTheRest(ctx, f, refusedMinute, add, lacking)
	})
}

// minuteFilter is f narrowed to m's application and to m.
func minuteFilter(m statsengine.Minute, f domain.Filter) domain.Filter {
	f.Name = m.Name
	if f.From.Before(m.Start) {
		f.From = m.Start
	}
	if end := m.Start.Add(time.Minute); f.To.IsZero() || f.To.After(end) {
		f.To = end
	}
	return f
}

// withoutText is q without its q.
func withoutText(q stats.Query) stats.Query {
	q.Filter.Text = ""
	return q
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
