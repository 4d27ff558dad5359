package stats

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
)

// ErrInvalidEncoding marks bytes that are not an encoding of a Rollup,
// DurationDigest or KeyCounter this version can read: a store's data damaged,
// or written by a later version.
var ErrInvalidEncoding = errors.New("invalid encoding")

// The binary encodings start with a version byte. Numbers are varints; a
// digest's durations are the gaps between the sorted values, and a counter's
// keys come in order, each as the length of the prefix it shares with the
// one before and the rest. A rollup of version 2 ends with its routes (a
// RouteCounter); version 1, written before routes were kept, is read as a
// rollup of messages without routes, which they were.
const (
	rollupEncodingV1  = 1
	rollupEncodingV2  = 2
	digestEncodingV1  = 1
	counterEncodingV1 = 1
	counterHasDebts   = 1 // a counter's flag: each key carries its debt
)

// AppendBinary appends the encoding of r to b.
func (r *Rollup) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, rollupEncodingV2)
	b = binary.AppendUvarint(b, uint64(r.Count))
	for _, n := range r.Status {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = binary.AppendVarint(b, r.AllVisibleAt.UnixMicro())
	b = binary.AppendVarint(b, r.FirstExpiresAt.UnixMicro())
	b = r.Durations.appendBody(b)
	b = r.Paths.appendBody(b)
	return r.Routes.appendBody(b), nil
}

// MarshalBinary returns the encoding of r.
func (r *Rollup) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary sets r to the rollup data encodes, reusing r's memory, or
// returns an error matching ErrInvalidEncoding and leaves r empty.
func (r *Rollup) UnmarshalBinary(data []byte) error {
	version, read := byte(rollupEncodingV2), r.readBody
	if len(data) > 0 && data[0] == rollupEncodingV1 {
		version, read = rollupEncodingV1, r.readBodyV1
	}
	if err := decodeWhole(data, version, read); err != nil {
		r.Reset()
		return fmt.Errorf("rollup: %w", err)
	}
	return nil
}

func (r *Rollup) readBody(in *decoder) {
	r.readBodyV1(in)
	r.Routes.readBody(in)
	var counted int64
	for _, e := range r.Routes.entries {
		if counted += e.count; counted > r.Count {
			in.fail("routes count more messages than %d", r.Count)
		}
	}
}

// readBodyV1 reads a rollup without routes.
func (r *Rollup) readBodyV1(in *decoder) {
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
	r.Durations.readBody(in)
	if r.Durations.count > r.Count {
		in.fail("%d durations of %d messages", r.Durations.count, r.Count)
	}
	r.Paths.readBody(in)
	var counted int64
	for _, e := range r.Paths.entries {
		if counted += e.count; counted > r.Count {
			in.fail("paths count more messages than %d", r.Count)
		}
	}
}

// AppendBinary appends the encoding of d to b.
func (d *DurationDigest) AppendBinary(b []byte) ([]byte, error) {
	return d.appendBody(append(b, digestEncodingV1)), nil
}

// MarshalBinary returns the encoding of d.
func (d *DurationDigest) MarshalBinary() ([]byte, error) { return d.AppendBinary(nil) }

// UnmarshalBinary sets d to the digest data encodes, or returns an error
// matching ErrInvalidEncoding and leaves d empty.
func (d *DurationDigest) UnmarshalBinary(data []byte) error {
	if err := decodeWhole(data, digestEncodingV1, d.readBody); err != nil {
		d.Reset()
		return fmt.Errorf("duration digest: %w", err)
	}
	return nil
}

func (d *DurationDigest) appendBody(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(d.count))
	if d.Exact() {
		prev := int64(0)
		for _, v := range d.sorted {
			b = binary.AppendUvarint(b, uint64(v-prev))
			prev = v
		}
		return b
	}
	b = binary.AppendUvarint(b, uint64(d.first))
	b = binary.AppendUvarint(b, uint64(len(d.buckets)))
	for _, n := range d.buckets {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

func (d *DurationDigest) readBody(in *decoder) {
	d.Reset()
	d.count = in.count()
	if d.Exact() {
		d.sorted = slices.Grow(d.sorted, int(d.count))
		v := int64(0)
		for range d.count {
			gap := in.count()
			if gap > maxDigestMicros-v {
				in.fail("a duration past %d µs", maxDigestMicros)
				break
			}
			v += gap
			d.sorted = append(d.sorted, v)
		}
		return
	}
	first, n := in.uvarint(), in.uvarint()
	if n == 0 || first > uint64(maxSketchBucket) || n > uint64(maxSketchBucket)+1-first || n > uint64(len(in.data)) {
		in.fail("sketch buckets %d to %d, outside 0 to %d", first, first+n-1, maxSketchBucket)
		return
	}
	d.first, d.buckets = int(first), slices.Grow(d.buckets, int(n))
	var sum int64
	for range n {
		c := in.count()
		if c > d.count-sum {
			in.fail("sketch buckets count more than %d durations", d.count)
			return
		}
		sum += c
		d.buckets = append(d.buckets, c)
	}
	if in.err == nil && (sum != d.count || d.buckets[0] == 0 || d.buckets[len(d.buckets)-1] == 0) {
		in.fail("sketch buckets count %d of %d durations, or end empty", sum, d.count)
	}
}

// Reset empties the digest, keeping its memory.
func (d *DurationDigest) Reset() {
	d.count, d.sorted, d.first, d.buckets = 0, d.sorted[:0], 0, d.buckets[:0]
}

// AppendBinary appends the encoding of c to b.
func (c *KeyCounter) AppendBinary(b []byte) ([]byte, error) {
	return c.appendBody(append(b, counterEncodingV1)), nil
}

// MarshalBinary returns the encoding of c.
func (c *KeyCounter) MarshalBinary() ([]byte, error) { return c.AppendBinary(nil) }

// UnmarshalBinary sets c to the counter data encodes, reusing c's memory, or
// returns an error matching ErrInvalidEncoding and leaves c empty.
func (c *KeyCounter) UnmarshalBinary(data []byte) error {
	if err := decodeWhole(data, counterEncodingV1, c.readBody); err != nil {
		c.Reset()
		return fmt.Errorf("key counter: %w", err)
	}
	return nil
}

func (c *KeyCounter) appendBody(b []byte) []byte {
	order := make([]int32, len(c.entries))
	var flags uint64
	for i, e := range c.entries {
		order[i] = int32(i)
		if e.debt > 0 {
			flags = counterHasDebts
		}
	}
	slices.SortFunc(order, func(i, j int32) int { return strings.Compare(c.entries[i].key, c.entries[j].key) })
	b = binary.AppendUvarint(b, uint64(len(order)))
	b = binary.AppendUvarint(b, flags)
	prev := ""
	for _, i := range order {
		e := &c.entries[i]
		shared := commonPrefix(prev, e.key)
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(e.key)-shared))
		b = append(b, e.key[shared:]...)
		b = binary.AppendUvarint(b, uint64(e.count))
		b = binary.AppendUvarint(b, uint64(e.errors))
		if flags == counterHasDebts {
			b = binary.AppendUvarint(b, uint64(e.debt))
		}
		prev = e.key
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

func (c *KeyCounter) readBody(in *decoder) {
	c.Reset()
	n, flags := in.uvarint(), in.uvarint()
	// Each key takes at least four bytes.
	if n > uint64(2*c.keep()) || n > uint64(len(in.data))/4 || flags > counterHasDebts {
		in.fail("%d keys with flags %d", n, flags)
		return
	}
	// The keys are read into one block, made one string: one allocation for
	// all (KeyCounter.keyViews).
	block, ends := c.decoding.block[:0], c.decoding.ends[:0]
	defer func() { c.decoding.block, c.decoding.ends = block, ends }()
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
		e := keyEntry{count: in.count(), errors: in.count()}
		if flags == counterHasDebts {
			e.debt = in.count()
		}
		if in.err != nil {
			return
		}
		if len(ends) > 0 && bytes.Compare(prev, block[start:]) >= 0 || e.count < 1 || e.errors > e.count || e.debt >= e.count {
			in.fail("key %q out of order, or counted %d with %d errors and debt %d", block[start:], e.count, e.errors, e.debt)
			return
		}
		c.entries = append(c.entries, e)
		ends = append(ends, len(block))
		prevStart = start
	}
	keys, start := string(block), 0
	for i, end := range ends {
		c.entries[i].key = keys[start:end]
		start = end
	}
	c.keyViews = len(ends) > 0
}

// decodeWhole reads data, which starts with version, with read: an error
// unless read takes it all.
func decodeWhole(data []byte, version byte, read func(*decoder)) error {
	in := decoder{data: data}
	in.version(version)
	read(&in)
	return in.end()
}

// decoder reads an encoding, keeping the first error; what it reads after
// one is zero.
type decoder struct {
	data []byte
	err  error
}

func (in *decoder) fail(format string, args ...any) {
	if in.err == nil {
		in.err = fmt.Errorf("%w: %s", ErrInvalidEncoding, fmt.Sprintf(format, args...))
	}
	in.data = nil
}

func (in *decoder) version(want byte) {
	if len(in.data) == 0 || in.data[0] != want {
		in.fail("not version %d", want)
		return
	}
	in.data = in.data[1:]
}

func (in *decoder) uvarint() uint64 {
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

func (in *decoder) varint() int64 {
	v, n := binary.Varint(in.data)
	if n <= 0 {
		in.fail("truncated or overlong number")
		return 0
	}
	in.data = in.data[n:]
	return v
}

// count reads a number of messages: at most math.MaxInt64.
func (in *decoder) count() int64 {
	v := in.uvarint()
	if v > math.MaxInt64 {
		in.fail("a count of %d", v)
		return 0
	}
	return int64(v)
}

func (in *decoder) take(n int) []byte {
	if n > len(in.data) {
		in.fail("truncated")
		return nil
	}
	b := in.data[:n]
	in.data = in.data[n:]
	return b
}

// end is the first error, or one if bytes are left over.
func (in *decoder) end() error {
	if in.err == nil && len(in.data) > 0 {
		in.fail("%d bytes past the end", len(in.data))
	}
	return in.err
}

func (c *RouteCounter) appendBody(b []byte) []byte {
	order := make([]int32, len(c.entries))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int { return strings.Compare(c.entries[i].route, c.entries[j].route) })
	b = binary.AppendUvarint(b, uint64(len(order)))
	for _, i := range order {
		e := &c.entries[i]
		b = binary.AppendUvarint(b, uint64(len(e.route)))
		b = append(b, e.route...)
		b = binary.AppendUvarint(b, uint64(e.count))
		b = binary.AppendUvarint(b, uint64(e.errors))
		b = e.durations.appendBody(b)
	}
	return b
}

func (c *RouteCounter) readBody(in *decoder) {
	c.Reset()
	n := in.uvarint()
	// Each route takes at least five bytes.
	if n > uint64(2*c.keep()) || n > uint64(len(in.data))/5 {
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
		e := routeEntry{route: string(in.take(int(size))), count: in.count(), errors: in.count()}
		e.durations.readBody(in)
		if in.err != nil {
			return
		}
		if len(c.entries) > 0 && e.route <= prev || !domain.ValidRoute(e.route) || e.count < 1 || e.errors > e.count || e.durations.count > e.count {
			in.fail("route %q out of order or invalid, or counted %d with %d errors and %d durations", e.route, e.count, e.errors, e.durations.count)
			return
		}
		c.entries = append(c.entries, e)
		prev = e.route
	}
	c.reindex()
}
