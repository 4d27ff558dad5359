// Package memory is a message store held in the process's memory: a development
// store whose messages are durable for the life of the process only. It keeps the
// same rules as the real stores (scopes, visibility, retention, ordering, filters,
// keyset pagination) and is the reference the conformance suite is checked on.
//
// It holds millions of messages without the garbage collector noticing them.
// Each message is encoded once into a record (record.go) in an arena of large
// chunks mapped outside the Go heap (arena.go); everything else is free of
// pointers too: a slot per message with the fields filters and statistics read
// (times, status, duration, interned scope and name), indexes of small fixed-size
// entries (created_at, the id's 16 bytes, the slot number) in B-trees, and maps
// from the 16 bytes of an id or reference to a slot. The collector scans a few
// B-tree nodes per thousand messages and none of their bytes, and the heap goal
// it paces itself by no longer doubles with the data. A message is decoded only
// for a page, Get or Lookup; filters and the q search read records in place.
//
// Statistics (stats.go) read only index entries and slots, where the route's
// hash waits beside the status, duration and application: no record is read
// unless the filter needs it, and a route's text only for the routes that
// rank. Slots and records lie in arrival order, not the index's, so walks
// load them in batches, letting their cache misses overlap; long statistics
// and searches walk two halves of their range at once, and take turns,
// GOMAXPROCS at a time. With 1,000,000 seeded messages statistics over a day
// cost reqlogd 100–140 ms of CPU, against 2 s when they fed StatsBuilder from
// each record (docs/benchmarks.md).
//
// On the seed mix of cmd/reqlog-bench (BenchmarkRetained; docs/benchmarks.md)
// the process grows by 0.97 of the submitted bytes per message, against 2.0
// with pointers to messages, and the collector takes 1 % of the CPU of ingest,
// against 11 to 15 %. Since the records are not in the Go heap, GOMEMLIMIT
// does not count them.
package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.HealthChecker = (*Store)(nil)
)

// btreeDegree suits in-memory trees of small items (google/btree's advice).
const btreeDegree = 32

// slot is a stored message's fixed-size part: where its record lies and what
// filters, visibility, retention and statistics read without decoding it.
// Times are Unix nanoseconds (nanos).
//
// A slot is 64 bytes, one cache line, and pages of them start on one: a walk
// that reads slots in an order of its own (statistics) misses the cache once
// per slot, not twice. Status codes are 100 to 599 (domain.Parser), so int16
// holds any a client can send.
type slot struct {
	at                        location
	status                    int16
	hasDuration, used         bool
	created, visible, expires int64
	duration                  time.Duration
	// route is the hash of the path without its query string (routeHash),
	// what statistics rank paths by without reading the record.
	route       uint64
	scope, name uint32 // interned
}

// templateTable holds each slot's route template (interned; 0 for none)
// beside the slot table, in the same pages: a slot is one cache line, full.
type templateTable struct{ pages [][]uint32 }

func (t *templateTable) set(n, template uint32) {
	for len(t.pages) <= int(n>>slotPageBits) {
		t.pages = append(t.pages, make([]uint32, 1<<slotPageBits))
	}
	t.pages[n>>slotPageBits][n&(1<<slotPageBits-1)] = template
}

func (t *templateTable) at(n uint32) uint32 { return t.pages[n>>slotPageBits][n&(1<<slotPageBits-1)] }

// slotTable holds the slots in pages of fixed size, so that growing never
// copies them nor leaves a doubled array half empty.
type slotTable struct {
	pages [][]slot
	spare []uint32 // numbers of freed slots
	next  uint32   // the first number never used
}

const slotPageBits = 14

func (t *slotTable) at(n uint32) *slot { return &t.pages[n>>slotPageBits][n&(1<<slotPageBits-1)] }

func (t *slotTable) add(sl slot) uint32 {
	var n uint32
	if k := len(t.spare); k > 0 {
		n, t.spare = t.spare[k-1], t.spare[:k-1]
	} else {
		n = t.next
		t.next++
		if int(n>>slotPageBits) == len(t.pages) {
			t.pages = append(t.pages, make([]slot, 1<<slotPageBits))
		}
	}
	*t.at(n) = sl
	return n
}

func (t *slotTable) free(n uint32) {
	*t.at(n) = slot{}
	t.spare = append(t.spare, n)
}

// entry is a message's key in the List-order indexes: newest first, ties by
// id descending. id holds the 16 bytes of a canonical UUID, whose order is its
// text's; oddID marks any other id, compared by its text in the record. top is
// a seek position only: before every message created at the same time.
type entry struct {
	created int64
	id      [16]byte
	slot    uint32
	oddID   bool
	top     bool
}

// expiry is a message's key in the retention index.
type expiry struct {
	expires int64
	slot    uint32
}

func expiresFirst(a, b expiry) bool {
	if a.expires != b.expires {
		return a.expires < b.expires
	}
	return a.slot < b.slot
}

type tree = btree.BTreeG[entry]

// scopeIndex holds one tenant's messages in List order, once in all, once per
// application name, because portals list a single application, and once per
// status class (byClass[4] holds the 4xx), so that a filter on a rare status does
// not walk the whole scope.
type scopeIndex struct {
	all     *tree
	byName  map[uint32]*tree
	byClass [6]*tree
}

// statusClass is the byClass slot of a status code (100 to 599).
func statusClass(code int) int { return min(max(code/100, 0), 5) }

// Store is the in-memory ports.MessageStore: messages last as long as the process.
// It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	arena    arena
	slots    slotTable
	ids      keyIndex // id -> slot
	refs     keyIndex // reference -> slot
	scopes   map[domain.Scope]*scopeIndex
	scopeIDs interner[domain.Scope]
	names    interner[string]
	// templates numbers the route templates, "" first; slotTemplates holds
	// each slot's.
	templates     interner[string]
	slotTemplates templateTable
	// headerNames numbers the header names records share (record.go).
	headerNames interner[string]
	expires     *btree.BTreeG[expiry]
	scratch     []byte // the record being encoded
	routeSeed   maphash.Seed
	// touched keeps what walks load ahead, so that the loads are not elided.
	touched atomic.Uint32
	// wholeWalks admits the walks that read a whole range (statistics and
	// searches) GOMAXPROCS at a time. More at once only share the cores:
	// under overload every one of them then finishes late, past its client's
	// patience, each holding its buffers meanwhile. The others wait their
	// turn, in order, or until their context is done.
	wholeWalks chan struct{}
}

// admitWholeWalk waits for a turn to walk a whole range; release ends it.
func (s *Store) admitWholeWalk(ctx context.Context) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case s.wholeWalks <- struct{}{}:
		return func() { <-s.wholeWalks }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// New returns an empty store.
func New() *Store {
	return &Store{
		arena:  newArena(),
		ids:    newKeyIndex(packUUID),
		refs:   newKeyIndex(packReference),
		scopes: map[domain.Scope]*scopeIndex{},
		scopeIDs: newInterner(func(sc domain.Scope) domain.Scope {
			return domain.Scope{Account: strings.Clone(sc.Account), Domain: strings.Clone(sc.Domain)}
		}),
		names:       newInterner(strings.Clone),
		templates:   newTemplates(),
		headerNames: newInterner(strings.Clone),
		expires:     btree.NewG(btreeDegree, expiresFirst),
		routeSeed:   maphash.MakeSeed(),
		wholeWalks:  make(chan struct{}, runtime.GOMAXPROCS(0)),
	}
}

// routeHash is what slots hold of a path: the 64-bit hash of domain.RouteOf
// under a seed of the store's own, so that no client can choose paths that
// collide (two routes would then be counted as one).
func (s *Store) routeHash(path string) uint64 {
	return maphash.String(s.routeSeed, domain.RouteOf(path))
}

// newestFirst is domain.Precedes on entries.
func (s *Store) newestFirst(a, b entry) bool {
	if a.created != b.created {
		return a.created > b.created
	}
	if a.top || b.top {
		return a.top && !b.top
	}
	if !a.oddID && !b.oddID {
		return string(a.id[:]) > string(b.id[:])
	}
	return s.idOf(a) > s.idOf(b)
}

// idOf is the id of e's message.
func (s *Store) idOf(e entry) string {
	if !e.oddID {
		return formatUUID(e.id)
	}
	return recordID(s.record(e.slot))
}

func (s *Store) record(n uint32) []byte { return s.arena.bytes(s.slots.at(n).at) }

func (s *Store) newTree() *tree { return btree.NewG(btreeDegree, s.newestFirst) }

// Append stores copies of msgs. An id already stored keeps its message. The batch
// is checked first, so a refused batch stores nothing.
func (s *Store) Append(ctx context.Context, msgs []domain.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: append: %w", err)
	}
	for i, m := range msgs {
		if m.ID == "" {
			return fmt.Errorf("memory: append: message %d has no id", i)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range msgs {
		if _, stored := s.ids.get(msgs[i].ID); stored {
			continue
		}
		s.insert(&msgs[i])
	}
	return nil
}

func (s *Store) insert(m *domain.Message) {
	s.scratch = appendRecord(s.scratch[:0], m, &s.headerNames)
	at, rec := s.arena.alloc(len(s.scratch))
	copy(rec, s.scratch)
	scope := m.Scope()
	n := s.slots.add(slot{
		at: at, created: nanos(m.CreatedAt), visible: nanos(m.VisibleAt), expires: nanos(m.ExpiresAt),
		duration: m.Duration, hasDuration: m.HasDuration, status: int16(m.StatusCode), route: s.routeHash(m.Path),
		scope: s.scopeIDs.id(scope), name: s.names.id(m.Name), used: true,
	})
	s.slotTemplates.set(n, s.templates.id(m.Route))
	s.ids.put(m.ID, n)
	if _, taken := s.refs.get(m.Reference); !taken && m.Reference != "" {
		s.refs.put(m.Reference, n)
	}
	idx := s.scopes[scope]
	if idx == nil {
		idx = &scopeIndex{all: s.newTree(), byName: map[uint32]*tree{}}
		for i := range idx.byClass {
			idx.byClass[i] = s.newTree()
		}
		s.scopes[scope] = idx
	}
	e := s.entryOf(n)
	idx.all.ReplaceOrInsert(e)
	idx.byClass[statusClass(m.StatusCode)].ReplaceOrInsert(e)
	sl := s.slots.at(n)
	named := idx.byName[sl.name]
	if named == nil {
		named = s.newTree()
		idx.byName[sl.name] = named
	}
	named.ReplaceOrInsert(e)
	s.expires.ReplaceOrInsert(expiry{expires: sl.expires, slot: n})
}

// entryOf is the index entry of stored slot n.
func (s *Store) entryOf(n uint32) entry {
	id, canonical := packUUID(recordID(s.record(n)))
	return entry{created: s.slots.at(n).created, id: id, slot: n, oddID: !canonical}
}

// List walks the scope's index from the page's start, skipping what is not
// readable at now or does not match, and reads one message past the page to
// know whether more follow. Only the page's messages are decoded.
func (s *Store) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	if err := ctx.Err(); err != nil {
		return domain.Page{}, fmt.Errorf("memory: list: %w", err)
	}
	if q.Limit < 1 {
		return domain.Page{}, fmt.Errorf("memory: list: limit must be at least 1, got %d", q.Limit)
	}
	if q.Filter.Text != "" {
		release, err := s.admitWholeWalk(ctx)
		if err != nil {
			return domain.Page{}, fmt.Errorf("memory: list: %w", err)
		}
		defer release()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	index := s.index(q)
	if index == nil {
		return domain.Page{}, nil
	}
	found, err := s.findPage(ctx, index, q, now)
	if err != nil {
		return domain.Page{}, fmt.Errorf("memory: list: %w", err)
	}
	return domain.PageOf(q.Limit, found, s.message), nil
}

// findPage is the slots of q's page and of the message after it. A search
// (q.Filter.Text) reads every record until the page is full, which for a rare
// text is the whole range: over a large index it walks the newer and the
// older half of the range at once, and takes the older half's matches only
// when the newer half's do not fill the page.
func (s *Store) findPage(ctx context.Context, index *tree, q domain.Query, now time.Time) ([]uint32, error) {
	newer, older, split := s.searchHalves(index, q)
	if !split {
		return s.collect(ctx, index, q, now)
	}
	olderCtx, stopOlder := context.WithCancel(ctx)
	defer stopOlder()
	var inOlder []uint32
	var olderErr error
	var wg sync.WaitGroup
	wg.Go(func() { inOlder, olderErr = s.collect(olderCtx, index, older, now) })
	found, err := s.collect(ctx, index, newer, now)
	if err == nil && len(found) > q.Limit {
		stopOlder()
	}
	wg.Wait()
	switch {
	case err != nil:
		return nil, err
	case len(found) > q.Limit:
		return found, nil
	case olderErr != nil:
		return nil, olderErr
	}
	found = append(found, inOlder...)
	return found[:min(len(found), q.Limit+1)], nil
}

// collect walks q for its page and the message after it.
func (s *Store) collect(ctx context.Context, index *tree, q domain.Query, now time.Time) ([]uint32, error) {
	found := make([]uint32, 0, min(q.Limit+1, index.Len()))
	err := s.walk(ctx, index, q, now, func(n uint32, _ *domain.Message) bool {
		found = append(found, n)
		return len(found) <= q.Limit
	})
	return found, err
}

// parallelSearchFrom is the size of index from which a search walks in two
// halves. Tests lower it.
var parallelSearchFrom = 1 << 15

// searchHalves divides a search's range at the middle of its created_at
// times: the newer half, then the older, as queries of their own.
func (s *Store) searchHalves(index *tree, q domain.Query) (newer, older domain.Query, split bool) {
	if q.Filter.Text == "" || index.Len() < parallelSearchFrom || runtime.GOMAXPROCS(0) < 2 {
		return q, q, false
	}
	newest, _ := index.Min()
	oldest, _ := index.Max()
	hi, lo := newest.created, oldest.created
	if q.After != nil {
		hi = min(hi, nanos(q.After.CreatedAt))
	}
	if !q.Filter.To.IsZero() {
		hi = min(hi, max(nanos(q.Filter.To), math.MinInt64+1)-1)
	}
	if !q.Filter.From.IsZero() {
		lo = max(lo, nanos(q.Filter.From))
	}
	// Each half's bound lies within the range, so each is narrower than q.
	if lo >= hi || lo == math.MinInt64 || hi == math.MaxInt64 {
		return q, q, false
	}
	mid := time.Unix(0, lo+(hi-lo)/2+1).UTC()
	newer, older = q, q
	newer.Filter.From, older.Filter.To = mid, mid
	return newer, older, true
}

// message decodes stored slot n into a message of the caller's own.
func (s *Store) message(n uint32) domain.Message {
	sl := s.slots.at(n)
	scope := s.scopeIDs.value(sl.scope)
	m := domain.Message{Account: scope.Account, Domain: scope.Domain, Name: s.names.value(sl.name),
		Route: s.templates.value(s.slotTemplates.at(n)), StatusCode: int(sl.status), Duration: sl.duration, HasDuration: sl.hasDuration}
	decode(slices.Clone(s.record(n)), &m, &s.headerNames)
	return m
}

// Lookup returns scope's stored messages with any of ids, readable or not.
func (s *Store) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: lookup: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found []domain.Message
	for _, id := range ids {
		if n, ok := s.ids.get(id); ok && s.scopeIDs.value(s.slots.at(n).scope) == scope {
			found = append(found, s.message(n))
		}
	}
	return found, nil
}

// walk calls visit, newest first, with each message of index on q's page or
// after it that is readable at now and passes q.Filter, until visit returns
// false. visit gets the slot and the fields the filter read: scope, name,
// status, created_at and duration always, ip address, method and path when
// the filter needs them, as views valid during the call.
//
// A walk over millions of messages takes a while: it stops with ctx's error
// once ctx is done (checked every walkCheckEvery messages), so a request whose
// client left stops costing CPU and memory.
func (s *Store) walk(ctx context.Context, index *tree, q domain.Query, now time.Time, visit func(uint32, *domain.Message) bool) error {
	at, from, to := nanos(now), int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Filter.From.IsZero() {
		from = nanos(q.Filter.From)
	}
	if !q.Filter.To.IsZero() {
		to = nanos(q.Filter.To)
	}
	fields := q.Filter
	fields.Text = ""
	matches, search := fields.Matcher(), newRecordSearch(q.Filter.Text)
	readRecord := q.Filter.Method != "" || q.Filter.IPAddress != "" || q.Filter.Path != "" ||
		q.Filter.PathPrefix != "" || q.Filter.Text != ""
	scope := q.Scope
	// A message is after the cursor if older, or as old with a lower id.
	var after entry
	if q.After != nil {
		id, canonical := packUUID(q.After.ID)
		after = entry{created: nanos(q.After.CreatedAt), id: id, oddID: !canonical}
	}
	admits := func(e entry) bool {
		switch {
		case e.created != after.created:
			return e.created < after.created
		case !e.oddID && !after.oddID:
			return string(e.id[:]) < string(after.id[:])
		}
		return s.idOf(e) < q.After.ID
	}
	var m domain.Message // one for the walk: it escapes to visit
	consider := func(e entry) bool {
		sl := s.slots.at(e.slot)
		if e.created >= to || at < sl.visible || at >= sl.expires ||
			(q.After != nil && !admits(e)) {
			return true
		}
		m = domain.Message{Account: scope.Account, Domain: scope.Domain, Name: s.names.value(sl.name),
			Route: s.templates.value(s.slotTemplates.at(e.slot)), StatusCode: int(sl.status), CreatedAt: time.Unix(0, e.created).UTC(),
			Duration: sl.duration, HasDuration: sl.hasDuration}
		if readRecord {
			rec := s.arena.bytes(sl.at)
			filtered(rec, &m)
			if !matches(m) || !searchRecord(rec, search) {
				return true
			}
		} else if !matches(m) {
			return true
		}
		return visit(e.slot, &m)
	}
	// A walk that reads records reads them in batches: slots and records lie
	// in the order messages came, not in the index's, so loading a batch's
	// slots, then the start of their records, first lets their cache misses
	// overlap instead of each waiting for the one before.
	var batch []entry
	if readRecord {
		batch = make([]entry, 0, walkBatch)
	}
	more := true
	var touched byte
	considerBatch := func() {
		for _, e := range batch {
			touched ^= byte(s.slots.at(e.slot).at.off)
		}
		for _, e := range batch {
			touched ^= s.record(e.slot)[0]
		}
		for _, e := range batch {
			if more = consider(e); !more {
				break
			}
		}
		batch = batch[:0]
	}
	var walked int
	var stopped error
	collect := func(e entry) bool {
		if e.created < from {
			return false // everything further on is older still
		}
		if walked++; walked%walkCheckEvery == 0 {
			if stopped = ctx.Err(); stopped != nil {
				return false
			}
		}
		if !readRecord {
			return consider(e)
		}
		if batch = append(batch, e); len(batch) == walkBatch {
			considerBatch()
		}
		return more
	}
	if start, ok := pageStart(q); ok {
		index.AscendGreaterOrEqual(start, collect)
	} else {
		index.Ascend(collect)
	}
	if stopped == nil && more && len(batch) > 0 {
		considerBatch()
	}
	if readRecord {
		s.touched.Store(uint32(touched))
	}
	return stopped
}

// walkBatch is how many messages a walk that reads records loads at once.
const walkBatch = 32

// walkCheckEvery is how many messages a walk reads between looks at its context.
const walkCheckEvery = 4096

// index is the narrowest index that holds every candidate of q, or nil.
func (s *Store) index(q domain.Query) *tree {
	idx := s.scopes[q.Scope]
	switch {
	case idx == nil:
		return nil
	case q.Filter.Name != "":
		name, ok := s.names.lookup(q.Filter.Name)
		if !ok {
			return nil
		}
		return idx.byName[name]
	case q.Filter.StatusMin > 0 && statusClass(q.Filter.StatusMin) == statusClass(q.Filter.StatusMax):
		return idx.byClass[statusClass(q.Filter.StatusMin)]
	default:
		return idx.all
	}
}

// pageStart is the position to seek to, false for the newest message: before
// every message created at the cursor's time (walk skips those not after it),
// or at the first message created before the filter's upper bound if that lies
// further on.
func pageStart(q domain.Query) (entry, bool) {
	start, ok := entry{top: true}, false
	if q.After != nil {
		start.created, ok = nanos(q.After.CreatedAt), true
	}
	if !q.Filter.To.IsZero() {
		if to := max(nanos(q.Filter.To), math.MinInt64+1) - 1; !ok || to < start.created {
			start.created, ok = to, true
		}
	}
	return start, ok
}

// Get finds a message by id, then by reference, in scope and readable at now.
func (s *Store) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, fmt.Errorf("memory: get: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.ids.get(idOrReference)
	if !ok {
		n, ok = s.refs.get(idOrReference)
	}
	if !ok || s.scopeIDs.value(s.slots.at(n).scope) != scope || !s.readable(n, now) {
		return domain.Message{}, fmt.Errorf("memory: message %q: %w", idOrReference, ports.ErrNotFound)
	}
	return s.message(n), nil
}

// readable is domain.Message.Readable on slot n.
func (s *Store) readable(n uint32, now time.Time) bool {
	at, sl := nanos(now), s.slots.at(n)
	return at >= sl.visible && at < sl.expires
}

// PurgeExpired deletes, oldest expiry first, every message whose ExpiresAt is at
// or before now.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: purge: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := nanos(now)
	var expired []uint32
	s.expires.Ascend(func(e expiry) bool {
		if e.expires > at {
			return false
		}
		expired = append(expired, e.slot)
		return true
	})
	for _, n := range expired {
		s.remove(n)
	}
	s.compact()
	return int64(len(expired)), nil
}

func (s *Store) remove(n uint32) {
	sl := *s.slots.at(n)
	rec := s.record(n)
	r := reader{b: rec}
	id, ref := r.str(), r.str()
	if m, ok := s.refs.get(ref); ok && m == n {
		s.refs.delete(ref)
	}
	s.ids.delete(id)
	s.expires.Delete(expiry{expires: sl.expires, slot: n})
	scope := s.scopeIDs.value(sl.scope)
	idx := s.scopes[scope]
	e := s.entryOf(n)
	idx.all.Delete(e)
	idx.byClass[statusClass(int(sl.status))].Delete(e)
	named := idx.byName[sl.name]
	named.Delete(e)
	if named.Len() == 0 {
		delete(idx.byName, sl.name)
	}
	if idx.all.Len() == 0 {
		delete(s.scopes, scope)
	}
	s.arena.free(sl.at)
	s.slots.free(n)
}

// compact moves the records of sparse chunks to the chunk being filled, once
// the arena strands more than a quarter of what it holds, so that messages
// with a longer retention do not keep mostly expired chunks mapped.
func (s *Store) compact() {
	if stranded := s.arena.stranded(); stranded <= 2*chunkBytes || stranded*4 <= s.arena.mapped {
		return
	}
	sparse := make([]bool, len(s.arena.chunks))
	for c := range sparse {
		sparse[c] = s.arena.sparse(uint32(c))
	}
	for _, page := range s.slots.pages {
		for i := range page {
			sl := &page[i]
			if !sl.used || !sparse[sl.at.chunk] {
				continue
			}
			old := sl.at
			at, rec := s.arena.alloc(int(old.size))
			copy(rec, s.arena.bytes(old))
			sl.at = at
			s.arena.free(old)
		}
	}
}

// ReadLag is zero: a message is readable as soon as Append returns.
func (s *Store) ReadLag() time.Duration { return 0 }

// Ping always succeeds: there is no backend to lose.
func (s *Store) Ping(context.Context) error { return nil }

// newTemplates is an interner of route templates in which "" (no template)
// is 0, the zero slot's.
func newTemplates() interner[string] {
	in := newInterner(strings.Clone)
	in.id("")
	return in
}
