package jsonbytes

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes the well-formed string literal lit (quotes included) as
// json.Unmarshal does: invalid UTF-8 and unpaired surrogates become U+FFFD.
func Unquote(lit []byte) string {
	s := lit[1 : len(lit)-1]
	plain := PlainPrefix(s)
	if plain == len(s) {
		return string(s)
	}
	var onStack [256]byte // names, methods and paths decode here, then are copied once
	return string(AppendUnquoted(append(onStack[:0], s[:plain]...), s[plain:]))
}

// PlainPrefix is the length of the prefix of a literal's content s (without
// its quotes) that decodes to itself: no escapes, no invalid UTF-8. Runs of
// ASCII are passed 8 bytes at a time: header values, names and paths are
// mostly nothing else.
func PlainPrefix(s []byte) int {
	plain := 0
	for plain+8 <= len(s) {
		x := binary.LittleEndian.Uint64(s[plain:])
		if backslash := x ^ '\\'*ones; (x|(backslash-ones)&^backslash)&highs != 0 {
			break
		}
		plain += 8
	}
	for plain < len(s) {
		c := s[plain]
		if c == '\\' {
			break
		}
		if c < utf8.RuneSelf {
			plain++
			continue
		}
		r, size := utf8.DecodeRune(s[plain:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		plain += size
	}
	return plain
}

// AppendUnquoted appends the decoded content s of a well-formed string literal
// (without its quotes) to dst, as Unquote decodes it.
//
// Bodies held in a submission are JSON themselves, with an escaped quote every
// few bytes, so the runs between escapes are not appended one by one (a memmove
// each): every 8 bytes of s are stored into dst's spare capacity whole, and the
// output moves on by as many of them as decode to themselves, as AppendString
// does. The spare capacity past the returned slice may be written.
func AppendUnquoted(dst, s []byte) []byte {
	// maxStep is the most one turn of the loop writes: a word, or up to 7 plain
	// bytes then a decoded rune (4 bytes).
	const maxStep = 16
	buf := slices.Grow(dst, len(s)+maxStep)
	n := len(buf)
	buf = buf[:cap(buf)]
	for i := 0; i < len(s); {
		if len(buf)-n < maxStep { // only invalid UTF-8 (3 bytes out for 1 in) gets here
			buf = slices.Grow(buf[:n], len(s)-i+maxStep)
			buf = buf[:cap(buf)]
		}
		if i+8 <= len(s) {
			word := binary.LittleEndian.Uint64(s[i:])
			backslash := word ^ '\\'*ones
			plain := storeWord(buf[n:], word, (word|(backslash-ones)&^backslash)&highs)
			i += plain
			n += plain
			if plain == 8 {
				continue
			}
		}
		switch c := s[i]; {
		case c == '\\':
			var r rune
			switch e := s[i+1]; e {
			case 'b', 'f', 'n', 'r', 't', '"', '\\', '/':
				buf[n] = shortEscapes[e]
				n++
				i += 2
				continue
			default: // 'u'
				r = hex4(s[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					pair := utf8.RuneError
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						pair = utf16.DecodeRune(r, hex4(s[i+2:]))
					}
					if pair != utf8.RuneError {
						i += 6
					}
					r = pair
				}
			}
			n += utf8.EncodeRune(buf[n:], r)
		case c < utf8.RuneSelf:
			buf[n] = c
			n++
			i++
		default: // invalid UTF-8 becomes U+FFFD
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += utf8.EncodeRune(buf[n:], r)
			} else {
				n += copy(buf[n:], s[i:i+size])
			}
			i += size
		}
	}
	return buf[:n]
}

// shortEscapes maps the letter after a backslash to the byte it stands for.
var shortEscapes = [256]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', '"': '"', '\\': '\\', '/': '/'}

// AppendValidUTF8 appends s with each byte that is not part of valid UTF-8 as
// U+FFFD, as a JSON string's decoder reads it (and as encoding/json writes
// such a byte).
func AppendValidUTF8[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			dst = append(dst, s[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// hex4 reads the four hex digits of a \u escape; well-formed JSON guarantees them.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		r = r<<4 | rune(HexValue(c))
	}
	return r
}

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
			plain := storeWord(buf[n:], word, word&highs|QuoteBackslashOrControl(word))
			i += plain
			n += plain
			if plain == 8 {
				continue
			}
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

// storeWord stores the 8 bytes of word (read little-endian) at the start of
// dst, which has room for them, and returns how many of them, from the first,
// stand for themselves: those before the lowest byte special marks (the high
// bit of each byte that needs work), 8 if it marks none.
func storeWord(dst []byte, word, special uint64) int {
	binary.LittleEndian.PutUint64(dst, word)
	if special == 0 {
		return 8
	}
	return bits.TrailingZeros64(special) / 8
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

const ones, highs = 0x0101010101010101, 0x8080808080808080

// QuoteBackslashOrControl marks the bytes of x, 8 bytes of JSON text read
// little-endian, that are a quote, a backslash or below 0x20: its lowest set
// bit is in the first of them, exactly (the subtractions' borrows only run
// upwards), 0 if none. A string's encoder and its decoder both stop there;
// x&0x8080808080808080 marks the bytes of multi-byte sequences besides.
func QuoteBackslashOrControl(x uint64) uint64 {
	quote, backslash := x^'"'*ones, x^'\\'*ones
	return ((x-0x20*ones)&^x | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
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
func TimeMember(dst []byte, key string, t time.Time, layout string) []byte {
	return AppendTime(append(dst, key...), t, layout)
}

// AppendTime appends t in UTC, formatted by layout, as a JSON string; the
// layout must need no escapes.
func AppendTime(dst []byte, t time.Time, layout string) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, layout)
	return append(dst, '"')
}

// SortedKeys appends m's keys to keys in byte order, the order encoding/json
// writes map keys in. Given keys[:0] of an array on the caller's stack, a
// typical header is sorted without a heap allocation.
func SortedKeys[M ~map[K]V, K cmp.Ordered, V any](keys []K, m M) []K {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
