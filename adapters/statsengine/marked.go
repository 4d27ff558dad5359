package statsengine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/reqlog/reqlog/adapters/rollupcodec"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// A MarkStore is a store that cannot write a minute's rollup in the
// transaction that stores its messages (Elasticsearch's bulk requests and
// MongoDB's inserts are not transactions), and keeps rollups by marks
// instead:
//
//   - each Append, once its messages are stored and before it returns,
//     marks every application and minute it wrote to with a fresh random
//     version (Mark), idempotently: a mark says the minute changed, never by
//     how much;
//   - a reader that finds a minute's mark at another version than the
//     minute's kept rollup counts the minute again from its messages
//     (Recount) and keeps the rollup at the mark's version (Keep).
//
// So a rollup counts exactly the messages stored, however often they were
// appended or in whatever batches: it is counted from them. An Append that
// fails after its messages and before its marks leaves those messages out
// of a kept rollup until a retry (or any later Append to their minute)
// marks them; an acknowledged message is always marked.
//
// Marked turns a MarkStore into a ports.RollupSource.
type MarkStore interface {
	// MarksFrom is the earliest CreatedAt from which every stored message is
	// marked (ports.RollupSource.RollupsFrom).
	MarksFrom(ctx context.Context) (time.Time, error)
	// Sync makes every mark of [from, to) that an Append wrote before the
	// call visible to Marks and MarkHours (Elasticsearch: a refresh of the
	// marks' indices), for KeepAll. A statistics call does not: it reads the
	// marks as Marks and MarkHours see them.
	Sync(ctx context.Context, from, to time.Time) error
	// Marks calls yield with the mark of each application (name alone when
	// not "") and minute of scope meeting [from, to). It MUST see every mark
	// written by an Append of this process that returned before the call
	// began, and every mark of another process written more than the store's
	// ReadLag before (Elasticsearch: refreshed by then).
	Marks(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(Mark) error) error
	// MarkHours calls yield once for each hour meeting [from, to) that holds
	// marks of scope (of application name alone when not ""), with a sum of
	// them that changes whenever one of them is written (a checksum of their
	// versions, say), how many there are, and about how many messages the
	// hour holds (-1: not known). It MUST see every mark Marks would.
	MarkHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
		yield func(hour time.Time, sum uint64, marks, messages int64) error) error
	// Kept calls yield with the rollup kept for each of marks' minutes that
	// has one (in any order).
	Kept(ctx context.Context, scope domain.Scope, marks []Mark, yield func(Kept) error) error
	// Recount calls yield with every message stored in [from, to) of scope
	// (of application name alone when not ""), readable or not, with at least
	// the fields a rollup counts (stats.Rollup.AddMessage). It MUST see every
	// message of the marks it is called for, which are all settled (Mark).
	Recount(ctx context.Context, scope domain.Scope, name string, from, to time.Time, yield func(*domain.Message) error) error
	// Keep stores kept rollups, each replacing whatever was kept for its
	// minute, each write whole or not at all.
	Keep(ctx context.Context, scope domain.Scope, kept []Kept) error
}

// Mark says that Appends wrote to one application's minute.
type Mark struct {
	Minute time.Time
	Name   string
	// Version is the random version of the last Append to mark the minute.
	Version uint64
	// Messages is about how many messages the minute holds, for the
	// engine's plan (the last Append's, say).
	Messages int64
	// Expires is when every message of the minute has expired: retention
	// may drop the mark and the kept rollup then.
	Expires time.Time
	// Settled is when the minute may be counted: the latest VisibleAt of
	// the messages of the last Append to mark it (before, no rollup of the
	// minute can stand for it), and for a store with a read lag, when its
	// messages are surely searchable. Until then Marked streams the minute.
	Settled time.Time
}

// Kept is the rollup of one application's minute as counted at Version of
// its mark, in its encoding.
type Kept struct {
	Minute  time.Time
	Name    string
	Version uint64
	Expires time.Time
	// Messages is the rollup's count, for a store's estimates.
	Messages int64
	Data     []byte
}

// Marked is the ports.RollupSource of a MarkStore. It keeps the minute
// rollups it read or counted last, decoded, at their marks' versions: the
// hour still filling then costs its marks and its changed minutes only.
// It is safe for concurrent use.
type Marked struct {
	store   MarkStore
	mu      sync.Mutex
	minutes *simplelru.LRU[markOf, keptMinute]
}

// keptMinute is a minute's rollup at a mark's version. Never changed once
// kept: calls read it at once.
type keptMinute struct {
	version uint64
	r       *stats.Rollup
}

// keptMinutes is how many minute rollups a Marked keeps: the hours still
// filling of some ten views of ten applications.
const keptMinutes = 6000

var _ ports.RollupSource = (*Marked)(nil)

// NewMarked returns the rollups of store.
func NewMarked(store MarkStore) *Marked {
	m := &Marked{store: store}
	m.minutes, _ = simplelru.NewLRU[markOf, keptMinute](keptMinutes, nil)
	return m
}

// kept returns the rollup of scope's mark kept at its version, or nil.
func (m *Marked) kept(scope domain.Scope, mk Mark) *stats.Rollup {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.minutes.Get(markOf{scope, mk.Name, mk.Minute.Unix()}); ok && k.version == mk.Version {
		return k.r
	}
	return nil
}

// keep keeps r as the rollup of scope's mark, which no one may change from
// then on.
func (m *Marked) keep(scope domain.Scope, mk Mark, r *stats.Rollup) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.minutes.Add(markOf{scope, mk.Name, mk.Minute.Unix()}, keptMinute{mk.Version, r})
}

// RollupsFrom is the store's MarksFrom.
func (m *Marked) RollupsFrom(ctx context.Context) (time.Time, error) { return m.store.MarksFrom(ctx) }

// RollupHours gives each hour the sum of its marks as its version: any
// Append to the hour changes one.
func (m *Marked) RollupHours(ctx context.Context, scope domain.Scope, name string, from, to time.Time,
	yield func(hour time.Time, version uint64, messages, rollups int64) error) error {
	first, end := floorHour(from), floorHour(to.Add(time.Hour-time.Nanosecond))
	return m.store.MarkHours(ctx, scope, name, first, end, func(hour time.Time, sum uint64, marks, messages int64) error {
		return yield(hour, sum, messages, marks)
	})
}

// HashMarks is a sum of marks for MarkHours: a hash of their applications,
// minutes and versions, in order, for a store that reads them all.
func HashMarks(marks []Mark) uint64 {
	slices.SortFunc(marks, compareMarks)
	h := fnv.New64a()
	var b []byte
	for _, mk := range marks {
		b = binary.AppendUvarint(b[:0], uint64(len(mk.Name)))
		b = append(b, mk.Name...)
		b = binary.AppendVarint(b, mk.Minute.Unix())
		b = binary.BigEndian.AppendUint64(b, mk.Version)
		_, _ = h.Write(b)
	}
	return h.Sum64()
}

func compareMarks(a, b Mark) int {
	if c := a.Minute.Compare(b.Minute); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Rollups yields each marked minute's rollup: the kept one when kept at its
// mark's version, else counted again from the messages and kept; or nil
// when its mark is not settled at now (the minute still filling: its
// rollup would not stand for it). It sees the marks MarkStore.Marks sees.
func (m *Marked) Rollups(ctx context.Context, scope domain.Scope, name string, from, to, now time.Time,
	yield func(minute time.Time, name string, r *stats.Rollup) error) error {
	return m.rollups(ctx, scope, name, from, to, now, &Trace{}, true, yield)
}

// rollups is Rollups, telling tr what it read; the rollups kept in memory
// are taken only when cached is set (otherwise those the store keeps).
func (m *Marked) rollups(ctx context.Context, scope domain.Scope, name string, from, to, now time.Time, tr *Trace, cached bool,
	yield func(minute time.Time, name string, r *stats.Rollup) error) error {
	var marks []Mark
	err := m.store.Marks(ctx, scope, name, from, to, func(mk Mark) error {
		if mk.Minute.Before(to) && mk.Minute.Add(time.Minute).After(from) && (name == "" || mk.Name == name) {
			marks = append(marks, mk)
		}
		return nil
	})
	if err != nil || len(marks) == 0 {
		return err
	}
	slices.SortFunc(marks, compareMarks)
	rollups := make(map[minuteOf]*stats.Rollup, len(marks))
	byMinute := make(map[minuteOf]Mark, len(marks))
	var unread []Mark
	for _, mk := range marks {
		key := minuteOf{mk.Minute.Unix(), mk.Name}
		byMinute[key] = mk
		if cached {
			rollups[key] = m.kept(scope, mk)
		}
		// An unsettled mark's minute is streamed: no kept rollup to ask for.
		if rollups[key] == nil && !mk.Settled.After(now) {
			unread = append(unread, mk)
		}
	}
	err = m.store.Kept(ctx, scope, unread, func(k Kept) error {
		key := minuteOf{k.Minute.Unix(), k.Name}
		if mk, ok := byMinute[key]; !ok || mk.Version != k.Version {
			return nil // stale, or of no mark read
		}
		r := &stats.Rollup{}
		if err := decodeRollup(k.Data, r); err != nil {
			return fmt.Errorf("statistics: the rollup kept for %s at %s: %w", k.Name, domain.FormatTime(k.Minute), err)
		}
		rollups[key] = r
		m.keep(scope, byMinute[key], r)
		return nil
	})
	if err != nil {
		return err
	}
	var stale []Mark
	for _, mk := range marks {
		if rollups[minuteOf{mk.Minute.Unix(), mk.Name}] == nil && !mk.Settled.After(now) {
			stale = append(stale, mk)
		}
	}
	if err := m.recount(ctx, scope, stale, rollups, tr); err != nil {
		return err
	}
	for _, mk := range marks {
		if err := yield(mk.Minute, mk.Name, rollups[minuteOf{mk.Minute.Unix(), mk.Name}]); err != nil {
			return err
		}
	}
	return nil
}

// recountGap is the gap between stale minutes past which they are counted
// again in two reads rather than one.
const recountGap = time.Hour

// recount counts the stale marks' minutes from their messages and keeps
// their rollups at the marks' versions.
func (m *Marked) recount(ctx context.Context, scope domain.Scope, stale []Mark, rollups map[minuteOf]*stats.Rollup, tr *Trace) error {
	if len(stale) == 0 {
		return nil
	}
	recounted := make(map[minuteOf]*stats.Rollup, len(stale))
	for _, mk := range stale {
		recounted[minuteOf{mk.Minute.Unix(), mk.Name}] = &stats.Rollup{}
	}
	// One read per group of stale minutes less than recountGap apart: a
	// store that scans (FerretDB) pays few, and none reads more than an hour
	// of messages past the stale minutes.
	for i := 0; i < len(stale); {
		j := i + 1
		for j < len(stale) && stale[j].Minute.Sub(stale[j-1].Minute) < recountGap {
			j++
		}
		group := stale[i:j]
		name := group[0].Name
		for _, mk := range group {
			if mk.Name != name {
				name = ""
			}
		}
		err := m.store.Recount(ctx, scope, name, group[0].Minute, group[len(group)-1].Minute.Add(time.Minute), func(msg *domain.Message) error {
			at := msg.CreatedAt.Unix()
			if r := recounted[minuteOf{at - mod(at, 60), msg.Name}]; r != nil {
				tr.MessagesRecounted++
				r.AddMessage(*msg)
			}
			return nil
		})
		if err != nil {
			return err
		}
		i = j
	}
	kept := make([]Kept, len(stale))
	for i, mk := range stale {
		r := recounted[minuteOf{mk.Minute.Unix(), mk.Name}]
		rollups[minuteOf{mk.Minute.Unix(), mk.Name}] = r
		m.keep(scope, mk, r)
		data, err := encodeRollup(r)
		if err != nil {
			return err
		}
		kept[i] = Kept{Minute: mk.Minute, Name: mk.Name, Version: mk.Version, Expires: mk.Expires, Messages: r.Count, Data: data}
	}
	tr.Recounted += len(stale)
	// The answer stands without them: a rollup not kept is counted again
	// by the next read.
	if err := m.store.Keep(ctx, scope, kept); err != nil {
		if ctx.Err() != nil {
			return err
		}
		tr.KeepErrors++
	}
	return nil
}

// encodeRollup and decodeRollup are the rollup's encoding as kept: the
// SQLite store's (rollupcodec).
func encodeRollup(r *stats.Rollup) ([]byte, error) { return rollupcodec.AppendRollup(nil, r), nil }
func decodeRollup(data []byte, r *stats.Rollup) error {
	return rollupcodec.DecodeRollup(data, r)
}

// floorHour is t rounded down to its hour (Truncate counts from the zero
// time, which lies on an hour as 1970 does).
func floorHour(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// KeepAll counts and keeps, hour by hour, the rollup of every marked minute
// of scope in [from, to) that has none at its mark's version: what a store
// runs once it has marked the messages an earlier version stored, so that
// the first statistics read none of them, and before its purge deletes
// messages, so that their rollups outlive them. It fails when a rollup
// could not be kept.
func (m *Marked) KeepAll(ctx context.Context, scope domain.Scope, from, to time.Time) error {
	if err := m.store.Sync(ctx, from, to); err != nil {
		return err
	}
	for hour := floorHour(from); hour.Before(to); hour = hour.Add(time.Hour) {
		var tr Trace
		// From the store's kept rollups: one kept in memory alone (its
		// write failed) would not outlive the process.
		err := m.rollups(ctx, scope, "", hour, hour.Add(time.Hour), maxTime, &tr, false, func(time.Time, string, *stats.Rollup) error { return nil })
		if err != nil {
			return err
		}
		if tr.KeepErrors > 0 {
			return fmt.Errorf("statistics: the rollups of %s/%s from %s could not be kept", scope.Account, scope.Domain, domain.FormatTime(hour))
		}
	}
	return nil
}

// maxTime is past every Settled: KeepAll counts every stale minute.
var maxTime = time.Unix(1<<62, 0)

// ScopeSpan is a scope and the span of created_at of some of its messages.
type ScopeSpan struct {
	Scope    domain.Scope
	From, To time.Time
}

// Spans gathers ScopeSpans: each scope's earliest and latest time added.
type Spans map[domain.Scope]*ScopeSpan

// Add widens scope's span to hold t.
func (s Spans) Add(scope domain.Scope, t time.Time) {
	span := s[scope]
	if span == nil {
		s[scope] = &ScopeSpan{Scope: scope, From: t, To: t.Add(time.Nanosecond)}
		return
	}
	span.From, span.To = earliest(span.From, t), latest(span.To, t.Add(time.Nanosecond))
}
