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
func (v validator) header(raw json.RawMessage, field string, fe *fieldErrors) Header {
	h := Header{}
	if isAbsent(raw) {
		return h
	}
	if kindOf(raw) != kindObject {
		fe.add(field, "must be an object mapping header names to a string or an array of strings")
		return h
	}
	for name, value := range members(raw, v.ends) {
		if !isToken(name) {
			fe.add(field, "has %q, which is not a valid header field name", name)
			continue
		}
		canonical := CanonicalHeaderName(name)
		values, ok := headerValues(value, v.ends)
		if !ok {
			fe.add(field+"."+canonical, "must be a string or an array of strings")
			continue
		}
		if existing, seen := h[canonical]; seen {
			h[canonical] = append(existing, values...)
		} else {
			h[canonical] = values
		}
	}
	return h
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
	b := []byte(name)
	upper := true
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
		upper = c == '-'
	}
	return string(b)
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
