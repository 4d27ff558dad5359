package stats

import (
	"slices"
	"strings"
)

// A Tally is what a Counter keeps of each key beyond its messages and errors:
// nothing for paths and applications (NoTally), the durations for routes
// (DurationDigest).
type Tally[T any] interface {
	*T
	// AddSample counts one message's sample.
	AddSample(s Sample)
	// Merge adds o, which it leaves as it was.
	Merge(o *T)
	// Subtract takes o, a part of it, out and reports true; or reports false
	// and is left as it was, when the rest cannot be told.
	Subtract(o *T) bool
	// rankedKeys is how many keys a Counter of such tallies keeps when it
	// prunes.
	rankedKeys() int
}

// NoTally keeps nothing: the tally of a KeyCounter.
type NoTally struct{}

func (*NoTally) AddSample(Sample)       {}
func (*NoTally) Merge(*NoTally)         {}
func (*NoTally) Subtract(*NoTally) bool { return true }

//lint:ignore U1000 called through the Tally constraint (staticcheck does not follow it)
func (*NoTally) rankedKeys() int { return MaxRankedKeys }

//lint:ignore U1000 called through the Tally constraint (staticcheck does not follow it)
func (*DurationDigest) rankedKeys() int { return MaxRankedRoutes }

// KeyCounter counts messages, and the errors among them, per path (as PathOf
// gives it) or application.
type KeyCounter = Counter[NoTally, *NoTally]

// RouteCounter counts messages, errors and durations per route template: what
// the statistics' top_routes come from. Each route's percentiles are its
// DurationDigest's, with the same bounds as a bucket's.
type RouteCounter = Counter[DurationDigest, *DurationDigest]

// Counter counts messages, the errors among them and a tally of them per key,
// in bounded memory, and merges with another counter into the counter of
// both. Its zero value is empty.
//
// It counts exactly while it has met at most twice the keys it keeps
// (MaxRankedKeys, or MaxRankedRoutes for routes), as Builder does, and so
// ranks as Top does. A new key past that prunes it to at most that many keys
// as a Misra–Gries summary does: the (kept+1)-th largest count is taken off
// every key, as a debt, and the keys left with nothing are dropped. Whatever
// order of Add and Merge built it, each count (and error count) is then at
// most the true one and at least the true one less n/(kept+1), n being all the
// messages counted: every key of more messages than that is kept, and keys
// whose counts differ by more than that rank in the right order. The counts
// (and tallies) reported are those of the messages counted since a key was
// last admitted, not the count less its debt, so a key never dropped keeps its
// exact count.
type Counter[T any, P Tally[T]] struct {
	// index is the entry of each key, built when first needed: a counter
	// decoded only to be merged into another never needs it.
	index   map[string]int32
	entries []CounterEntry[T]
	// capacity is how many keys a prune keeps: the tally's rankedKeys when 0
	// (tests lower it).
	capacity int
	// keyViews says the keys share one string (a decoded counter's): another
	// counter copies those it keeps, so that it does not hold the whole.
	keyViews bool
	// byCount says the entries are in Top's order (SortByCount) and have
	// not changed since.
	byCount bool
}

// CounterEntry is one key of a Counter.
type CounterEntry[T any] struct {
	// Tally comes first: a zero-size field last would pad every entry.
	Tally         T
	Key           string
	Count, Errors int64
	// Debt is what pruning took off the key: it is kept while Count > Debt.
	Debt int64
}

func (c *Counter[T, P]) keep() int {
	if c.capacity == 0 {
		c.capacity = P(nil).rankedKeys()
	}
	return c.capacity
}

// Len is how many keys the counter holds.
func (c *Counter[T, P]) Len() int { return len(c.entries) }

// Add counts one message of key, an error or not, with nothing to tally. The
// key is copied, so that a store may pass views of its own memory.
func (c *Counter[T, P]) Add(key string, isError bool) {
	var errors int64
	if isError {
		errors = 1
	}
	c.add(key, 1, errors, 0, true)
}

// AddCounts counts count messages of key, errors of them errors.
func (c *Counter[T, P]) AddCounts(key string, count, errors int64) {
	c.add(key, count, errors, 0, true)
}

// AddSample counts s's message as one of key, and tallies it.
func (c *Counter[T, P]) AddSample(key string, s Sample) {
	var errors int64
	if IsError(s.StatusCode) {
		errors = 1
	}
	P(&c.add(key, 1, errors, 0, true).Tally).AddSample(s)
}

// Merge adds the counts of o, which it leaves as it was.
func (c *Counter[T, P]) Merge(o *Counter[T, P]) {
	if o == c {
		o = c.Clone()
	}
	if _, none := any((*T)(nil)).(*NoTally); none { // paths and names: the hot merge
		for i := range o.entries {
			from := &o.entries[i]
			c.add(from.Key, from.Count, from.Errors, from.Debt, o.keyViews)
		}
		return
	}
	for i := range o.entries {
		from := &o.entries[i]
		P(&c.add(from.Key, from.Count, from.Errors, from.Debt, o.keyViews).Tally).Merge(&from.Tally)
	}
}

// Subtract takes o's counts, a part of c's, out of c: keys left with no
// message are dropped. While c counts exactly (it has never pruned) it
// reports false, leaving c as it was, when o counts a key, or errors of it,
// that c does not; and so it does, whether exact or not, when a key's tally
// cannot be told (DurationDigest.Subtract). Past pruning c's counts are
// bounds, and so are the differences: a key o counts and c dropped is left
// dropped, and a count falls no lower than nothing. Each is then at most the
// rest's true count and at least that less n/(kept+1), n being all that c
// counted.
func (c *Counter[T, P]) Subtract(o *Counter[T, P]) bool {
	c.byCount = false
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	exact := !slices.ContainsFunc(c.entries, func(e CounterEntry[T]) bool { return e.Debt > 0 })
	left := make(map[int32]CounterEntry[T], len(o.entries))
	for i := range o.entries {
		oe := &o.entries[i]
		at, ok := c.index[oe.Key]
		if !ok {
			if exact {
				return false
			}
			continue
		}
		e := c.entries[at]
		if exact && (e.Count < oe.Count || e.Errors < oe.Errors) {
			return false
		}
		var tally T
		P(&tally).Merge(&e.Tally)
		if !P(&tally).Subtract(&oe.Tally) {
			return false
		}
		e.Tally = tally
		e.Count -= oe.Count
		e.Errors = min(max(e.Errors-oe.Errors, 0), max(e.Count, 0))
		left[at] = e
	}
	kept := c.entries[:0]
	for i, e := range c.entries {
		if changed, ok := left[int32(i)]; ok {
			e = changed
		}
		if e.Count > e.Debt {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
	c.reindex()
	return true
}

// Clone returns a copy of c that shares no memory with it but the keys.
func (c *Counter[T, P]) Clone() *Counter[T, P] {
	out := &Counter[T, P]{entries: make([]CounterEntry[T], len(c.entries)), capacity: c.capacity, keyViews: c.keyViews}
	for i := range c.entries {
		e := &c.entries[i]
		out.entries[i] = CounterEntry[T]{Key: e.Key, Count: e.Count, Errors: e.Errors, Debt: e.Debt}
		P(&out.entries[i].Tally).Merge(&e.Tally)
	}
	return out
}

// add counts count messages (errors of them errors) of key, with the debt
// they carry, and returns key's entry for its tally. copyKey says whether key
// may be a view to copy.
func (c *Counter[T, P]) add(key string, count, errors, debt int64, copyKey bool) *CounterEntry[T] {
	c.byCount = false
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	if i, ok := c.index[key]; ok {
		e := &c.entries[i]
		e.Count += count
		e.Errors += errors
		e.Debt += debt
		return e
	}
	if len(c.entries) >= 2*c.keep() {
		c.prune()
	}
	if c.index == nil {
		c.index = map[string]int32{}
	}
	if copyKey {
		key = strings.Clone(key)
	}
	c.index[key] = int32(len(c.entries))
	c.entries = append(c.entries, CounterEntry[T]{Key: key, Count: count, Errors: errors, Debt: debt})
	return &c.entries[len(c.entries)-1]
}

// prune takes the (keep+1)-th largest count less debt off every key and drops
// the keys left with nothing: at most keep stay.
func (c *Counter[T, P]) prune() {
	keep := c.keep()
	if len(c.entries) <= keep {
		return
	}
	left := make([]int64, len(c.entries))
	for i, e := range c.entries {
		left[i] = e.Count - e.Debt
	}
	rank := len(left) - keep - 1 // ascending
	selectRank(left, rank)
	taken := left[rank]
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.Debt += taken; e.Count > e.Debt {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):]) // let the dropped keys go
	c.entries = kept
	c.reindex()
}

// reindex builds the index of the entries.
func (c *Counter[T, P]) reindex() {
	if c.index == nil {
		c.index = make(map[string]int32, len(c.entries))
	}
	clear(c.index)
	for i, e := range c.entries {
		c.index[e.Key] = int32(i)
	}
}

// Top returns the n keys of most messages, by count descending then key
// ascending (CompareKeyCounts).
func (c *Counter[T, P]) Top(n int) []KeyCount {
	if n <= 0 {
		return []KeyCount{}
	}
	top := make([]KeyCount, 0, min(n, len(c.entries))+1)
	for _, e := range c.entries {
		kc := KeyCount{Key: e.Key, Count: e.Count, Errors: e.Errors}
		if len(top) == n && CompareKeyCounts(kc, top[n-1]) >= 0 {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, kc, CompareKeyCounts)
		top = slices.Insert(top, at, kc)
		top = top[:min(len(top), n)]
	}
	return top
}

// SortByCount puts the entries in Top's order and indexes them, so that
// TopWith looks c, kept, up by key and stops reading it at its first key
// that cannot rank. A counter kept for many calls is sorted once, before it
// is shared.
func (c *Counter[T, P]) SortByCount() {
	slices.SortFunc(c.entries, func(a, b CounterEntry[T]) int {
		return CompareKeyCounts(KeyCount{Key: a.Key, Count: a.Count}, KeyCount{Key: b.Key, Count: b.Count})
	})
	c.reindex()
	c.byCount = true
}

// TopWith returns the n keys of most messages of c and kept together, as
// Top of their merge does while the merge would count exactly, without
// merging: kept is read, never written (not even its index), so that one
// counter kept for many calls (a cache's merge of a day's paths, tens of
// thousands of them) ranks in each call for a scan of its entries, not
// their copy. Past pruning each count is the sum of the two counters' own,
// within the bounds Counter gives.
func (c *Counter[T, P]) TopWith(kept *Counter[T, P], n int) []KeyCount {
	if n <= 0 {
		return []KeyCount{}
	}
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	top := make([]KeyCount, 0, n+1)
	rank := func(kc KeyCount) {
		if len(top) == n && CompareKeyCounts(kc, top[n-1]) >= 0 {
			return
		}
		at, _ := slices.BinarySearchFunc(top, kc, CompareKeyCounts)
		top = slices.Insert(top, at, kc)
		top = top[:min(len(top), n)]
	}
	if kept.byCount { // sorted, its index whole: read, not written
		c.rankSortedWith(kept, rank, func() (KeyCount, bool) {
			if len(top) < n {
				return KeyCount{}, false
			}
			return top[n-1], true
		})
		return top
	}
	var most int64 // c's largest count: what a key of kept can gain from c
	for _, e := range c.entries {
		most = max(most, e.Count)
	}
	// A key of c that kept holds is ranked with kept's count added; one
	// skipped below ranks no higher on c's count alone.
	summed := make([]bool, len(c.entries))
	for i := range kept.entries {
		e := &kept.entries[i]
		if len(top) == n && CompareKeyCounts(KeyCount{Key: e.Key, Count: e.Count + most}, top[n-1]) >= 0 {
			continue
		}
		kc := KeyCount{Key: e.Key, Count: e.Count, Errors: e.Errors}
		if at, ok := c.index[e.Key]; ok {
			kc.Count += c.entries[at].Count
			kc.Errors += c.entries[at].Errors
			summed[at] = true
		}
		rank(kc)
	}
	for i, e := range c.entries {
		if !summed[i] {
			rank(KeyCount{Key: e.Key, Count: e.Count, Errors: e.Errors})
		}
	}
	return top
}

// rankSortedWith ranks c's keys with kept's counts added, then kept's
// other keys in kept's order (Top's) until one ranks no higher than the
// last ranked (least: false while fewer are ranked than asked for): no key
// after it can rank.
func (c *Counter[T, P]) rankSortedWith(kept *Counter[T, P], rank func(KeyCount), least func() (KeyCount, bool)) {
	for _, e := range c.entries {
		kc := KeyCount{Key: e.Key, Count: e.Count, Errors: e.Errors}
		if at, ok := kept.index[e.Key]; ok {
			kc.Count += kept.entries[at].Count
			kc.Errors += kept.entries[at].Errors
		}
		rank(kc)
	}
	for i := range kept.entries {
		e := &kept.entries[i]
		if last, full := least(); full && CompareKeyCounts(KeyCount{Key: e.Key, Count: e.Count}, last) >= 0 {
			return
		}
		if _, ranked := c.index[e.Key]; !ranked {
			rank(KeyCount{Key: e.Key, Count: e.Count, Errors: e.Errors})
		}
	}
}

// Tally is key's tally, or nil when the counter holds no such key.
func (c *Counter[T, P]) Tally(key string) *T {
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	if i, ok := c.index[key]; ok {
		return &c.entries[i].Tally
	}
	return nil
}

// Reset empties the counter, keeping its memory.
func (c *Counter[T, P]) Reset() {
	c.byCount = false
	clear(c.entries)
	c.entries = c.entries[:0]
	clear(c.index)
	c.keyViews = false
}

// Entries are the counter's keys, in no order, for an encoding to write. The
// slice is the counter's own: read it, do not keep it.
func (c *Counter[T, P]) Entries() []CounterEntry[T] { return c.entries }

// SetEntries makes entries, as an encoding read them, the counter's: it takes
// the slice, whose keys are distinct and may be views of one string
// (keyViews) that a counter merged into copies what it keeps. It reports
// false, leaving the counter empty, when they are more than a counter holds
// or an entry's counts are not some messages (Count ≥ 1), at most as many
// errors, and a debt below the count.
func (c *Counter[T, P]) SetEntries(entries []CounterEntry[T], keyViews bool) bool {
	c.Reset()
	if len(entries) > 2*c.keep() {
		return false
	}
	for _, e := range entries {
		if e.Count < 1 || e.Errors < 0 || e.Errors > e.Count || e.Debt < 0 || e.Debt >= e.Count {
			return false
		}
	}
	c.entries, c.keyViews = entries, keyViews
	c.index = nil
	return true
}
