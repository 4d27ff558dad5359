package daystats

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// hourCacheBytes bounds the memory of the hours kept between statistics
// calls: a whole scope's hour holds at most 2·MaxRankedKeys paths, so about
// 40 such hours when paths carry ids, and far more otherwise.
const hourCacheBytes = 64 << 20

// hourKey names what a view (one application, or every application of the
// scope when name is "") counted in one whole hour of a day file, in parts
// of width (its buckets' width, at most an hour).
type hourKey struct {
	day                   *dayfile.File
	account, domain, name string
	hour                  int64 // Unix seconds
	width                 time.Duration
}

// keptHour is a view's whole hour as the statistics count it: each part's
// messages, status classes and durations (the view's applications merged),
// its applications, and the merge of its paths and routes. It stands for the
// hour while the day file's version of the hour is the one it was read at
// (hourCache.wrote). Never changed once kept.
type keptHour struct {
	version  uint64
	parts    []stats.Rollup
	names    stats.KeyCounter
	rankings stats.Rollup // paths and routes
	bytes    int
}

// countInto counts the hour into b and reports true when every part can
// stand for its span at b's now; otherwise it counts nothing.
func (k *keptHour) countInto(b *stats.RollupBuilder, hour time.Time, width time.Duration) bool {
	for i := range k.parts {
		start := hour.Add(time.Duration(i) * width)
		if k.parts[i].Count > 0 && !b.Accepts(start, start.Add(width), &k.parts[i]) {
			return false
		}
	}
	for i := range k.parts {
		start := hour.Add(time.Duration(i) * width)
		if k.parts[i].Count > 0 {
			b.AddBuckets(start, start.Add(width), &k.parts[i])
		}
	}
	b.AddNames(&k.names)
	b.AddRankings(&k.rankings)
	return true
}

// hourCache keeps views' whole hours, least recently used out first past
// hourCacheBytes, and the versions of the day files' hours they stand for.
type hourCache struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[hourKey, *keptHour]
	bytes    int
	versions map[*dayfile.File]map[int64]uint64 // by hour, Unix seconds
	// epochs number the day files the engine's versions were told of
	// (version): a file dropped and created again is another.
	epochs    map[*dayfile.File]uint64
	lastEpoch uint64
}

func newHourCache() *hourCache {
	c := &hourCache{versions: map[*dayfile.File]map[int64]uint64{}, epochs: map[*dayfile.File]uint64{}}
	// Bounded by bytes (put); the count bound only has to be above that.
	c.lru, _ = simplelru.NewLRU(1<<20, func(_ hourKey, k *keptHour) { c.bytes -= k.bytes })
	return c
}

// countKept counts into b the hour kept under key, starting at hour, if it
// was kept at the version its day file's hour has now and can stand for
// itself at b's now; and returns that version, which an hour read now is
// kept at.
func (c *hourCache) countKept(key hourKey, hour time.Time, b *stats.RollupBuilder) (version uint64, counted bool) {
	c.mu.Lock()
	version = c.versions[key.day][key.hour]
	k, ok := c.lru.Get(key)
	c.mu.Unlock()
	if !ok || k.version != version {
		return version, false
	}
	return version, k.countInto(b, hour, key.width)
}

// put keeps k, which no one may change from then on.
func (c *hourCache) put(key hourKey, k *keptHour) {
	k.bytes = keptBytes(k)
	if k.bytes > hourCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(key, k)
	c.bytes += k.bytes
	for c.bytes > hourCacheBytes {
		c.lru.RemoveOldest()
	}
}

// forget drops the hours and versions of a day file retention dropped.
func (c *hourCache) forget(d *dayfile.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range c.lru.Keys() {
		if key.day == d {
			c.lru.Remove(key)
		}
	}
	delete(c.versions, d)
	delete(c.epochs, d)
}

// version is the hour's version as ports.RollupSource.RollupHours tells it:
// the transactions counted in it (wrote) under f's epoch, so that no value
// comes back once f is dropped and the day created again.
func (c *hourCache) version(f *dayfile.File, hour int64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	epoch, ok := c.epochs[f]
	if !ok {
		c.lastEpoch++
		epoch = c.lastEpoch
		c.epochs[f] = epoch
	}
	return epoch<<32 | c.versions[f][hour]&(1<<32-1)
}

// keptBytes estimates the memory of k: its rollups' encodings, whose keys
// share prefixes, twice over, and a map entry and counts per key.
func keptBytes(k *keptHour) int {
	data := rollupcodec.AppendRollup(nil, &k.rankings)
	n := 2*len(data) + 96*(k.rankings.Paths.Len()+k.rankings.Routes.Len()+k.names.Len()) + 256
	for i := range k.parts {
		data = rollupcodec.AppendRollup(data[:0], &k.parts[i])
		n += 2*len(data) + 128
	}
	return n
}

// wrote counts, per hour of f, a transaction that wrote msgs, whether it
// committed or not: a kept hour read at one version stands for the hour
// until the next. A transaction counts once it has ended and a read takes
// the version before its query, so a read that misses a write never
// carries that write's version.
func (c *hourCache) wrote(f *dayfile.File, msgs []domain.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.versions[f]
	if v == nil {
		v = map[int64]uint64{}
		c.versions[f] = v
	}
	last := int64(-1)
	for _, m := range msgs {
		if hour := hourOf(m.CreatedAt.Unix()); hour != last {
			v[hour]++
			last = hour
		}
	}
}
