package stats

import (
	"slices"
	"strings"
)

// KeyCounter counts messages, and the errors among them, per key (a path as
// PathOf gives it, or an application) in bounded memory, and merges with
// another counter into the counter of both. Its zero value is empty.
//
// It counts exactly while it has met at most 2·MaxRankedKeys keys, as
// Builder does, and so ranks as Top does. A new key past that prunes it
// to at most MaxRankedKeys keys as a Misra–Gries summary does: the
// (MaxRankedKeys+1)-th largest count is taken off every key, as a debt, and
// the keys left with nothing are dropped. Whatever order of Add and Merge
// built it, each count (and error count) is then at most the true one and at
// least the true one less n/(MaxRankedKeys+1), n being all the messages
// counted: every key of more messages than that is kept, and keys whose
// counts differ by more than that rank in the right order. The counts
// reported are the messages counted since a key was last admitted, not the
// count less its debt, so a key never dropped keeps its exact count.
type KeyCounter struct {
	// index is the entry of each key, built when first needed: a counter
	// decoded only to be merged into another never needs it.
	index   map[string]int32
	entries []keyEntry
	// capacity is how many keys a prune keeps: MaxRankedKeys when 0 (tests
	// lower it).
	capacity int
	// keyViews says the keys share one string (a decoded counter's): another
	// counter copies those it keeps, so that it does not hold the whole.
	keyViews bool
	// decoding is UnmarshalBinary's memory, kept for the next.
	decoding struct {
		block []byte
		ends  []int
	}
}

type keyEntry struct {
	key           string
	count, errors int64
	// debt is what pruning took off the key: it is kept while count > debt.
	debt int64
}

func (c *KeyCounter) keep() int {
	if c.capacity > 0 {
		return c.capacity
	}
	return MaxRankedKeys
}

// Len is how many keys the counter holds.
func (c *KeyCounter) Len() int { return len(c.entries) }

// Add counts one message of key, an error or not. The key is copied, so that
// a store may pass views of its own memory.
func (c *KeyCounter) Add(key string, isError bool) {
	var errors int64
	if isError {
		errors = 1
	}
	c.add(key, 1, errors, 0, true)
}

// AddCounts counts count messages of key, errors of them errors.
func (c *KeyCounter) AddCounts(key string, count, errors int64) {
	c.add(key, count, errors, 0, true)
}

// Merge adds the counts of o, which it leaves as it was.
func (c *KeyCounter) Merge(o *KeyCounter) {
	if o == c {
		o = c.Clone()
	}
	for _, e := range o.entries {
		c.add(e.key, e.count, e.errors, e.debt, o.keyViews)
	}
}

// Subtract takes o's counts, a part of c's, out of c: keys left with no
// message are dropped. While c counts exactly (it has never pruned) it
// reports false, leaving c as it was, when o counts a key, or errors of it,
// that c does not. Past pruning c's counts are bounds, and so are the
// differences: a key o counts and c dropped is left dropped, and a count
// falls no lower than nothing. Each is then at most the rest's true count and
// at least that less n/(MaxRankedKeys+1), n being all that c counted.
func (c *KeyCounter) Subtract(o *KeyCounter) bool {
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	exact := !slices.ContainsFunc(c.entries, func(e keyEntry) bool { return e.debt > 0 })
	for _, oe := range o.entries {
		i, ok := c.index[oe.key]
		if exact && (!ok || c.entries[i].count < oe.count || c.entries[i].errors < oe.errors) {
			return false
		}
	}
	for _, oe := range o.entries {
		if i, ok := c.index[oe.key]; ok {
			e := &c.entries[i]
			e.count -= oe.count
			e.errors = min(max(e.errors-oe.errors, 0), max(e.count, 0))
		}
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.count > e.debt {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
	c.reindex()
	return true
}

// Clone returns a copy of c that shares no memory with it but the keys.
func (c *KeyCounter) Clone() *KeyCounter {
	return &KeyCounter{entries: slices.Clone(c.entries), capacity: c.capacity, keyViews: c.keyViews}
}

// add counts count messages (errors of them errors) of key, with the debt
// they carry. copyKey says whether key may be a view to copy.
func (c *KeyCounter) add(key string, count, errors, debt int64, copyKey bool) {
	if len(c.index) < len(c.entries) {
		c.reindex()
	}
	if i, ok := c.index[key]; ok {
		e := &c.entries[i]
		e.count += count
		e.errors += errors
		e.debt += debt
		return
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
	c.entries = append(c.entries, keyEntry{key: key, count: count, errors: errors, debt: debt})
}

// prune takes the (keep+1)-th largest count less debt off every key and drops
// the keys left with nothing: at most keep stay.
func (c *KeyCounter) prune() {
	keep := c.keep()
	if len(c.entries) <= keep {
		return
	}
	left := make([]int64, len(c.entries))
	for i, e := range c.entries {
		left[i] = e.count - e.debt
	}
	rank := len(left) - keep - 1 // ascending
	selectRank(left, rank)
	taken := left[rank]
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.debt += taken; e.count > e.debt {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):]) // let the dropped keys go
	c.entries = kept
	c.reindex()
}

// reindex builds the index of the entries.
func (c *KeyCounter) reindex() {
	if c.index == nil {
		c.index = make(map[string]int32, len(c.entries))
	}
	clear(c.index)
	for i, e := range c.entries {
		c.index[e.key] = int32(i)
	}
}

// Top returns the n keys of most messages, by count descending then key
// ascending (CompareKeyCounts).
func (c *KeyCounter) Top(n int) []KeyCount {
	if n <= 0 {
		return []KeyCount{}
	}
	top := make([]KeyCount, 0, min(n, len(c.entries))+1)
	for _, e := range c.entries {
		kc := KeyCount{Key: e.key, Count: e.count, Errors: e.errors}
		if len(top) == n && CompareKeyCounts(kc, top[n-1]) >= 0 {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, kc, CompareKeyCounts)
		top = slices.Insert(top, at, kc)
		top = top[:min(len(top), n)]
	}
	return top
}

// Reset empties the counter, keeping its memory.
func (c *KeyCounter) Reset() {
	clear(c.entries)
	c.entries = c.entries[:0]
	clear(c.index)
	c.keyViews = false
}
