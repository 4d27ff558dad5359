package esclient

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/reqlog/reqlog/adapters/internal/record"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// ReplyReader reads the JSON of a reply in one pass as it streams in,
// handing its values to the caller as it meets them and skipping what the
// caller does not ask for: a search reply's hits go straight into records,
// without the second scan and the reflection of encoding/json, which were
// most of the service's CPU per fetch. It reads strings as encoding/json does
// (escapes, surrogate pairs, invalid UTF-8 as U+FFFD; reply_test.go checks
// that). The first error sticks.
type ReplyReader struct {
	src     io.Reader
	srcErr  error  // the reader's error, met when buf runs out
	buf     []byte // buf[pos:] is read from src and not yet consumed
	pos     int
	err     error
	refused error // the first well-formed value the caller could not use
	scratch []byte
	// slab is where ReadString cuts the strings it returns from (stringSlab).
	slab []byte
	// interned holds the strings of few distinct values (header names,
	// accounts, methods, content types): one copy per reply, not per hit.
	interned map[string]string
	// values is a slab the string lists of a reply are cut from, and
	// valueScratch collects one list.
	values       []string
	valueScratch []string
}

// replyBufferSize is how much of a reply is read from the connection at once.
const replyBufferSize = 32 << 10

// replyReaders keeps the buffers of finished readers for the next reply.
var replyReaders = sync.Pool{New: func() any {
	return &ReplyReader{buf: make([]byte, 0, replyBufferSize), interned: map[string]string{}}
}}

// NewReplyReader is a reader of r, from a pool; Release returns it.
func NewReplyReader(r io.Reader) *ReplyReader {
	w := replyReaders.Get().(*ReplyReader)
	w.src = r
	return w
}

// Release returns w's buffers to the pool. The strings and slices it handed
// out stay valid: they are never written again.
func (w *ReplyReader) Release() {
	if len(w.interned) >= maxInterned {
		w.interned = map[string]string{}
	}
	*w = ReplyReader{buf: w.buf[:0], scratch: w.scratch[:0], slab: w.slab[len(w.slab):], interned: w.interned,
		valueScratch: w.valueScratch[:0]}
	clear(w.valueScratch[:cap(w.valueScratch)])
	replyReaders.Put(w)
}

// Err is the first error of reading or syntax, which ended the read.
func (w *ReplyReader) Err() error { return w.err }

// Refuse notes that a well-formed value cannot be used (a time that is no
// time), unless one was noted before: the read goes on.
func (w *ReplyReader) Refuse(err error) {
	if w.refused == nil {
		w.refused = err
	}
}

// Refused is the first error Refuse noted.
func (w *ReplyReader) Refused() error { return w.refused }

// Malformed ends the read: the reply is not the JSON expected, as err says.
func (w *ReplyReader) Malformed(err error) error {
	return w.fail(fmt.Errorf("%w: %w", errSyntax, err))
}

// errSyntax marks a reply that is not the JSON expected.
var errSyntax = errors.New("malformed search reply")

func (w *ReplyReader) fail(err error) error {
	if w.err == nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %w", errSyntax, io.ErrUnexpectedEOF)
		}
		w.err = err
	}
	return w.err
}

func (w *ReplyReader) failf(format string, args ...any) error {
	return w.fail(fmt.Errorf("%w: "+format, append([]any{errSyntax}, args...)...))
}

// fill reads more of the reply after the unconsumed bytes; false when the
// reply has no more (src's error is kept in srcErr).
func (w *ReplyReader) fill() bool {
	if w.srcErr != nil || w.err != nil {
		return false
	}
	if w.pos > 0 {
		n := copy(w.buf[:cap(w.buf)], w.buf[w.pos:])
		w.buf, w.pos = w.buf[:n], 0
	}
	for range 100 { // a reader may return 0, nil; io.ReadFull gives up likewise
		n, err := w.src.Read(w.buf[len(w.buf):cap(w.buf)])
		w.buf = w.buf[:len(w.buf)+n]
		if err != nil {
			w.srcErr = err
		}
		if n > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
	w.srcErr = io.ErrNoProgress
	return false
}

// ensure reports whether n unconsumed bytes are buffered, reading more if needed.
func (w *ReplyReader) ensure(n int) bool {
	for len(w.buf)-w.pos < n {
		if !w.fill() {
			return false
		}
	}
	return true
}

// cut fails the read at the end of what src gave.
func (w *ReplyReader) cut() {
	if w.srcErr != nil {
		w.fail(w.srcErr)
	} else {
		w.fail(io.EOF)
	}
}

// peek returns the next byte that is not white space, without consuming it.
func (w *ReplyReader) peek() byte {
	for w.err == nil {
		for w.pos < len(w.buf) {
			switch c := w.buf[w.pos]; c {
			case ' ', '\t', '\n', '\r':
				w.pos++
			default:
				return c
			}
		}
		if !w.fill() {
			w.cut()
		}
	}
	return 0
}

// expect reads the byte c, after white space.
func (w *ReplyReader) expect(c byte) error {
	if got := w.peek(); w.err == nil {
		if got != c {
			return w.failf("found %q where %q was expected", got, c)
		}
		w.pos++
	}
	return w.err
}

// Object reads an object, calling member with each key; member reads the value.
func (w *ReplyReader) Object(member func(key string) error) error {
	if err := w.expect('{'); err != nil {
		return err
	}
	if w.peek() == '}' {
		w.pos++
		return w.err
	}
	for w.err == nil {
		key := w.key()
		if err := w.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return w.fail(err)
		}
		switch c := w.peek(); c {
		case ',':
			w.pos++
		case '}':
			w.pos++
			return w.err
		default:
			return w.failf("found %q after an object member", c)
		}
	}
	return w.err
}

// ArrayStart reads '['; More then reports whether an element follows, reading
// the comma before it, and reads the closing bracket when none does.
func (w *ReplyReader) ArrayStart() error { return w.expect('[') }

func (w *ReplyReader) More(first bool) bool {
	c := w.peek()
	switch {
	case w.err != nil:
		return false
	case c == ']':
		w.pos++
		return false
	case first:
		return true
	case c == ',':
		w.pos++
		return true
	}
	w.failf("found %q between array elements", c)
	return false
}

// Array reads an array, calling element for each element.
func (w *ReplyReader) Array(element func() error) error {
	if err := w.ArrayStart(); err != nil {
		return err
	}
	for first := true; w.More(first); first = false {
		if err := element(); err != nil {
			return w.fail(err)
		}
	}
	return w.err
}

// Null reads a null if one is next.
func (w *ReplyReader) Null() bool {
	if w.peek() != 'n' {
		return false
	}
	w.literal("null")
	return true
}

func (w *ReplyReader) literal(want string) {
	for i := 0; i < len(want) && w.err == nil; i++ {
		if !w.ensure(1) {
			w.cut()
			return
		}
		if c := w.buf[w.pos]; c != want[i] {
			w.failf("found %q in %q", c, want)
			return
		}
		w.pos++
	}
}

// keys are the member names a reply holds, read without allocating.
var keys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"took", "timed_out", "_shards", "hits", "total", "max_score", "_index", "_id",
		"_score", "_source", "sort", "id", "reference", "account", "domain", "name", "ip_address", "method",
		"path", "route", "status_code", record.JSONDuration, "request", "response", "created_at", "updated_at",
		"visible_at", "expires_at", "header", "values", "body", "content_type", "size", "text"} {
		m[k] = k
	}
	return m
}()

// key reads a member name.
func (w *ReplyReader) key() string {
	text := w.ReadText()
	if k, ok := keys[string(text)]; ok {
		return k
	}
	return string(text)
}

// ReadString reads a string the caller keeps: decoded straight into the reader's
// string slab (see stringSlab), one copy of its bytes and no allocation of its
// own.
func (w *ReplyReader) ReadString() string {
	if w.expect('"') != nil {
		return ""
	}
	out, start, multiByte, ok := w.decode(w.slab, len(w.slab))
	switch {
	case !ok || len(out) == start:
		w.slab = out[:start]
		return ""
	case multiByte && !utf8.Valid(out[start:]):
		w.slab = out[:start] // the invalid text is no string's: its room is free
		return string(appendValid(make([]byte, 0, len(out)-start+16), out[start:]))
	}
	w.slab = out
	return unsafe.String(&out[start], len(out)-start)
}

// stringSlab is the size of the arrays the strings of a reply are cut from.
// Their bytes are never written again once a string was cut, so the strings
// stay valid however long they are kept; a page's strings share a few arrays
// rather than allocating one each.
const stringSlab = 32 << 10

// maxInterned and maxInternedBytes bound the strings a pooled reader keeps.
const (
	maxInterned      = 1024
	maxInternedBytes = 64
)

// ReadInterned reads a string of few distinct values, returning the copy read
// before when there is one.
func (w *ReplyReader) ReadInterned() string {
	text := w.ReadText()
	if s, ok := w.interned[string(text)]; ok {
		return s
	}
	s := string(text)
	if w.err == nil && len(w.interned) < maxInterned && len(s) <= maxInternedBytes {
		w.interned[s] = s
	}
	return s
}

// stringEnds marks the bytes that end a run of plain string bytes: the quote,
// the backslash, control characters (refused) and bytes of multi-byte UTF-8
// sequences (checked).
var stringEnds = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80
	}
	return t
}()

// shortEscapes maps the byte after a backslash to what it stands for, where
// that is one byte; 0 elsewhere.
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// highs is the high bit of each byte of a word.
const highs = 0x8080808080808080

// hasStringEnd reports whether any of the 8 bytes of v is a stringEnds byte
// (it may say so wrongly; text then looks byte by byte).
func hasStringEnd(v uint64) bool {
	return jsonbytes.QuoteBackslashOrControl(v)|v&highs != 0
}

// ReadText reads a string and returns its decoded bytes, valid until the next read.
// A string that ends in the buffer without an escape or a multi-byte sequence
// is returned from it without a copy; others are decoded into the scratch
// buffer.
func (w *ReplyReader) ReadText() []byte {
	if w.expect('"') != nil {
		return nil
	}
	b, i := w.buf, w.pos
	for i+8 <= len(b) && !hasStringEnd(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for i < len(b) && !stringEnds[b[i]] {
		i++
	}
	if i < len(b) && b[i] == '"' {
		s := b[w.pos:i]
		w.pos = i + 1
		return s
	}
	out := append(w.scratch[:0], b[w.pos:i]...)
	w.pos = i
	out, _, multiByte, ok := w.decode(out, 0)
	w.scratch = out[:0]
	if !ok {
		return nil
	}
	if multiByte && !utf8.Valid(out) {
		return appendValid(make([]byte, 0, len(out)+16), out)
	}
	return out
}

// decode reads the rest of a string, its opening quote read, appending its
// decoded bytes to out, where the string starts at start; it returns out (a
// new array when out had no room, holding only the string from start on),
// where the string starts in it, and false if the read failed. Bodies stored in
// JSON have an escape every few bytes, so the text is copied a word at a time
// into out's spare capacity, moving on by the bytes of the word that need no
// decoding, rather than appended run by run (a memmove each); every input byte
// decodes to at most one output byte, except \u escapes (at most 4 from 6), so
// nothing is written past the returned string's end except spare capacity.
// Invalid UTF-8 is left for the caller to check.
func (w *ReplyReader) decode(out []byte, start int) (decoded []byte, newStart int, multiByte, ok bool) {
	const room = 16 // a word, or a \u escape's 4 bytes after up to 7 plain ones
	o, n := out[:cap(out)], len(out)
	// high or-s the words copied: a multi-byte sequence sets a high bit (so
	// may a byte past the string's end, which costs only a utf8.Valid).
	var high uint64
	for {
		b, i := w.buf, w.pos
		for {
			if len(o)-n < room {
				o, n, start = growString(o[:n], start, len(b)-i+room)
			}
			if i+8 <= len(b) {
				v := binary.LittleEndian.Uint64(b[i:])
				binary.LittleEndian.PutUint64(o[n:], v)
				high |= v
				special := jsonbytes.QuoteBackslashOrControl(v)
				if special == 0 {
					i += 8
					n += 8
					continue
				}
				plain := bits.TrailingZeros64(special) / 8
				i += plain
				n += plain
			} else if i == len(b) {
				break
			} else if c := b[i]; c >= 0x20 && c != '"' && c != '\\' {
				high |= uint64(c)
				o[n] = c
				n++
				i++
				continue
			}
			if b[i] == '\\' && i+1 < len(b) {
				if d := shortEscapes[b[i+1]]; d != 0 {
					o[n] = d
					n++
					i += 2
					continue
				}
			}
			break
		}
		w.pos = i
		if i == len(b) {
			if !w.fill() {
				w.cut()
				return o[:n], start, false, false
			}
			continue
		}
		switch b[i] {
		case '"':
			w.pos = i + 1
			return o[:n], start, high&highs != 0, true
		case '\\':
			// At most 4 bytes, within room; \u escapes of non-ASCII runes
			// decode to valid UTF-8, so they leave multiByte alone.
			escaped, ok := w.escape(o[:n])
			if !ok {
				return escaped, start, false, false
			}
			o, n = escaped[:cap(escaped)], len(escaped)
		default:
			w.failf("a control character in a string")
			return o[:n], start, false, false
		}
	}
}

// growString moves the string that starts at start in out to a new array with
// room for at least more bytes after it: the bytes before start belong to
// strings already handed out, and are neither copied nor written.
func growString(out []byte, start, more int) (grown []byte, n, newStart int) {
	s := out[start:]
	grown = make([]byte, max(stringSlab, 2*len(s)+more))
	return grown, copy(grown, s), 0
}

// escape decodes the escape at the read position onto out, as encoding/json
// does: a lone or reversed surrogate becomes U+FFFD.
func (w *ReplyReader) escape(out []byte) ([]byte, bool) {
	if !w.ensure(2) {
		w.cut()
		return out, false
	}
	e := w.buf[w.pos+1]
	switch e {
	case '"', '\\', '/':
		out = append(out, e)
	case 'b':
		out = append(out, '\b')
	case 'f':
		out = append(out, '\f')
	case 'n':
		out = append(out, '\n')
	case 'r':
		out = append(out, '\r')
	case 't':
		out = append(out, '\t')
	case 'u':
		if !w.ensure(6) {
			w.cut()
			return out, false
		}
		r, ok := hex4(w.buf[w.pos+2 : w.pos+6])
		if !ok {
			w.failf("a bad escape in a string")
			return out, false
		}
		w.pos += 6
		if utf16.IsSurrogate(r) {
			high := r
			r = utf8.RuneError
			// The low half must follow at once; the string's end quote is
			// still to come, so a short read here ends the reply early.
			if w.ensure(6) && w.buf[w.pos] == '\\' && w.buf[w.pos+1] == 'u' {
				if low, ok := hex4(w.buf[w.pos+2 : w.pos+6]); ok {
					if pair := utf16.DecodeRune(high, low); pair != utf8.RuneError {
						r = pair
						w.pos += 6
					}
				}
			}
		}
		return utf8.AppendRune(out, r), true
	default:
		w.failf("a bad escape in a string")
		return out, false
	}
	w.pos += 2
	return out, true
}

// appendValid appends b with each invalid UTF-8 byte as U+FFFD. Escapes only
// ever decode to whole sequences, so checking the decoded string whole finds
// exactly the invalid bytes of its raw text.
func appendValid(out, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// isNumberByte reports whether c can be part of a number's text.
func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// ReadNumber reads a number's text into the scratch buffer.
func (w *ReplyReader) ReadNumber() []byte {
	raw := w.scratch[:0]
	for w.err == nil {
		if w.pos == len(w.buf) && !w.fill() {
			if !errors.Is(w.srcErr, io.EOF) {
				w.fail(w.srcErr)
			}
			break
		}
		c := w.buf[w.pos]
		if !isNumberByte(c) {
			break
		}
		raw = append(raw, c)
		w.pos++
	}
	w.scratch = raw[:0]
	if len(raw) == 0 {
		w.failf("a number was expected")
	}
	return raw
}

// ReadInt64 reads an integer.
func (w *ReplyReader) ReadInt64() int64 {
	raw := w.ReadNumber()
	var n int64
	neg := len(raw) > 0 && raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	ok := len(digits) > 0 && len(digits) <= 18 && (digits[0] != '0' || len(digits) == 1)
	for _, c := range digits {
		ok = ok && '0' <= c && c <= '9'
		n = n*10 + int64(c-'0')
	}
	if !ok && w.err == nil {
		w.failf("%q is not an integer reqlog writes", raw)
	}
	if neg {
		n = -n
	}
	return n
}

// Skip reads a value of any kind.
func (w *ReplyReader) Skip() error {
	switch c := w.peek(); {
	case w.err != nil:
	case c == '{':
		return w.Object(func(string) error { return w.Skip() })
	case c == '[':
		return w.Array(w.Skip)
	case c == '"':
		w.ReadText()
	case c == 't':
		w.literal("true")
	case c == 'f':
		w.literal("false")
	case c == 'n':
		w.literal("null")
	default:
		w.ReadNumber()
	}
	return w.err
}

// ReadStrings reads an array of strings (null reads as "") into a slice cut
// from the reader's slab: one allocation for many lists.
func (w *ReplyReader) ReadStrings() []string {
	list := w.valueScratch[:0]
	_ = w.Array(func() error {
		if w.Null() {
			list = append(list, "")
		} else {
			list = append(list, w.ReadString())
		}
		return w.err
	})
	w.valueScratch = list
	if len(list) == 0 {
		return []string{}
	}
	if cap(w.values)-len(w.values) < len(list) {
		w.values = make([]string, 0, max(valueSlab, len(list)))
	}
	n := len(w.values)
	w.values = append(w.values, list...)
	clear(list)
	return w.values[n : n+len(list) : n+len(list)]
}

// valueSlab is how many strings of lists one allocation holds.
const valueSlab = 256
