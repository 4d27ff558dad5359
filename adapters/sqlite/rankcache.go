package sqlite

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/reqlog/reqlog/domain"
)

// rankCacheBytes bounds the memory of the hours' rankings kept between
// statistics calls: a whole scope's hour holds at most 2·MaxRankedKeys paths,
// so about 40 such hours when paths carry ids, and far more otherwise.
const rankCacheBytes = 64 << 20

// rankKey names the rankings of one whole hour of a day file: of one
// application, or of every application of the scope when name is "".
type rankKey struct {
	day                   *dayFile
	account, domain, name string
	hour                  int64 // Unix seconds
}

// rankCache keeps the merged paths and routes of whole hours, so that the
// next statistics call over them merges one rollup an hour instead of the
// hour's minutes of every application (domain.RollupStatsBuilder.AddRankings).
// An entry stands for its hour while the hour's minute rollups count as many
// messages as it does: rollups only grow, and only a purge removes them,
// whole day files at once (forgetDay).
type rankCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[rankKey, rankEntry]
	bytes int
}

type rankEntry struct {
	rankings *domain.Rollup // Count, Paths and Routes; never changed once kept
	bytes    int
}

func newRankCache() *rankCache {
	c := &rankCache{}
	// Bounded by bytes (put); the count bound only has to be above that.
	c.lru, _ = simplelru.NewLRU(1<<20, func(_ rankKey, e rankEntry) { c.bytes -= e.bytes })
	return c
}

func (c *rankCache) get(k rankKey) *domain.Rollup {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	if !ok {
		return nil
	}
	return e.rankings
}

// put keeps rankings, which no one may change from then on, evicting the
// least recently used entries past rankCacheBytes.
func (c *rankCache) put(k rankKey, rankings *domain.Rollup) {
	size := rankingsBytes(rankings)
	if size > rankCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(k, rankEntry{rankings, size})
	c.bytes += size
	for c.bytes > rankCacheBytes {
		c.lru.RemoveOldest()
	}
}

// forgetDay drops the entries of a day file a purge dropped.
func (c *rankCache) forgetDay(d *dayFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.lru.Keys() {
		if k.day == d {
			c.lru.Remove(k)
		}
	}
}

// rankingsBytes estimates the memory of r: its encoding, whose keys share
// prefixes, twice over, and a map entry and counts per key.
func rankingsBytes(r *domain.Rollup) int {
	data, _ := r.AppendBinary(nil)
	return 2*len(data) + 96*(r.Paths.Len()+r.Routes.Len()) + 256
}
