// Package rollupcodec is the binary encoding of a stats.Rollup (and of its
// parts, a stats.DurationDigest and a stats.KeyCounter) that stores write
// with their messages: the SQLite store in each day file's rollups table.
// It lives with the stores, not in the core, so that the core's types may
// change while the bytes on disk stay readable: every version ever written
// is read (docs/sqlite-format.md).
//
// Encodings start with a version byte. Numbers are varints; a digest's
// durations are the gaps between the sorted values, and a counter's keys come
// in order, each as the length of the prefix it shares with the one before
// and the rest. A rollup of version 1, written before routes were kept, is
// read as a rollup of messages without routes, which they were. Version 2
// ends with its routes, each with its durations; version 3 writes them as a
// counter of keys (with their debts once pruned) and is written only when a
// route counter has pruned, so that a version that reads 2 alone reads what
// it reads today. Versions 4 and 5 are 2 and 3 followed by how many of the
// messages are tallies (stats.Rollup.Dropped), written only for a rollup
// that counts one: a store without ingest rules writes what it wrote before.
package rollupcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// ErrInvalidEncoding marks bytes that are not an encoding of a Rollup,
// DurationDigest or KeyCounter this version can read: a store's data damaged,
// or written by a later version.
var ErrInvalidEncoding = errors.New("invalid encoding")

const (
	rollupV1   = 1
	rollupV2   = 2
	rollupV3   = 3
	rollupV4   = 4 // rollupV2, then the tallies
	rollupV5   = 5 // rollupV3, then the tallies
	digestV1   = 1
	counterV1  = 1
	hasDebts   = 1 // a counter's flag: each key carries its debt
	maxFlags   = hasDebts
	minKeySize = 4 // shared, rest, count, errors: a byte each at least
)

// AppendRollup appends the encoding of r to b.
func AppendRollup(b []byte, r *stats.Rollup) []byte {
	version := byte(rollupV2)
	if hasDebt(r.Routes.Entries()) {
		version = rollupV3
	}
	if r.Dropped > 0 {
		version += rollupV4 - rollupV2
	}
	b = append(b, version)
	b = binary.AppendUvarint(b, uint64(r.Count))
	for _, n := range r.Status {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = binary.AppendVarint(b, r.AllVisibleAt.UnixMicro())
	b = binary.AppendVarint(b, r.FirstExpiresAt.UnixMicro())
	b = appendDigest(b, &r.Durations)
	b = appendCounter(b, &r.Paths, nil)
	if version == rollupV3 || version == rollupV5 {
		b = appendCounter(b, &r.Routes, appendDigest)
	} else {
		b = appendRoutesV2(b, &r.Routes)
	}
	if r.Dropped > 0 {
		b = binary.AppendUvarint(b, uint64(r.Dropped))
	}
	return b
}

// AppendDigest appends the encoding of d to b.
func AppendDigest(b []byte, d *stats.DurationDigest) []byte {
	return appendDigest(append(b, digestV1), d)
}

// AppendKeys appends the encoding of c to b.
func AppendKeys(b []byte, c *stats.KeyCounter) []byte {
	return appendCounter(append(b, counterV1), c, nil)
}

// Decoder reads encodings, keeping its memory from one to the next: a store
// that reads many rollups holds one.
type Decoder struct {
	block []byte
	ends  []int
}

// DecodeRollup sets r to the rollup data encodes, or returns an error matching
// ErrInvalidEncoding and leaves r empty.
func DecodeRollup(data []byte, r *stats.Rollup) error { return new(Decoder).Rollup(data, r) }

// Rollup sets r to the rollup data encodes, reusing r's memory, or returns an
// error matching ErrInvalidEncoding and leaves r empty.
func (d *Decoder) Rollup(data []byte, r *stats.Rollup) error {
	if err := d.whole(data, func(in *reader) {
		version := in.version(rollupV1, rollupV5)
		switch version {
		case rollupV1:
			d.rollupV1(in, r)
		case rollupV2, rollupV4:
			d.rollupV1(in, r)
			readRoutesV2(in, &r.Routes)
		case rollupV3, rollupV5:
			d.rollupV1(in, r)
			readCounter(d, in, &r.Routes, readDigest)
			for _, e := range r.Routes.Entries() {
				if in.err == nil && (!domain.ValidRoute(e.Key) || e.Tally.Count() > e.Count) {
					in.fail("route %q invalid, or counted %d with %d durations", e.Key, e.Count, e.Tally.Count())
				}
			}
		}
		if version == rollupV4 || version == rollupV5 {
			if r.Dropped = in.count(); in.err == nil && (r.Dropped == 0 || r.Dropped > r.Count) {
				in.fail("%d tallies of %d messages", r.Dropped, r.Count)
			}
		}
		if in.err == nil && counted(r.Routes.Entries()) > r.Count {
			in.fail("routes count more messages than %d", r.Count)
		}
	}); err != nil {
		r.Reset()
		return fmt.Errorf("rollup: %w", err)
	}
	return nil
}

// DecodeDigest sets dd to the digest data encodes, or returns an error
// matching ErrInvalidEncoding and leaves dd empty.
func DecodeDigest(data []byte, dd *stats.DurationDigest) error {
	if err := new(Decoder).whole(data, func(in *reader) {
		in.version(digestV1, digestV1)
		readDigest(nil, in, dd)
	}); err != nil {
		dd.Reset()
		return fmt.Errorf("duration digest: %w", err)
	}
	return nil
}

// Keys sets c to the counter data encodes, reusing c's memory, or returns an
// error matching ErrInvalidEncoding and leaves c empty.
func (d *Decoder) Keys(data []byte, c *stats.KeyCounter) error {
	if err := d.whole(data, func(in *reader) {
		in.version(counterV1, counterV1)
		readCounter(d, in, c, nil)
	}); err != nil {
		c.Reset()
		return fmt.Errorf("key counter: %w", err)
	}
	return nil
}

// rollupV1 reads a rollup without routes.
func (d *Decoder) rollupV1(in *reader, r *stats.Rollup) {
	r.Reset()
	r.Count = in.count()
	var classes int64
	for c := range r.Status {
		r.Status[c] = in.count()
		classes += r.Status[c] // cannot overflow: each is below 2^63 and there are five
		if classes > r.Count || classes < 0 {
			in.fail("status classes add up to more than the count")
		}
	}
	if classes != r.Count {
		in.fail("status classes add up to %d, not the count %d", classes, r.Count)
	}
	r.AllVisibleAt = time.UnixMicro(in.varint()).UTC()
	r.FirstExpiresAt = time.UnixMicro(in.varint()).UTC()
	readDigest(d, in, &r.Durations)
	if r.Durations.Count() > r.Count {
		in.fail("%d durations of %d messages", r.Durations.Count(), r.Count)
	}
	readCounter(d, in, &r.Paths, nil)
	if counted(r.Paths.Entries()) > r.Count {
		in.fail("paths count more messages than %d", r.Count)
	}
}

func hasDebt[T any](entries []stats.CounterEntry[T]) bool {
	return slices.ContainsFunc(entries, func(e stats.CounterEntry[T]) bool { return e.Debt > 0 })
}

// counted is the messages entries count, at most math.MaxInt64.
func counted[T any](entries []stats.CounterEntry[T]) int64 {
	var n int64
	for _, e := range entries {
		if n += e.Count; n < 0 {
			return math.MaxInt64
		}
	}
	return n
}

func appendDigest(b []byte, d *stats.DurationDigest) []byte {
	b = binary.AppendUvarint(b, uint64(d.Count()))
	if d.Exact() {
		prev := int64(0)
		for _, v := range d.Sorted() {
			b = binary.AppendUvarint(b, uint64(v-prev))
			prev = v
		}
		return b
	}
	first, buckets := d.Sketch()
	b = binary.AppendUvarint(b, uint64(first))
	b = binary.AppendUvarint(b, uint64(len(buckets)))
	for _, n := range buckets {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

func readDigest(_ *Decoder, in *reader, d *stats.DurationDigest) {
	sorted := d.Sorted()[:0]
	_, buckets := d.Sketch()
	buckets = buckets[:0]
	d.Reset()
	count := in.count()
	if count <= stats.ExactDurations {
		v := int64(0)
		sorted = slices.Grow(sorted, int(count))
		for range count {
			v += in.count() // SetSorted refuses what ends past MaxDuration
			if v < 0 {
				in.fail("a duration past any bound")
				return
			}
			sorted = append(sorted, v)
		}
		if in.err == nil && !d.SetSorted(sorted) {
			in.fail("%d durations past %s", count, domain.MaxDuration)
		}
		return
	}
	first, n := in.uvarint(), in.uvarint()
	if n == 0 || n > uint64(len(in.data)) || first > math.MaxInt32 {
		in.fail("%d sketch buckets from %d", n, first)
		return
	}
	buckets = slices.Grow(buckets, int(n))
	for range n {
		buckets = append(buckets, in.count())
	}
	if in.err == nil && !d.SetSketch(count, int(first), buckets) {
		in.fail("sketch buckets %d to %d do not count %d durations", first, first+n-1, count)
	}
}

// appendCounter writes c's keys in order, each with its counts and, if
// tally is given, its tally.
func appendCounter[T any, P stats.Tally[T]](b []byte, c *stats.Counter[T, P], tally func([]byte, *T) []byte) []byte {
	entries := c.Entries()
	order := make([]int32, len(entries))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int { return strings.Compare(entries[i].Key, entries[j].Key) })
	var flags uint64
	if hasDebt(entries) {
		flags = hasDebts
	}
	b = binary.AppendUvarint(b, uint64(len(order)))
	b = binary.AppendUvarint(b, flags)
	prev := ""
	for _, i := range order {
		e := &entries[i]
		shared := commonPrefix(prev, e.Key)
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(e.Key)-shared))
		b = append(b, e.Key[shared:]...)
		b = binary.AppendUvarint(b, uint64(e.Count))
		b = binary.AppendUvarint(b, uint64(e.Errors))
		if flags == hasDebts {
			b = binary.AppendUvarint(b, uint64(e.Debt))
		}
		if tally != nil {
			b = tally(b, &e.Tally)
		}
		prev = e.Key
	}
	return b
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// readCounter reads what appendCounter wrote into c. The keys are read into
// one block, made one string: one allocation for all (a counter's key views).
func readCounter[T any, P stats.Tally[T]](d *Decoder, in *reader, c *stats.Counter[T, P], tally func(*Decoder, *reader, *T)) {
	entries := c.Entries()[:0]
	c.Reset()
	n, flags := in.uvarint(), in.uvarint()
	if n > uint64(len(in.data))/minKeySize || flags > maxFlags {
		in.fail("%d keys with flags %d", n, flags)
		return
	}
	block, ends := d.block[:0], d.ends[:0]
	defer func() { d.block, d.ends = block, ends }()
	prevStart := 0
	for range n {
		start := len(block)
		prev := block[prevStart:start]
		shared, rest := in.uvarint(), in.uvarint()
		if shared > uint64(len(prev)) || rest > uint64(len(in.data)) {
			in.fail("a key past the data")
			return
		}
		block = append(append(block, prev[:shared]...), in.take(int(rest))...)
		entries = append(entries, stats.CounterEntry[T]{Count: in.count(), Errors: in.count()})
		e := &entries[len(entries)-1]
		if flags == hasDebts {
			e.Debt = in.count()
		}
		if tally != nil {
			tally(d, in, &e.Tally)
		}
		if in.err != nil {
			return
		}
		if len(ends) > 0 && bytes.Compare(prev, block[start:]) >= 0 {
			in.fail("key %q out of order", block[start:])
			return
		}
		ends = append(ends, len(block))
		prevStart = start
	}
	keys, start := string(block), 0
	for i, end := range ends {
		entries[i].Key = keys[start:end]
		start = end
	}
	if !c.SetEntries(entries, len(ends) > 0) {
		in.fail("%d keys, or a key counted with more errors or debt than messages", len(entries))
	}
}

// appendRoutesV2 writes routes as version 2 did: without debts (a counter
// that never pruned) and without shared prefixes.
func appendRoutesV2(b []byte, c *stats.RouteCounter) []byte {
	entries := c.Entries()
	order := make([]int32, len(entries))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int { return strings.Compare(entries[i].Key, entries[j].Key) })
	b = binary.AppendUvarint(b, uint64(len(order)))
	for _, i := range order {
		e := &entries[i]
		b = binary.AppendUvarint(b, uint64(len(e.Key)))
		b = append(b, e.Key...)
		b = binary.AppendUvarint(b, uint64(e.Count))
		b = binary.AppendUvarint(b, uint64(e.Errors))
		b = appendDigest(b, &e.Tally)
	}
	return b
}

func readRoutesV2(in *reader, c *stats.RouteCounter) {
	entries := c.Entries()[:0]
	c.Reset()
	n := in.uvarint()
	// Each route takes at least five bytes.
	if n > uint64(len(in.data))/5 {
		in.fail("%d routes", n)
		return
	}
	prev := ""
	for range n {
		size := in.uvarint()
		if size > uint64(len(in.data)) {
			in.fail("a route past the data")
			return
		}
		entries = append(entries, stats.CounterEntry[stats.DurationDigest]{Key: string(in.take(int(size))), Count: in.count(), Errors: in.count()})
		e := &entries[len(entries)-1]
		readDigest(nil, in, &e.Tally)
		if in.err != nil {
			return
		}
		if len(entries) > 1 && e.Key <= prev || !domain.ValidRoute(e.Key) || e.Tally.Count() > e.Count {
			in.fail("route %q out of order or invalid, or counted %d with %d durations", e.Key, e.Count, e.Tally.Count())
			return
		}
		prev = e.Key
	}
	if !c.SetEntries(entries, false) {
		in.fail("%d routes, or a route counted with more errors than messages", len(entries))
	}
}

// whole reads data with read: an error unless read takes it all.
func (d *Decoder) whole(data []byte, read func(*reader)) error {
	in := reader{data: data}
	read(&in)
	return in.end()
}

// reader reads an encoding, keeping the first error; what it reads after
// one is zero.
type reader struct {
	data []byte
	err  error
}

func (in *reader) fail(format string, args ...any) {
	if in.err == nil {
		in.err = fmt.Errorf("%w: %s", ErrInvalidEncoding, fmt.Sprintf(format, args...))
	}
	in.data = nil
}

// version reads the version byte, which must be from oldest to newest.
func (in *reader) version(oldest, newest byte) byte {
	if len(in.data) == 0 || in.data[0] < oldest || in.data[0] > newest {
		in.fail("not a version from %d to %d", oldest, newest)
		return 0
	}
	v := in.data[0]
	in.data = in.data[1:]
	return v
}

func (in *reader) uvarint() uint64 {
	if len(in.data) > 0 && in.data[0] < 0x80 { // one byte: most of them
		v := in.data[0]
		in.data = in.data[1:]
		return uint64(v)
	}
	v, n := binary.Uvarint(in.data)
	if n <= 0 {
		in.fail("truncated or overlong number")
		return 0
	}
	in.data = in.data[n:]
	return v
}

func (in *reader) varint() int64 {
	v, n := binary.Varint(in.data)
	if n <= 0 {
		in.fail("truncated or overlong number")
		return 0
	}
	in.data = in.data[n:]
	return v
}

// count reads a number of messages: at most math.MaxInt64.
func (in *reader) count() int64 {
	v := in.uvarint()
	if v > math.MaxInt64 {
		in.fail("a count of %d", v)
		return 0
	}
	return int64(v)
}

func (in *reader) take(n int) []byte {
	if n > len(in.data) {
		in.fail("truncated")
		return nil
	}
	b := in.data[:n]
	in.data = in.data[n:]
	return b
}

// end is the first error, or one if bytes are left over.
func (in *reader) end() error {
	if in.err == nil && len(in.data) > 0 {
		in.fail("%d bytes past the end", len(in.data))
	}
	return in.err
}
