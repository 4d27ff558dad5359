package elastic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/reqlog/reqlog/adapters/internal/record"
)

// wire reads the JSON of a search reply in one pass as it streams in, and
// decodes each hit's _source straight into a record: encoding/json scanned
// every hit twice and decoded it by reflection, most of the service's CPU per
// fetch. It reads strings as encoding/json does (escapes, surrogate pairs,
// invalid UTF-8 as U+FFFD; wire_test.go checks that) and skips what it does
// not need. The first error sticks.
type wire struct {
	r       *bufio.Reader
	err     error
	bad     error // the first well-formed value a record cannot hold
	scratch []byte
}

func newWire(r io.Reader) *wire { return &wire{r: bufio.NewReaderSize(r, 32<<10)} }

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

// peek returns the next byte that is not white space, without reading it.
func (w *wire) peek() byte {
	for w.err == nil {
		c, err := w.r.ReadByte()
		if err != nil {
			w.fail(err)
			return 0
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		_ = w.r.UnreadByte()
		return c
	}
	return 0
}

// expect reads the byte c, after white space.
func (w *wire) expect(c byte) error {
	if got := w.peek(); w.err == nil {
		if got != c {
			return w.failf("found %q where %q was expected", got, c)
		}
		_, _ = w.r.ReadByte()
	}
	return w.err
}

// object reads an object, calling member with each key; member reads the value.
func (w *wire) object(member func(key string) error) error {
	if err := w.expect('{'); err != nil {
		return err
	}
	if w.peek() == '}' {
		_, _ = w.r.ReadByte()
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
		switch w.peek() {
		case ',':
			_, _ = w.r.ReadByte()
		case '}':
			_, _ = w.r.ReadByte()
			return w.err
		default:
			return w.failf("found %q after an object member", w.peek())
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
		_, _ = w.r.ReadByte()
		return false
	case first:
		return true
	case c == ',':
		_, _ = w.r.ReadByte()
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
		c, err := w.r.ReadByte()
		if err != nil {
			w.fail(err)
		} else if c != want[i] {
			w.failf("found %q in %q", c, want)
		}
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
func (w *wire) key() string {
	raw, escaped := w.raw()
	if k, ok := keys[string(raw)]; ok && !escaped {
		return k
	}
	return w.decode(raw, escaped)
}

// string reads a string.
func (w *wire) string() string {
	raw, escaped := w.raw()
	return w.decode(raw, escaped)
}

// raw reads a string's content, escapes undecoded, into the scratch buffer.
func (w *wire) raw() (raw []byte, escaped bool) {
	if w.expect('"') != nil {
		return nil, false
	}
	raw = w.scratch[:0]
	for {
		chunk, err := w.r.ReadSlice('"')
		raw = append(raw, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			w.fail(err)
			return nil, false
		}
		// The quote ends the string unless an odd number of backslashes escape it.
		n := 0
		for i := len(raw) - 2; i >= 0 && raw[i] == '\\'; i-- {
			n++
		}
		if n%2 == 0 {
			break
		}
	}
	raw = raw[:len(raw)-1]
	w.scratch = raw[:0]
	for _, c := range raw {
		if c < 0x20 {
			w.failf("a control character in a string")
			return nil, false
		}
		escaped = escaped || c == '\\'
	}
	return raw, escaped
}

// decode is the string raw holds.
func (w *wire) decode(raw []byte, escaped bool) string {
	if w.err != nil {
		return ""
	}
	if !escaped && utf8.Valid(raw) {
		return string(raw)
	}
	s, ok := unquote(raw)
	if !ok {
		w.failf("a bad escape in a string")
	}
	return s
}

// unquote decodes the escapes of a string's content as encoding/json does;
// invalid UTF-8 bytes and lone surrogates become U+FFFD.
func unquote(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		plain := bytes.IndexByte(raw, '\\')
		if plain < 0 {
			plain = len(raw)
		}
		out = appendValid(out, raw[:plain])
		raw = raw[plain:]
		if len(raw) == 0 {
			break
		}
		if len(raw) < 2 {
			return "", false
		}
		switch e := raw[1]; e {
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
			r, ok := hex4(raw[2:])
			if !ok {
				return "", false
			}
			raw = raw[6:]
			if utf16.IsSurrogate(r) {
				high := r
				r = utf8.RuneError
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					if low, ok := hex4(raw[2:]); ok {
						if pair := utf16.DecodeRune(high, low); pair != utf8.RuneError {
							r = pair
							raw = raw[6:]
						}
					}
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		raw = raw[2:]
	}
	return string(out), true
}

// appendValid appends b with each invalid UTF-8 byte as U+FFFD.
func appendValid(out, b []byte) []byte {
	if utf8.Valid(b) {
		return append(out, b...)
	}
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
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// number reads a number's text into the scratch buffer.
func (w *wire) number() []byte {
	raw := w.scratch[:0]
	for w.err == nil {
		c, err := w.r.ReadByte()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.fail(err)
			}
			break
		}
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			_ = w.r.UnreadByte()
			break
		}
		raw = append(raw, c)
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
		w.string()
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
			r.Account = w.string()
		case "domain":
			r.Domain = w.string()
		case "name":
			r.Name = w.string()
		case "ip_address":
			r.IPAddress = w.string()
		case "method":
			r.Method = w.string()
		case "path":
			r.Path = w.string()
		case "route":
			r.Route = w.string()
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
			return w.content(&r.Request)
		case "response":
			return w.content(&r.Response)
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

func (w *wire) content(c *record.Content) error {
	return w.object(func(key string) error {
		if w.null() {
			return w.err
		}
		switch key {
		case "header":
			c.Headers = []record.Header{}
			return w.array(func() error {
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
						h.Name = w.string()
					case "values":
						h.Values = []string{}
						return w.array(func() error {
							if w.null() {
								h.Values = append(h.Values, "")
								return w.err
							}
							h.Values = append(h.Values, w.string())
							return w.err
						})
					default:
						return w.skip()
					}
					return w.err
				})
				c.Headers = append(c.Headers, h)
				return err
			})
		case "body":
			c.Body = w.string()
		case "content_type":
			c.ContentType = w.string()
		case "size":
			n := int(w.int64())
			c.Size = &n
		default:
			return w.skip()
		}
		return w.err
	})
}

// micros reads a time as record.Micros does.
func (w *wire) micros() record.Micros {
	s := w.string()
	if w.err != nil {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if w.bad == nil {
			w.bad = fmt.Errorf("decode stored message: %w", err)
		}
		return 0
	}
	return record.MicrosOf(t)
}
