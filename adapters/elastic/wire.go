package elastic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/reqlog/reqlog/adapters/internal/record"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// wire reads the JSON of a search reply in one pass as it streams in, and
// decodes each hit's _source straight into a record: encoding/json scanned
// every hit twice and decoded it by reflection, most of the service's CPU per
// fetch. It reads strings as encoding/json does (escapes, surrogate pairs,
// invalid UTF-8 as U+FFFD; wire_test.go checks that), decoding a string's
// escapes in the same pass that finds its end, and skips what it does not
// need. The first error sticks.
type wire struct {
	src     io.Reader
	srcErr  error  // the reader's error, met when buf runs out
	buf     []byte // buf[pos:] is read from src and not yet consumed
	pos     int
	err     error
	bad     error // the first well-formed value a record cannot hold
	scratch []byte
	// slab is where string cuts the strings it returns from (stringSlab).
	slab []byte
	// interned holds the strings of few distinct values (header names,
	// accounts, methods, content types): one copy per reply, not per hit.
	interned map[string]string
	// values is a slab the header value lists of a reply are cut from, and
	// valueScratch collects one list; headers collects one side's headers
	// until record.Content.content turns them into a map.
	values       []string
	valueScratch []string
	headers      [2][]record.Header
}

// wireBufferSize is how much of a reply is read from the connection at once.
const wireBufferSize = 32 << 10

// wires keeps the buffers of finished readers for the next reply.
var wires = sync.Pool{New: func() any {
	return &wire{buf: make([]byte, 0, wireBufferSize), interned: map[string]string{}}
}}

func newWire(r io.Reader) *wire {
	w := wires.Get().(*wire)
	w.src = r
	return w
}

// release returns w's buffers to the pool. The strings and slices it handed
// out stay valid: they are never written again.
func (w *wire) release() {
	if len(w.interned) >= maxInterned {
		w.interned = map[string]string{}
	}
	*w = wire{buf: w.buf[:0], scratch: w.scratch[:0], slab: w.slab[len(w.slab):], interned: w.interned,
		valueScratch: w.valueScratch[:0], headers: [2][]record.Header{w.headers[0][:0], w.headers[1][:0]}}
	clear(w.valueScratch[:cap(w.valueScratch)])
	clear(w.headers[0][:cap(w.headers[0])])
	clear(w.headers[1][:cap(w.headers[1])])
	wires.Put(w)
}

// errSyntax marks a reply that is not the JSON expected.
var errSyntax = errors.New("malformed search reply")

func (w *wire) fail(err error) error {
	if w.err == nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %w", errSyntax, io.ErrUnexpectedEOF)
		}
		w.err = err
	}
	return w.err
}

func (w *wire) failf(format string, args ...any) error {
	return w.fail(fmt.Errorf("%w: "+format, append([]any{errSyntax}, args...)...))
}

// fill reads more of the reply after the unconsumed bytes; false when the
// reply has no more (src's error is kept in srcErr).
func (w *wire) fill() bool {
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
func (w *wire) ensure(n int) bool {
	for len(w.buf)-w.pos < n {
		if !w.fill() {
			return false
		}
	}
	return true
}

// cut fails the read at the end of what src gave.
func (w *wire) cut() {
	if w.srcErr != nil {
		w.fail(w.srcErr)
	} else {
		w.fail(io.EOF)
	}
}

// peek returns the next byte that is not white space, without consuming it.
func (w *wire) peek() byte {
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
func (w *wire) expect(c byte) error {
	if got := w.peek(); w.err == nil {
		if got != c {
			return w.failf("found %q where %q was expected", got, c)
		}
		w.pos++
	}
	return w.err
}

// object reads an object, calling member with each key; member reads the value.
func (w *wire) object(member func(key string) error) error {
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

// arrayStart reads '['; more then reports whether an element follows, reading
// the comma before it, and reads the closing bracket when none does.
func (w *wire) arrayStart() error { return w.expect('[') }

func (w *wire) more(first bool) bool {
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

// array reads an array, calling element for each element.
func (w *wire) array(element func() error) error {
	if err := w.arrayStart(); err != nil {
		return err
	}
	for first := true; w.more(first); first = false {
		if err := element(); err != nil {
			return w.fail(err)
		}
	}
	return w.err
}

// null reads a null if one is next.
func (w *wire) null() bool {
	if w.peek() != 'n' {
		return false
	}
	w.literal("null")
	return true
}

func (w *wire) literal(want string) {
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
		"path", "route", record.JSONRouteTemplate, "status_code", record.JSONDuration, "request", "response", "created_at", "updated_at",
		"visible_at", "expires_at", "header", "values", "body", "content_type", "size", "text"} {
		m[k] = k
	}
	return m
}()

// key reads a member name.
func (w *wire) key() string {
	text := w.text()
	if k, ok := keys[string(text)]; ok {
		return k
	}
	return string(text)
}

// string reads a string the caller keeps: decoded straight into the reader's
// string slab (see stringSlab), one copy of its bytes and no allocation of its
// own.
func (w *wire) string() string {
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

// internedString reads a string of few distinct values, returning the copy read
// before when there is one.
func (w *wire) internedString() string {
	text := w.text()
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

// text reads a string and returns its decoded bytes, valid until the next read.
// A string that ends in the buffer without an escape or a multi-byte sequence
// is returned from it without a copy; others are decoded into the scratch
// buffer.
func (w *wire) text() []byte {
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
func (w *wire) decode(out []byte, start int) (decoded []byte, newStart int, multiByte, ok bool) {
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
func (w *wire) escape(out []byte) ([]byte, bool) {
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

// number reads a number's text into the scratch buffer.
func (w *wire) number() []byte {
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

// int64 reads an integer.
func (w *wire) int64() int64 {
	raw := w.number()
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

// skip reads a value of any kind.
func (w *wire) skip() error {
	switch c := w.peek(); {
	case w.err != nil:
	case c == '{':
		return w.object(func(string) error { return w.skip() })
	case c == '[':
		return w.array(w.skip)
	case c == '"':
		w.text()
	case c == 't':
		w.literal("true")
	case c == 'f':
		w.literal("false")
	case c == 'n':
		w.literal("null")
	default:
		w.number()
	}
	return w.err
}

// record reads a _source into r: the members record.Record's json tags name
// (wire_test.go checks the result against encoding/json's); others are skipped.
func (w *wire) record(r *record.Record) error {
	return w.object(func(key string) error {
		if w.null() {
			return w.err
		}
		switch key {
		case "id":
			r.ID = w.string()
		case "reference":
			r.Reference = w.string()
		case "account":
			r.Account = w.internedString()
		case "domain":
			r.Domain = w.internedString()
		case "name":
			r.Name = w.internedString()
		case "ip_address":
			r.IPAddress = w.string()
		case "method":
			r.Method = w.internedString()
		case "path":
			r.Path = w.string()
		case "route":
			r.Route = w.string()
		case record.JSONRouteTemplate:
			r.Template = w.string()
		case "status_code":
			n := w.int64()
			if int64(int32(n)) != n && w.bad == nil {
				w.bad = fmt.Errorf("decode stored message: status_code %d is out of range", n)
			}
			r.StatusCode = int32(n)
		case record.JSONDuration:
			var us record.DurationMicros
			if err := us.UnmarshalJSON(w.number()); err != nil {
				return w.fail(fmt.Errorf("%w: %w", errSyntax, err))
			}
			r.Duration = &us
		case "request":
			return w.content(&r.Request, 0)
		case "response":
			return w.content(&r.Response, 1)
		case "created_at":
			r.CreatedAt = w.micros()
		case "updated_at":
			r.UpdatedAt = w.micros()
		case "visible_at":
			r.VisibleAt = w.micros()
		case "expires_at":
			r.ExpiresAt = w.micros()
		default:
			return w.skip()
		}
		return w.err
	})
}

// content reads one side of a message; side (0 request, 1 response) picks
// the reader's scratch list for its headers.
func (w *wire) content(c *record.Content, side int) error {
	return w.object(func(key string) error {
		if w.null() {
			return w.err
		}
		switch key {
		case "header":
			c.Headers = w.headers[side][:0]
			err := w.array(func() error {
				var h record.Header
				if w.null() {
					c.Headers = append(c.Headers, h)
					return w.err
				}
				err := w.object(func(key string) error {
					if w.null() {
						return w.err
					}
					switch key {
					case "name":
						h.Name = w.internedString()
					case "values":
						h.Values = w.headerValues()
					default:
						return w.skip()
					}
					return w.err
				})
				c.Headers = append(c.Headers, h)
				return err
			})
			w.headers[side] = c.Headers
			return err
		case "body":
			c.Body = w.string()
		case "content_type":
			c.ContentType = w.internedString()
		case "size":
			n := int(w.int64())
			c.Size = &n
		default:
			return w.skip()
		}
		return w.err
	})
}

// headerValues reads a header's list of values (null reads as "") into a
// slice cut from the reader's slab: one allocation for many headers.
func (w *wire) headerValues() []string {
	list := w.valueScratch[:0]
	_ = w.array(func() error {
		if w.null() {
			list = append(list, "")
		} else {
			list = append(list, w.string())
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

// valueSlab is how many header values one allocation holds.
const valueSlab = 256

// micros reads a time as record.Micros does: reqlog's own format (six
// fractional digits, UTC) directly, anything else through time.Parse.
func (w *wire) micros() record.Micros {
	text := w.text()
	if w.err != nil {
		return 0
	}
	if us, ok := parseStoredTime(text); ok {
		return us
	}
	t, err := time.Parse(time.RFC3339Nano, string(text))
	if err != nil {
		if w.bad == nil {
			w.bad = fmt.Errorf("decode stored message: %w", err)
		}
		return 0
	}
	return record.MicrosOf(t)
}

// parseStoredTime reads "2006-01-02T15:04:05.000000Z", as jsonbytes.AppendTime
// writes it; ok is false for any other text, or a date time.Parse would refuse.
func parseStoredTime(b []byte) (us record.Micros, ok bool) {
	const layout = "dddd-dd-ddTdd:dd:dd.ddddddZ"
	if len(b) != len(layout) {
		return 0, false
	}
	for i := range len(layout) {
		if layout[i] == 'd' {
			if b[i] < '0' || b[i] > '9' {
				return 0, false
			}
		} else if b[i] != layout[i] {
			return 0, false
		}
	}
	num := func(from, to int) int {
		n := 0
		for _, c := range b[from:to] {
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), time.Month(num(5, 7)), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	if hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	t := time.Date(year, month, day, hour, minute, sec, num(20, 26)*1000, time.UTC)
	if y, m, d := t.Date(); y != year || m != month || d != day {
		return 0, false // out of range: time.Parse says why
	}
	return record.MicrosOf(t), true
}
