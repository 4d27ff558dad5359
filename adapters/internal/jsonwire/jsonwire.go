// Package jsonwire appends the JSON that adapters write on their hot paths (API
// pages, Elasticsearch bulk requests) by hand: the same bytes encoding/json writes
// with HTML escaping off, without its reflection, map copies and key sorting
// allocations. Tests compare every function here, and each encoder built on it,
// with encoding/json.
package jsonwire

import (
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
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) {
			if special := specialBytes(s[i : i+8]); special != 0 {
				i += bits.TrailingZeros64(special) / 8
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		if plainASCII[s[i]] {
			i++
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
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

// specialBytes tests 8 bytes of a string at once, since bodies are mostly long
// runs of plainASCII bytes: its lowest set bit is in the first byte that is not
// plainASCII (below 0x20, a quote, a backslash, or 0x80 and above), 0 if none.
// The borrows of the subtractions only run upwards, so the lowest is exact.
func specialBytes(w string) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	quote, backslash := x^'"'*ones, x^'\\'*ones
	return (x | (x-0x20*ones)&^x | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
}

// plainASCII marks the ASCII bytes a string holds as they are.
var plainASCII = func() (t [256]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

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
