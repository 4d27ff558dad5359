// Package jsonwire appends the JSON that adapters write on their hot paths (API
// pages, Elasticsearch bulk requests) by hand: the same bytes encoding/json writes
// with HTML escaping off, without its reflection, map copies and key sorting
// allocations. Tests compare every function here, and each encoder built on it,
// with encoding/json.
package jsonwire

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
)

// AppendString quotes s as encoding/json does with HTML escaping off: short
// escapes for \b \f \n \r \t " and \, \u00XX for other control bytes, \ufffd for
// each invalid UTF-8 byte, and U+2028 and U+2029 escaped for JSONP.
//
// Bodies are often JSON, with a quote to escape every few bytes, so the runs
// between escapes are not appended one by one (a memmove each): every 8 bytes
// of s are stored into dst's spare capacity whole, and the output moves on by
// as many of them as hold as they are. Since each byte of s gives at least one
// byte of output, no byte past the returned slice's end is ever written.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	// maxStep is the most one turn of the loop writes: a word, or up to 7
	// plain bytes then the longest escape (6 bytes).
	const maxStep = 16
	buf := slices.Grow(dst, len(s)+1+maxStep)
	n := len(buf)
	buf = buf[:cap(buf)]
	buf[n] = '"'
	n++
	for i := 0; i < len(s); {
		if len(buf)-n < maxStep {
			buf = slices.Grow(buf[:n], len(s)-i+1+maxStep)
			buf = buf[:cap(buf)]
		}
		if i+8 <= len(s) {
			word := load64(s[i : i+8])
			binary.LittleEndian.PutUint64(buf[n:n+8], word)
			special := specialBytes(word)
			if special == 0 {
				i += 8
				n += 8
				continue
			}
			plain := bits.TrailingZeros64(special) / 8
			i += plain
			n += plain
		}
		c := s[i]
		switch e := escapes[c]; e {
		case 0:
			buf[n] = c
			n++
			i++
		case 'u':
			buf[n], buf[n+1], buf[n+2], buf[n+3], buf[n+4], buf[n+5] = '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]
			n += 6
			i++
		case multiByte:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				n += copy(buf[n:], `\ufffd`)
			case r == '\u2028' || r == '\u2029':
				buf[n], buf[n+1], buf[n+2], buf[n+3], buf[n+4], buf[n+5] = '\\', 'u', '2', '0', '2', hex[r&0xF]
				n += 6
			default:
				n += copy(buf[n:], s[i:i+size])
			}
			i += size
		default:
			buf[n], buf[n+1] = '\\', e
			n += 2
			i++
		}
	}
	if n == len(buf) {
		buf = append(buf, 0)
	}
	buf[n] = '"'
	return buf[:n+1]
}

// escapes tells AppendString what each byte becomes: 0 itself, a letter its
// short escape (\n), 'u' a \u00XX escape, multiByte the start or part of a
// UTF-8 sequence to check.
var escapes = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = 'u'
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = 'b', 'f', 'n', 'r', 't'
	t['"'], t['\\'] = '"', '\\'
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = multiByte
	}
	return t
}()

const multiByte = 0xff

// load64 reads 8 bytes of a string as one little-endian word (one load: the
// compiler merges the byte reads).
func load64(w string) uint64 {
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// StringMember appends key, the member's quoted name with its colon and any
// comma before it (`,"name":`), and then the quoted value s.
func StringMember(dst []byte, key, s string) []byte {
	return AppendString(append(dst, key...), s)
}

// IntMember appends key as StringMember does, then n.
func IntMember(dst []byte, key string, n int) []byte {
	return strconv.AppendInt(append(dst, key...), int64(n), 10)
}

// TimeMember appends key as StringMember does, then t as AppendTime writes it.
func TimeMember(dst []byte, key string, t time.Time) []byte {
	return AppendTime(append(dst, key...), t)
}

// specialBytes tests the 8 bytes of a word at once, since bodies are mostly
// long runs of bytes written as they are: its lowest set bit is in the first
// byte that is not (below 0x20, a quote, a backslash, or 0x80 and above), 0 if
// none.
func specialBytes(x uint64) uint64 {
	return x&highs | QuoteBackslashOrControl(x)
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// QuoteBackslashOrControl marks the bytes of x, 8 bytes of JSON text read
// little-endian, that are a quote, a backslash or below 0x20: its lowest set
// bit is in the first of them, exactly (the subtractions' borrows only run
// upwards), 0 if none. A string's encoder and its decoder both stop there.
func QuoteBackslashOrControl(x uint64) uint64 {
	quote, backslash := x^'"'*ones, x^'\\'*ones
	return ((x-0x20*ones)&^x | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
}

// AppendTime writes t quoted as domain.FormatTime does, without the intermediate
// string.
func AppendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, domain.TimeLayout)
	return append(dst, '"')
}

// SortedNames appends h's names to names in byte order, the order encoding/json
// writes map keys in. Given names[:0] of an array on the caller's stack, typical
// headers are sorted without a heap allocation.
func SortedNames(names []string, h domain.Header) []string {
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
