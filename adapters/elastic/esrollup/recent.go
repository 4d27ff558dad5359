package esrollup

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"sync"
	"time"

	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
)

// recentMarks are the marks this process's Appends wrote that a search may
// not show yet: the rollups' indices are refreshed every read lag, not at
// each write, and refreshing them in every statistics call cost the node
// about 25 ms of CPU a call while messages arrived. Marks and MarkHours add
// them to what a search shows, so a process counts its own Appends at once.
// A mark is forgotten once a search showed it at its version (Marks); one
// that none showed within showWithin is made searchable by one refresh
// (recentOf), then forgotten. It is safe for concurrent use.
type recentMarks struct {
	mu    sync.Mutex
	marks map[recentKey]recentMark
}

type recentKey struct {
	scope  domain.Scope
	name   string
	minute int64 // Unix seconds
}

type recentMark struct {
	mark    statsengine.Mark
	written time.Time // when the bulk request writing it returned
}

func keyOf(scope domain.Scope, mk statsengine.Mark) recentKey {
	return recentKey{scope, mk.Name, mk.Minute.Unix()}
}

// add notes marks written by a request that returned at written.
func (rm *recentMarks) add(marks []statsengine.ScopedMark, written time.Time) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.marks == nil {
		rm.marks = map[recentKey]recentMark{}
	}
	for _, mk := range marks {
		rm.marks[keyOf(mk.Scope, mk.Mark)] = recentMark{mk.Mark, written}
	}
}

// of returns the marks of scope (of application name alone when not "")
// whose minute starts in [from, to), and whether one of them was written
// before shownBy.
func (rm *recentMarks) of(scope domain.Scope, name string, from, to, shownBy time.Time) (marks []statsengine.Mark, late bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for k, r := range rm.marks {
		if k.scope == scope && (name == "" || k.name == name) && k.minute >= from.Unix() && k.minute < to.Unix() {
			marks = append(marks, r.mark)
			late = late || r.written.Before(shownBy)
		}
	}
	return marks, late
}

// shown forgets scope's mark when a search showed it at the version noted.
func (rm *recentMarks) shown(scope domain.Scope, mk statsengine.Mark) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if r, ok := rm.marks[keyOf(scope, mk)]; ok && r.mark.Version == mk.Version {
		delete(rm.marks, keyOf(scope, mk))
	}
}

// forget forgets the marks whose minute starts in [from, to) written before
// refreshed, when a refresh began: a search shows them now.
func (rm *recentMarks) forget(from, to, refreshed time.Time) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for k, r := range rm.marks {
		if k.minute >= from.Unix() && k.minute < to.Unix() && r.written.Before(refreshed) {
			delete(rm.marks, k)
		}
	}
}

// forgetOlder forgets every mark written before written: the periodic
// refresh has long made it searchable, whether a call read it or not.
func (rm *recentMarks) forgetOlder(written time.Time) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for k, r := range rm.marks {
		if r.written.Before(written) {
			delete(rm.marks, k)
		}
	}
}

// recentOf returns this process's marks of scope (of the application name
// alone when not "") in [from, to) that a search may not show yet, after
// one refresh of their indices when one of them should have been shown by
// now and was not (its minute rewritten by another process since, or the
// cluster's refreshes running late).
func (r *Rollups) recentOf(ctx context.Context, scope domain.Scope, name string, from, to time.Time) ([]statsengine.Mark, error) {
	marks, late := r.recent.of(scope, name, from, to, time.Now().Add(-r.showWithin()))
	if !late {
		return marks, nil
	}
	refreshed := time.Now()
	if err := r.Sync(ctx, from, to); err != nil {
		return nil, err
	}
	r.recent.forget(from, to, refreshed)
	marks, _ = r.recent.of(scope, name, from, to, time.Time{})
	return marks, nil
}

// showWithin is how long after its write a search shows a mark, refreshes
// running on time: settle, twice the read lag and a second.
func (r *Rollups) showWithin() time.Duration { return r.settle }

// forgetAfter is how long a mark no statistics call read is remembered:
// long past any refresh, so that the marks of Appends to scopes no one
// reads do not pile up.
func (r *Rollups) forgetAfter() time.Duration { return r.settle + time.Minute }

// withRecent is the version of an hour whose marks a search summed as sum
// and that holds recent, marks a search may not show yet: another than any
// sum of searched marks alone, so that an hour kept before them is not
// taken for it.
func withRecent(sum uint64, recent []statsengine.Mark) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(binary.BigEndian.AppendUint64(nil, sum))
	_, _ = h.Write(binary.BigEndian.AppendUint64(nil, statsengine.HashMarks(recent)))
	return h.Sum64()
}
