package domain

import (
	"encoding/json"
	"mime"
	"strings"
	"unicode/utf8"
)

// header decodes a submitted header object. Keys are header field names; a value is
// a string or an array of strings, numbers and booleans become their JSON text.
// Names are canonicalised and the values of colliding names merged in the order sent,
// which is why the object is walked member by member rather than read into a Go map.
//
// The names and values of one object share one string, and its values one slice:
// decoding allocates a few times per header object instead of four times per
// header, and a queued or stored message holds that many fewer objects. The values
// of masked names are decoded apart, so that the shared string never holds a secret.
func (v validator) header(raw json.RawMessage, field string, fe *fieldErrors) Header {
	if isAbsent(raw) {
		return Header{}
	}
	if kindOf(raw) != kindObject {
		fe.add(field, "must be an object mapping header names to a string or an array of strings")
		return Header{}
	}
	var text strings.Builder
	text.Grow(len(raw))
	type entry struct {
		name        valueSpan
		first, last int      // its values in values, if not masked
		secrets     []string // its values, if masked
	}
	entries := make([]entry, 0, 32)
	values := make([]valueSpan, 0, 32)
	var nameBuf [64]byte
	for key, value := range memberLiterals(raw, v.ends) {
		name := key[1 : len(key)-1]
		if plainPrefix(name) < len(name) { // escaped: decode it first
			name = []byte(unquote(key))
		}
		if !isToken(name) {
			fe.add(field, "has %q, which is not a valid header field name", name)
			continue
		}
		canonical := appendCanonicalHeaderName(nameBuf[:0], name)
		f := entry{first: len(values)}
		var ok bool
		if v.masked[string(canonical)] {
			f.secrets, ok = headerValues(value, v.ends)
		} else {
			values, ok = appendHeaderValues(&text, values, value, v.ends)
		}
		if !ok {
			fe.add(field+"."+string(canonical), "must be a string or an array of strings")
			values = values[:f.first]
			continue
		}
		f.last = len(values)
		f.name = valueSpan{text.Len(), text.Len() + len(canonical)}
		text.Write(canonical)
		entries = append(entries, f)
	}
	shared := text.String()
	all := make([]string, len(values))
	for i, at := range values {
		all[i] = shared[at.start:at.end]
	}
	h := make(Header, len(entries))
	for _, f := range entries {
		name := shared[f.name.start:f.name.end]
		vals := f.secrets
		if vals == nil {
			vals = all[f.first:f.last:f.last]
		}
		if existing, seen := h[name]; seen {
			h[name] = append(existing, vals...)
		} else {
			h[name] = vals
		}
	}
	return h
}

// appendHeaderValues writes a scalar or the scalars of an array to text and
// appends where each one is; null and objects are refused.
func appendHeaderValues(text *strings.Builder, spans []valueSpan, raw json.RawMessage, ends valueEnds) ([]valueSpan, bool) {
	if kindOf(raw) != kindArray {
		return appendHeaderScalar(text, spans, raw)
	}
	for item := range elements(raw, ends) {
		var ok bool
		if spans, ok = appendHeaderScalar(text, spans, item); !ok {
			return spans, false
		}
	}
	return spans, true
}

func appendHeaderScalar(text *strings.Builder, spans []valueSpan, raw json.RawMessage) ([]valueSpan, bool) {
	start := text.Len()
	switch kindOf(raw) {
	case kindString:
		s := raw[1 : len(raw)-1]
		plain := plainPrefix(s)
		text.Write(s[:plain])
		writeUnquoted(text, s[plain:])
	case kindNumber, kindBool:
		text.Write(raw)
	default:
		return spans, false
	}
	return append(spans, valueSpan{start, text.Len()}), true
}

// headerValues accepts a scalar or an array of scalars; null and objects are refused.
func headerValues(raw json.RawMessage, ends valueEnds) ([]string, bool) {
	if kindOf(raw) != kindArray {
		s, ok := headerScalar(raw)
		return []string{s}, ok
	}
	values := make([]string, 0, 1)
	for item := range elements(raw, ends) {
		s, ok := headerScalar(item)
		if !ok {
			return nil, false
		}
		values = append(values, s)
	}
	return values, true
}

func headerScalar(raw json.RawMessage) (string, bool) {
	switch kindOf(raw) {
	case kindString:
		return unquote(raw), true
	case kindNumber, kindBool:
		return string(raw), true
	}
	return "", false
}

// maskHeader replaces every value of the masked names so secrets are never stored.
func maskHeader(h Header, masked map[string]bool) {
	for name, values := range h {
		if !masked[name] {
			continue
		}
		for i := range values {
			values[i] = Mask
		}
	}
}

// CanonicalHeaderName writes a header token the way net/textproto does
// (content-type → Content-Type); the domain does not import network packages.
func CanonicalHeaderName(name string) string {
	for i := range len(name) {
		if canonicalHeaderByte(name, i) != name[i] {
			return string(appendCanonicalHeaderName(make([]byte, 0, len(name)), name))
		}
	}
	return name // already canonical, as configured names usually are
}

func appendCanonicalHeaderName[T string | []byte](dst []byte, name T) []byte {
	for i := range len(name) {
		dst = append(dst, canonicalHeaderByte(name, i))
	}
	return dst
}

// canonicalHeaderByte is name[i] upper-cased at the start of a word, lower-cased elsewhere.
func canonicalHeaderByte[T string | []byte](name T, i int) byte {
	c := name[i]
	switch upper := i == 0 || name[i-1] == '-'; {
	case upper && 'a' <= c && c <= 'z':
		return c - 'a' + 'A'
	case !upper && 'A' <= c && c <= 'Z':
		return c - 'A' + 'a'
	}
	return c
}

// Sniffer guesses the media type of a body that has no Content-Type header and is
// not JSON. The HTTP adapter plugs in net/http's sniffer; see Policy.Sniff.
type Sniffer func(body []byte) string

// plainSniff is the fallback when no Sniffer is configured.
func plainSniff(body []byte) string {
	if utf8.Valid(body) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// contentType is the media type of the Content-Type header without parameters;
// without the header it is application/json for a JSON body, "" for an empty body,
// and the sniffed media type otherwise.
func contentType(h Header, body string, sniff Sniffer) string {
	if values := h["Content-Type"]; len(values) > 0 && strings.TrimSpace(values[0]) != "" {
		return mediaType(values[0])
	}
	switch {
	case body == "":
		return ""
	case validJSON(body):
		return "application/json"
	default:
		return mediaType(sniff([]byte(body)))
	}
}

// mediaType drops parameters and lower-cases; a value mime cannot parse is cut at ';'.
func mediaType(value string) string {
	if mt, _, err := mime.ParseMediaType(value); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(value, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
