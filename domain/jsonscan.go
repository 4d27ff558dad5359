package domain

// Byte-level JSON scanning: splitting batches without copying them, redacting
// bodies without reordering them, and decoding a submission in one walk once
// checkJSON has checked the whole body (json.Unmarshal would check every nested
// value again). The functions expect well-formed JSON.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxNesting bounds how deeply the arrays and objects of a POST body nest. A
// submission needs six ({"messages":[{"request":{"header":{"Accept":[...]);
// checkJSON refuses hostile bodies such as "[[[[..." while validating, before
// decoding.
const MaxNesting = 64

// jsonStringEnd returns the index just after the string literal starting at i.
// Bodies nested in a submission are mostly escaped quotes, a few bytes apart, so
// a plain loop beats a vectorised search here.
func jsonStringEnd[T string | []byte](s T, i int) int {
	for j := i + 1; j < len(s); j++ {
		if !jsonStringStop[s[j]] {
			continue
		}
		if s[j] == '"' {
			return j + 1
		}
		j++ // past the escaped byte
	}
	return len(s)
}

// jsonStringStop marks the bytes that end a string or start an escape.
var jsonStringStop = [256]bool{'"': true, '\\': true}

// valueEnds maps the first byte of each container and long string of a checked
// body to the value's length. Splitting and decoding the body then jump over
// those values instead of reading them again: a request body's string would
// otherwise be scanned once for each object enclosing it. A nil valueEnds scans.
type valueEnds map[*byte]int

// valueEndsOf indexes the spans checkJSON found in body.
func valueEndsOf(body []byte, spans []valueSpan) valueEnds {
	ends := make(valueEnds, len(spans))
	ends.add(body, spans)
	return ends
}

// add indexes the spans checkJSON found in body.
func (e valueEnds) add(body []byte, spans []valueSpan) {
	for _, span := range spans {
		e[&body[span.start]] = span.end - span.start
	}
}

// valueEnd returns the index just after the value starting at s[i].
func (e valueEnds) valueEnd(s []byte, i int) int {
	if e != nil && i < len(s) {
		if n, ok := e[&s[i]]; ok {
			return i + n
		}
	}
	return jsonValueEnd(s, i)
}

// batchItems splits a well-formed JSON array into its elements without copying
// them. An array of more than limit elements is refused with ErrTooLarge after
// being counted, so a huge array of tiny items costs one scan, not a decode.
func batchItems(array []byte, limit int, ends valueEnds) ([]json.RawMessage, error) {
	var items []json.RawMessage
	n := 0
	for item := range elements(array, ends) {
		if n++; n <= limit {
			items = append(items, item)
		}
	}
	if n > limit {
		return nil, fmt.Errorf("batch of %d messages is over the limit of %d: %w", n, limit, ErrTooLarge)
	}
	return items, nil
}

// jsonValueEnd returns the index just after the value starting at i.
func jsonValueEnd[T string | []byte](s T, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return jsonStringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = jsonStringEnd(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	default:
		j := i
		for j < len(s) && !isJSONSpace(s[j]) && s[j] != ',' && s[j] != '}' && s[j] != ']' {
			j++
		}
		return j
	}
}

func skipJSONSpace[T string | []byte](s T, i int) int {
	for i < len(s) && isJSONSpace(s[i]) {
		i++
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// memberLiterals yields the keys, as literals with their quotes, and the raw
// values of the well-formed object obj in the order sent. Decoding walks the body
// once this way instead of re-validating every nested value as json.Unmarshal
// would, and a caller reads a key without allocating a string for it.
func memberLiterals(obj []byte, ends valueEnds) iter.Seq2[[]byte, json.RawMessage] {
	return func(yield func([]byte, json.RawMessage) bool) {
		for i := skipJSONSpace(obj, 1); i < len(obj) && obj[i] == '"'; {
			keyEnd := jsonStringEnd(obj, i)
			start := skipJSONSpace(obj, skipJSONSpace(obj, keyEnd)+1) // past the colon
			end := ends.valueEnd(obj, start)
			if !yield(obj[i:keyEnd:keyEnd], obj[start:end:end]) {
				return
			}
			if i = skipJSONSpace(obj, end); i < len(obj) && obj[i] == ',' {
				i = skipJSONSpace(obj, i+1)
			}
		}
	}
}

// memberKey names a member of the contract's documents that the parser reads.
type memberKey uint8

const (
	keyName memberKey = iota
	keyApp
	keyCreatedAt
	keyIPAddress
	keyMethod
	keyPath
	keyDurationMS
	keyStatusCode
	keyRequest
	keyResponse
	keyHeader
	keyBody
	keyMessages
	memberKeys // how many there are
)

// members holds the values of an object's members that the parser reads, by
// key; nil for an absent member. An array rather than a map: reading an object
// allocates nothing and hashes no key.
type members [memberKeys]json.RawMessage

// readMembers collects the members of the well-formed object obj that the
// contract names, skipping the others; a repeated key keeps its last value, as
// json.Unmarshal into a map does.
func readMembers(obj []byte, ends valueEnds) members {
	var m members
	for key, value := range memberLiterals(obj, ends) {
		if k, ok := memberKeyOf(key); ok {
			m[k] = value
		}
	}
	return m
}

// memberKeyOf reads a key literal as json.Unmarshal decodes it. Only an escape
// can make a literal decode to a contract name it does not spell: invalid UTF-8
// decodes to U+FFFD, which no name holds.
func memberKeyOf(lit []byte) (memberKey, bool) {
	name := lit[1 : len(lit)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		name = []byte(unquote(lit))
	}
	switch string(name) {
	case "name":
		return keyName, true
	case "app":
		return keyApp, true
	case "created_at":
		return keyCreatedAt, true
	case "ip_address":
		return keyIPAddress, true
	case "method":
		return keyMethod, true
	case "path":
		return keyPath, true
	case "duration_ms":
		return keyDurationMS, true
	case "status_code":
		return keyStatusCode, true
	case "request":
		return keyRequest, true
	case "response":
		return keyResponse, true
	case "header":
		return keyHeader, true
	case "body":
		return keyBody, true
	case "messages":
		return keyMessages, true
	}
	return 0, false
}

// unquote decodes the well-formed JSON string literal lit exactly as
// json.Unmarshal does: invalid UTF-8 and unpaired surrogates become U+FFFD.
func unquote(lit []byte) string {
	s := lit[1 : len(lit)-1]
	plain := plainPrefix(s)
	if plain == len(s) {
		return string(s)
	}
	var onStack [256]byte // names, methods and paths decode here, then are copied once
	return string(appendUnquoted(append(onStack[:0], s[:plain]...), s[plain:]))
}

// plainPrefix is the length of the prefix of a literal's content s that decodes
// to itself: no escapes, no invalid UTF-8.
func plainPrefix(s []byte) int {
	plain := 0
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

// appendUnquoted appends the decoded content s of a well-formed string literal
// (without its quotes) to b, as unquote decodes it.
func appendUnquoted(b, s []byte) []byte {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			switch e := s[i+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(s[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if pair := utf16.DecodeRune(r, hex4(s[i+2:])); pair != utf8.RuneError {
							b = utf8.AppendRune(b, pair)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default: // '"', '\\', '/'
				b = append(b, e)
			}
			i += 2
		case c < utf8.RuneSelf: // a run of plain ASCII, copied at once
			end := i + 1
			for end < len(s) && s[end] != '\\' && s[end] < utf8.RuneSelf {
				end++
			}
			b = append(b, s[i:end]...)
			i = end
		default: // invalid UTF-8 becomes U+FFFD
			r, size := utf8.DecodeRune(s[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return b
}

// hex4 reads the four hex digits of a \u escape; well-formed JSON guarantees them.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		r = r<<4 | rune(unhex(c))
	}
	return r
}

// elements yields the raw elements of the well-formed array arr.
func elements(arr []byte, ends valueEnds) iter.Seq[json.RawMessage] {
	return func(yield func(json.RawMessage) bool) {
		for i := skipJSONSpace(arr, 1); i < len(arr) && arr[i] != ']'; {
			end := ends.valueEnd(arr, i)
			if !yield(arr[i:end:end]) {
				return
			}
			if i = skipJSONSpace(arr, end); i < len(arr) && arr[i] == ',' {
				i = skipJSONSpace(arr, i+1)
			}
		}
	}
}
