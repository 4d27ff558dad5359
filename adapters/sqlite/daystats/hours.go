package daystats

import (
	"context"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/reqlog/reqlog/adapters/sqlite/dayfile"
	"github.com/reqlog/reqlog/domain"
)

// hourVersions are the versions of the day files' hours that the engine
// keeps whole hours under (ports.RollupSource.RollupHours): each day file
// counts, per hour, the transactions that wrote messages created in it.
// It also remembers which hours of a file a view has rollups in, until a
// transaction writes into the file (hoursOf).
type hourVersions struct {
	mu       sync.Mutex
	versions map[*dayfile.File]map[int64]uint64 // by hour, Unix seconds
	writes   map[*dayfile.File]uint64           // every transaction of the file
	hours    *simplelru.LRU[viewOfFile, keptHours]
	// epochs number the day files the engine's versions were told of
	// (version): a file dropped and created again is another.
	epochs    map[*dayfile.File]uint64
	lastEpoch uint64
}

// keptViews bounds how many views' hours of a file hourVersions remembers:
// a few hundred bytes each.
const keptViews = 4096

func newHourVersions() *hourVersions {
	hours, _ := simplelru.NewLRU[viewOfFile, keptHours](keptViews, nil)
	return &hourVersions{versions: map[*dayfile.File]map[int64]uint64{}, writes: map[*dayfile.File]uint64{},
		epochs: map[*dayfile.File]uint64{}, hours: hours}
}

// viewOfFile is a view (one application, or every one of the scope when
// name is "") in one day file.
type viewOfFile struct {
	f     *dayfile.File
	scope domain.Scope
	name  string
}

// rollupHour is an hour (Unix seconds) in which a view has rollups, and
// how many.
type rollupHour struct{ hour, rollups int64 }

// keptHours are a view's hours of a file as read after writes transactions
// into it.
type keptHours struct {
	writes uint64
	hours  []rollupHour
}

// hoursOf returns the view's hours of its file read since the file's last
// transaction, and true; otherwise the count of the file's transactions to
// keep the hours read now at (keepHours), taken before they are read, so
// that hours read while a transaction ends are not kept past it.
func (c *hourVersions) hoursOf(v viewOfFile) (hours []rollupHour, writes uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	writes = c.writes[v.f]
	if kept, found := c.hours.Get(v); found && kept.writes == writes {
		return kept.hours, writes, true
	}
	return nil, writes, false
}

// keepHours keeps the view's hours read after writes transactions into its
// file; nobody changes them from then on.
func (c *hourVersions) keepHours(v viewOfFile, writes uint64, hours []rollupHour) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hours.Add(v, keptHours{writes, hours})
}

// fileHours returns the hours of f in which scope (name alone when not "")
// has rollups, with how many, oldest first: from the versions' memory while
// no transaction wrote into f since they were read (hourVersions.hoursOf).
func (r *Reader) fileHours(ctx context.Context, f *dayfile.File, scope domain.Scope, name string) ([]rollupHour, error) {
	key := viewOfFile{f, scope, name}
	hours, writes, ok := r.versions.hoursOf(key)
	if ok {
		return hours, nil
	}
	args := []any{scope.Account, scope.Domain}
	query := `SELECT minute - minute % 3600, count(*) FROM rollups WHERE account = ? AND domain = ?`
	if name != "" {
		query += ` AND name = ?`
		args = append(args, name)
	}
	rows, err := f.Read.QueryContext(ctx, query+` GROUP BY 1 ORDER BY 1`, args...)
	if err != nil {
		return nil, f.Error(ctx, "stats: rollup hours", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h rollupHour
		if err := rows.Scan(&h.hour, &h.rollups); err != nil {
			return nil, f.Error(ctx, "stats: rollup hours", err)
		}
		hours = append(hours, h)
	}
	if err := rows.Err(); err != nil {
		return nil, f.Error(ctx, "stats: rollup hours", err)
	}
	r.versions.keepHours(key, writes, hours)
	return hours, nil
}

// forget drops the versions of a day file retention dropped.
func (c *hourVersions) forget(d *dayfile.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.versions, d)
	delete(c.writes, d)
	delete(c.epochs, d)
	for _, v := range c.hours.Keys() {
		if v.f == d {
			c.hours.Remove(v)
		}
	}
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
	c.writes[f]++
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
