package daystats

import (
	"sync"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
)

// hourVersions are the versions of the day files' hours that the engine
// keeps whole hours under (ports.RollupSource.RollupHours): each day file
// counts, per hour, the transactions that wrote messages created in it.
type hourVersions struct {
	mu       sync.Mutex
	versions map[*dayfile.File]map[int64]uint64 // by hour, Unix seconds
	// epochs number the day files the engine's versions were told of
	// (version): a file dropped and created again is another.
	epochs    map[*dayfile.File]uint64
	lastEpoch uint64
}

func newHourVersions() *hourVersions {
	return &hourVersions{versions: map[*dayfile.File]map[int64]uint64{}, epochs: map[*dayfile.File]uint64{}}
}

// forget drops the versions of a day file retention dropped.
func (c *hourVersions) forget(d *dayfile.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.versions, d)
	delete(c.epochs, d)
}

// version is the hour's version as ports.RollupSource.RollupHours tells it:
// the transactions counted in it (wrote) under f's epoch, so that no value
// comes back once f is dropped and the day created again.
func (c *hourVersions) version(f *dayfile.File, hour int64) uint64 {
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

// wrote counts, per hour of f, a transaction that wrote msgs, whether it
// committed or not: a whole hour the engine read at one version stands for
// the hour until the next. A transaction counts once it has ended and a
// read takes the version before its query, so a read that misses a write
// never carries that write's version.
func (c *hourVersions) wrote(f *dayfile.File, msgs []domain.Message) {
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

func hourOf(unix int64) int64 { return unix - unix%3600 }
