package esclient

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
	"unsafe"

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
	buf := w.buf[:0]
	if cap(buf) > replyBufferSize { // grown for a long string
		buf = make([]byte, 0, replyBufferSize)
	}
	*w = ReplyReader{buf: buf, scratch: w.scratch[:0], slab: w.slab[len(w.slab):], interned: w.interned,
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

// ReadBool reads true or false.
func (w *ReplyReader) ReadBool() bool {
	if w.peek() == 't' {
		w.literal("true")
		return true
	}
	w.literal("false")
	return false
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

// key reads a member name, interned: a reply repeats its few names in every
// hit.
func (w *ReplyReader) key() string { return w.ReadInterned() }

// ReadString reads a string the caller keeps: decoded straight into the reader's
// string slab (see stringSlab), one copy of its bytes and no allocation of its
// own.
func (w *ReplyReader) ReadString() string {
	content := w.quoted()
	if len(content) == 0 {
		return ""
	}
	// Each byte of content decodes to at most one, but for invalid UTF-8 (3
	// for 1), which AppendUnquoted makes room for itself.
	if need := len(content) + unquoteSlack; cap(w.slab)-len(w.slab) < need {
		w.slab = make([]byte, 0, max(stringSlab, need))
	}
	start := len(w.slab)
	w.slab = jsonbytes.AppendUnquoted(w.slab, content)
	return unsafe.String(&w.slab[start], len(w.slab)-start)
}

// unquoteSlack is the room jsonbytes.AppendUnquoted wants past the decoded
// string's end, which it may write.
const unquoteSlack = 16

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

// ReadText reads a string and returns its decoded bytes, valid until the next
// read: a string that decodes to itself straight from the buffer, others
// decoded into the scratch buffer.
func (w *ReplyReader) ReadText() []byte {
	content := w.quoted()
	if jsonbytes.PlainPrefix(content) == len(content) {
		return content
	}
	w.scratch = jsonbytes.AppendUnquoted(w.scratch[:0], content)
	return w.scratch
}

// quoted reads a string literal whole into the buffer, growing it for a
// string longer than it, and returns its content between the quotes, valid
// until the next read; nil after a failed read.
func (w *ReplyReader) quoted() []byte {
	if w.expect('"') != nil {
		return nil
	}
	w.pos-- // the literal is kept in the buffer from its opening quote
	// Most strings (keys, ids, times, header values) are plain ASCII: eight
	// bytes at a time to the closing quote (jsonbytes' word test, and the
	// high bits of multi-byte sequences), nothing to check or decode.
	b, i := w.buf, w.pos+1
	for i+8 <= len(b) {
		word := binary.LittleEndian.Uint64(b[i:])
		if jsonbytes.QuoteBackslashOrControl(word)|word&0x8080808080808080 != 0 {
			break
		}
		i += 8
	}
	for i < len(b) && b[i] >= 0x20 && b[i] < utf8.RuneSelf && b[i] != '"' && b[i] != '\\' {
		i++
	}
	if i < len(b) && b[i] == '"' {
		content := b[w.pos+1 : i]
		w.pos = i + 1
		return content
	}
	// Any other string is checked and its end found by jsonbytes, in the
	// buffer, which holds it whole.
	for {
		if end := jsonbytes.ValidStringEnd(w.buf, w.pos); end >= 0 {
			content := w.buf[w.pos+1 : end-1]
			w.pos = end
			return content
		}
		if !w.fillWhole() {
			if w.srcErr == nil || errors.Is(w.srcErr, io.EOF) {
				w.failf("a string is malformed or not closed")
			} else {
				w.fail(w.srcErr)
			}
			return nil
		}
	}
}

// fillWhole reads more of the reply after the unconsumed bytes until the
// buffer is full, doubling it first if they fill it already; false when the
// reply has no more. A literal that did not end in the buffer is scanned
// again from its start after each, and each holds twice as much of it as the
// one before: a long string is scanned about three times at most.
func (w *ReplyReader) fillWhole() bool {
	if w.pos == 0 && len(w.buf) == cap(w.buf) {
		w.buf = append(make([]byte, 0, 2*cap(w.buf)), w.buf...)
	}
	read := false
	for len(w.buf) < cap(w.buf) || w.pos > 0 {
		if !w.fill() {
			break
		}
		read = true
	}
	return read
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
