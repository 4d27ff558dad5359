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
// The names and values of one object share one string, sized to them, and its
// values one slice: decoding allocates a few times per header object instead of
// four times per header, and a queued or stored message holds that many fewer
// objects. The values of masked names are decoded into a string of their own,
// which masking then drops, so the string a message keeps holds no secret and no
// room for one.
func (v validator) header(raw json.RawMessage, field string, fe *fieldErrors) Header {
	if isAbsent(raw) {
		return Header{}
	}
	if kindOf(raw) != kindObject {
		fe.add(field, "must be an object mapping header names to a string or an array of strings")
		return Header{}
	}
	// First the names and the values' types are checked, and the kept string sized.
	type entry struct {
		canonical   valueSpan // in names
		value       json.RawMessage
		masked      bool
		name        valueSpan // in the kept string
		first, last int       // the value spans, in the kept or the secret string
	}
	entries := make([]entry, 0, 32)
	names := make([]byte, 0, 512)
	keptSize := 0
	for key, value := range memberLiterals(raw, v.ends) {
		name := key[1 : len(key)-1]
		if plainPrefix(name) < len(name) { // escaped: decode it first
			name = []byte(unquote(key))
		}
		if !isToken(name) {
			fe.add(field, "has %q, which is not a valid header field name", name)
			continue
		}
		e := entry{canonical: valueSpan{start: len(names)}, value: value}
		names = appendCanonicalHeaderName(names, name)
		e.canonical.end = len(names)
		canonical := names[e.canonical.start:e.canonical.end]
		if !validHeaderValue(value, v.ends) {
			fe.add(field+"."+string(canonical), "must be a string or an array of strings")
			continue
		}
		keptSize += len(canonical)
		if e.masked = v.masked[string(canonical)]; !e.masked {
			keptSize += len(value) // decoding shrinks it, but for invalid UTF-8
		}
		entries = append(entries, e)
	}

	// Then each is decoded into the kept string, or a masked one's values into the
	// secret string.
	var kept, secret strings.Builder
	kept.Grow(keptSize)
	spans := make([]valueSpan, 0, 32)
	for i := range entries {
		e := &entries[i]
		e.name = valueSpan{kept.Len(), kept.Len() + e.canonical.end - e.canonical.start}
		kept.Write(names[e.canonical.start:e.canonical.end])
		to := &kept
		if e.masked {
			to = &secret
		}
		e.first = len(spans)
		spans = appendHeaderValues(to, spans, e.value, v.ends)
		e.last = len(spans)
	}
	keptText, secretText := kept.String(), secret.String()
	values := make([]string, len(spans))
	h := make(Header, len(entries))
	for _, e := range entries {
		text := keptText
		if e.masked {
			text = secretText
		}
		for i, at := range spans[e.first:e.last] {
			values[e.first+i] = text[at.start:at.end]
		}
		name := keptText[e.name.start:e.name.end]
		if existing, seen := h[name]; seen {
			h[name] = append(existing, values[e.first:e.last]...)
		} else {
			h[name] = values[e.first:e.last:e.last]
		}
	}
	return h
}

// validHeaderValue accepts a scalar or an array of scalars; null and objects are refused.
func validHeaderValue(raw json.RawMessage, ends valueEnds) bool {
	if kindOf(raw) != kindArray {
		return isHeaderScalar(raw)
	}
	for item := range elements(raw, ends) {
		if !isHeaderScalar(item) {
			return false
		}
	}
	return true
}

func isHeaderScalar(raw json.RawMessage) bool {
	switch kindOf(raw) {
	case kindString, kindNumber, kindBool:
		return true
	}
	return false
}

// appendHeaderValues writes the valid header value raw to text, a string's
// decoded and a number's or boolean's as its JSON text, and appends where each
// of its values is.
func appendHeaderValues(text *strings.Builder, spans []valueSpan, raw json.RawMessage, ends valueEnds) []valueSpan {
	if kindOf(raw) != kindArray {
		return appendHeaderScalar(text, spans, raw)
	}
	for item := range elements(raw, ends) {
		spans = appendHeaderScalar(text, spans, item)
	}
	return spans
}

func appendHeaderScalar(text *strings.Builder, spans []valueSpan, raw json.RawMessage) []valueSpan {
	start := text.Len()
	if kindOf(raw) == kindString {
		writeUnquoted(text, raw[1:len(raw)-1])
	} else {
		text.Write(raw)
	}
	return append(spans, valueSpan{start, text.Len()})
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
