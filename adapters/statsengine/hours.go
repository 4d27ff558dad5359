package statsengine

import (
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// DefaultCacheBytes bounds the memory of the hours an engine keeps between
// calls: a whole scope's hour holds at most 2·MaxRankedKeys paths, so about
// 40 such hours when paths carry ids, and far more otherwise.
const DefaultCacheBytes = 64 << 20

// spanKey names what a view (one application, or every application of the
// scope when name is "") counted in a span of one hour, [from, to), in
// parts of width (its buckets' width, at most an hour): the whole hour, or
// the part of it a range starting or ending on a bucket covers (the default
// range's first hour).
type spanKey struct {
	scope    domain.Scope
	name     string
	from, to int64 // Unix seconds
	width    time.Duration
}

// keptSpan reports the key of [from, to) of q's view, and whether such a
// span can be kept: it starts and ends on its parts.
func keptSpan(q stats.Query, from, to time.Time) (spanKey, bool) {
	width := min(q.Interval.Width, time.Hour)
	key := spanKey{q.Scope, q.Filter.Name, from.Unix(), to.Unix(), width}
	return key, from.Truncate(width).Equal(from) && to.Truncate(width).Equal(to) // see floorHour
}

// keptHour is a view's span of an hour as the statistics count it: each
// part's messages, status classes and durations (the view's applications
// merged), its applications, and the merge of its paths and routes. It
// stands for the span while the source's version of the hour is the one it
// was read at. Never changed once kept.
type keptHour struct {
	version  uint64
	parts    []stats.Rollup
	names    stats.KeyCounter
	rankings stats.Rollup // paths and routes
	bytes    int
}

// countSeries counts the span from start into b but for its paths and
// routes (the caller adds rankings, see rankingsCache), and reports true
// when every part can stand for its span at b's now; otherwise it counts
// nothing.
func (k *keptHour) countSeries(b *stats.RollupBuilder, start time.Time, width time.Duration) bool {
	for i := range k.parts {
		start := start.Add(time.Duration(i) * width)
		if k.parts[i].Count > 0 && !b.Accepts(start, start.Add(width), &k.parts[i]) {
			return false
		}
	}
	for i := range k.parts {
		start := start.Add(time.Duration(i) * width)
		if k.parts[i].Count > 0 {
			b.AddBuckets(start, start.Add(width), &k.parts[i])
		}
	}
	b.AddNames(&k.names)
	return true
}

// hourCache keeps views' whole hours, least recently used out first past
// its bound in bytes. A nil cache keeps nothing.
type hourCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[spanKey, *keptHour]
	bytes int
	limit int
}

func newHourCache(limit int) *hourCache {
	if limit <= 0 {
		return nil
	}
	c := &hourCache{limit: limit}
	// Bounded by bytes (put); the count bound only has to be above that.
	c.lru, _ = simplelru.NewLRU(1<<20, func(_ spanKey, k *keptHour) { c.bytes -= k.bytes })
	return c
}

// get returns the hour kept at version, or nil.
func (c *hourCache) get(key spanKey, version uint64) *keptHour {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.lru.Get(key)
	if !ok || k.version != version {
		return nil
	}
	return k
}

// holds reports whether the hour is kept at version, leaving its place in
// the order as it was.
func (c *hourCache) holds(key spanKey, version uint64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.lru.Peek(key)
	return ok && k.version == version
}

// put keeps k, which no one may change from then on.
func (c *hourCache) put(key spanKey, k *keptHour) {
	if c == nil {
		return
	}
	k.bytes = keptBytes(k)
	if k.bytes > c.limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(key, k)
	c.bytes += k.bytes
	for c.bytes > c.limit {
		c.lru.RemoveOldest()
	}
}

// keptBytes estimates the memory of k: a map entry and a key's bytes per
// ranked key, a route's digest, and each part's durations.
func keptBytes(k *keptHour) int {
	n := 256 + 128*(k.rankings.Paths.Len()+k.names.Len()) + 1024*k.rankings.Routes.Len()
	for i := range k.parts {
		n += 128 + 8*int(min(k.parts[i].Durations.Count(), 2*stats.ExactDurations))
	}
	return n
}

// rankingsCache keeps the merge of the rankings of the kept spans a call
// counted, under their keys and versions: merging the paths of 24 kept hours,
// up to 2·MaxRankedKeys each, was two thirds of the CPU of a 24 h view, and
// the same hours come back call after call.
type rankingsCache struct {
	mu  sync.Mutex
	lru *simplelru.LRU[uint64, *stats.Rollup]
}

// rankingsKept is how many merges a rankingsCache keeps: one per view
// asked for lately.
const rankingsKept = 64

func newRankingsCache() *rankingsCache {
	c := &rankingsCache{}
	c.lru, _ = simplelru.NewLRU[uint64, *stats.Rollup](rankingsKept, nil)
	return c
}

// keptCounted is a kept span a call counted.
type keptCounted struct {
	key  spanKey
	kept *keptHour
}

// merged returns the merge of spans' rankings, from the cache or merged now
// and kept. The merge is never changed once kept.
func (c *rankingsCache) merged(spans []keptCounted) *stats.Rollup {
	h := fnv.New64a()
	for _, s := range spans {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d %d %d %d;", s.key.scope.Account, s.key.scope.Domain, s.key.name,
			s.key.from, s.key.to, s.key.width, s.kept.version)
	}
	sum := h.Sum64()
	c.mu.Lock()
	merged, ok := c.lru.Get(sum)
	c.mu.Unlock()
	if ok {
		return merged
	}
	merged = &stats.Rollup{}
	for _, s := range spans {
		merged.Paths.Merge(&s.kept.rankings.Paths)
		merged.Routes.Merge(&s.kept.rankings.Routes)
	}
	merged.Paths.SortByCount() // for RollupBuilder.AddKeptRankings
	c.mu.Lock()
	c.lru.Add(sum, merged)
	c.mu.Unlock()
	return merged
}
