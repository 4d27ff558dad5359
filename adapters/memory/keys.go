package memory

import (
	"math"
	"strings"
	"time"
)

// keyIndex maps ids or references to slots. Keys that pack into 16 bytes (all
// the service makes) go to a map without pointers, which the collector does
// not scan; others, as tests may use, to a map of strings.
type keyIndex struct {
	pack   func(string) ([16]byte, bool)
	packed map[[16]byte]uint32
	other  map[string]uint32
}

func newKeyIndex(pack func(string) ([16]byte, bool)) keyIndex {
	return keyIndex{pack: pack, packed: map[[16]byte]uint32{}, other: map[string]uint32{}}
}

func (k *keyIndex) get(key string) (uint32, bool) {
	if p, ok := k.pack(key); ok {
		n, found := k.packed[p]
		return n, found
	}
	n, found := k.other[key]
	return n, found
}

func (k *keyIndex) put(key string, n uint32) {
	if p, ok := k.pack(key); ok {
		k.packed[p] = n
		return
	}
	k.other[strings.Clone(key)] = n
}

func (k *keyIndex) delete(key string) {
	if p, ok := k.pack(key); ok {
		delete(k.packed, p)
		return
	}
	delete(k.other, key)
}

func (k *keyIndex) len() int { return len(k.packed) + len(k.other) }

const hexDigits = "0123456789abcdef"

// packUUID is the 16 bytes of an id in the canonical form the service makes
// (lower-case, hyphenated); byte order is then the order of the text.
func packUUID(id string) ([16]byte, bool) {
	var b [16]byte
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return b, false
	}
	for j, at := range uuidBytesAt {
		hi, lo := hexValue[id[at]], hexValue[id[at+1]]
		if hi > 15 || lo > 15 {
			return b, false
		}
		b[j] = hi<<4 | lo
	}
	return b, true
}

// uuidBytesAt is where each byte's two digits start in a canonical UUID.
var uuidBytesAt = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexValue is the value of a lower-case hex digit, 255 for any other byte.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 255
	}
	for i := range len(hexDigits) {
		t[hexDigits[i]] = byte(i)
	}
	return t
}()

// formatUUID is the text packUUID packed.
func formatUUID(b [16]byte) string {
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(out)
}

// packReference is a reference of 16 bytes ("msg_" and 12 alphanumerics) as is.
func packReference(ref string) ([16]byte, bool) {
	var b [16]byte
	if len(ref) != len(b) {
		return b, false
	}
	copy(b[:], ref)
	return b, true
}

// interner numbers values, so that slots and records hold a small id instead
// of a string. Values are never forgotten: a store has few scopes, application
// and header names.
type interner[T comparable] struct {
	ids    map[T]uint32
	values []T
	keep   func(T) T // a copy of a caller's value that shares no memory with it
}

func newInterner[T comparable](keep func(T) T) interner[T] {
	return interner[T]{ids: map[T]uint32{}, keep: keep}
}

func (in *interner[T]) id(v T) uint32 {
	if n, ok := in.ids[v]; ok {
		return n
	}
	v = in.keep(v)
	in.values = append(in.values, v)
	in.ids[v] = uint32(len(in.values) - 1)
	return uint32(len(in.values) - 1)
}

func (in *interner[T]) lookup(v T) (uint32, bool) {
	n, ok := in.ids[v]
	return n, ok
}

func (in *interner[T]) value(n uint32) T { return in.values[n] }

func (in *interner[T]) len() int { return len(in.values) }

// Times in the indexes are Unix nanoseconds, exact from 1678 to 2262; times
// outside sort as the nearest bound (the zero time, never a message's, first).
var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

func nanos(t time.Time) int64 {
	switch {
	case t.Before(minNanos):
		return math.MinInt64
	case t.After(maxNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}
