package domain

import (
	"strings"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// header validates a submitted header object. Names must be tokens; a value is
// a string or an array of strings, numbers and booleans taken as their JSON
// text. Names are canonicalised and the values of colliding names merged in the
// order sent.
//
// The names and values of one object share one string, and its values one
// slice: a header object costs a few allocations instead of four per header,
// and a queued or stored message holds that many fewer objects. The values of
// masked names are not copied: each is Mask at once, so no secret is kept. Only
// a masked Content-Type is copied, into a string of its own that masking drops
// once contentType has read it.
func (v validator) header(d DraftHeader, field string, fe *FieldErrors) Header {
	if d.Kind == jsonbytes.Absent || d.Kind == jsonbytes.Null {
		return Header{}
	}
	if d.Kind != jsonbytes.Object {
		fe.Add(field, "must be an object mapping header names to a string or an array of strings")
		return Header{}
	}
	// First the names are checked and written, canonical, to the scratch buffer,
	// and the values' types checked; then the values kept are written after the
	// names, and a masked Content-Type's after those.
	type entry struct {
		name        jsonbytes.Span // in text
		values      []Value
		masked      bool
		first, last int // its values' spans in text
	}
	entries := make([]entry, 0, 32)
	text := v.scratch.header[:0]
	for _, f := range d.Fields {
		if !IsToken(f.Name) {
			fe.Add(field, "has %q, which is not a valid header field name", f.Name)
			continue
		}
		e := entry{name: jsonbytes.Span{Start: len(text)}, values: f.Values}
		text = appendCanonicalHeaderName(text, f.Name)
		e.name.End = len(text)
		canonical := text[e.name.Start:e.name.End]
		if !validHeaderValue(f) {
			fe.Add(field+"."+string(canonical), "must be a string or an array of strings")
			text = text[:e.name.Start]
			continue
		}
		e.masked = masks(v.masked, canonical)
		entries = append(entries, e)
	}
	spans := make([]jsonbytes.Span, 0, 32)
	writeValues := func(masked bool) {
		for i := range entries {
			e := &entries[i]
			if e.masked != masked {
				continue
			}
			e.first = len(spans)
			writes := !masked || string(text[e.name.Start:e.name.End]) == "Content-Type"
			for _, value := range e.values {
				if !writes {
					spans = append(spans, maskSpan)
					continue
				}
				start := len(text)
				text = append(text, value.Text...)
				spans = append(spans, jsonbytes.Span{Start: start, End: len(text)})
			}
			e.last = len(spans)
		}
	}
	writeValues(false)
	keptEnd := len(text)
	writeValues(true)
	v.scratch.header = text
	kept, secret := string(text[:keptEnd]), string(text[keptEnd:])

	values := make([]string, len(spans))
	h := make(Header, len(entries))
	for _, e := range entries {
		from, offset := kept, 0
		if e.masked {
			from, offset = secret, keptEnd
		}
		for i, at := range spans[e.first:e.last] {
			if at == maskSpan {
				values[e.first+i] = Mask
			} else {
				values[e.first+i] = from[at.Start-offset : at.End-offset]
			}
		}
		name := kept[e.name.Start:e.name.End]
		if existing, seen := h[name]; seen {
			h[name] = append(existing, values[e.first:e.last]...)
		} else {
			h[name] = values[e.first:e.last:e.last]
		}
	}
	return h
}

// maskSpan stands for a value that is masked without being copied.
var maskSpan = jsonbytes.Span{Start: -1, End: -1}

// validHeaderValue accepts a scalar or an array of scalars; null and objects are refused.
func validHeaderValue(f DraftHeaderField) bool {
	if !f.Array && len(f.Values) != 1 {
		return false
	}
	for _, value := range f.Values {
		switch value.Kind {
		case jsonbytes.String, jsonbytes.Number, jsonbytes.Bool:
		default:
			return false
		}
	}
	return true
}

// maskHeader replaces every value of the masked names so secrets are never stored.
func maskHeader(h Header, masked map[string]bool) {
	for name, values := range h {
		if !masks(masked, name) {
			continue
		}
		for i := range values {
			values[i] = Mask
		}
	}
}

// HeaderMaskKey is the form in which a header name is compared with the masked
// ones: canonical, with '_' read as '-', since CGI, Rack, Django and PHP hand a
// request's X_Api_Key to the application as its X-Api-Key.
func HeaderMaskKey(name string) string {
	var buf [64]byte
	if key := appendHeaderMaskKey(buf[:0], name); string(key) != name {
		return string(key)
	}
	return name
}

func appendHeaderMaskKey[T string | []byte](dst []byte, name T) []byte {
	start := len(dst)
	for i := range len(name) {
		if c := name[i]; c == '_' {
			dst = append(dst, '-')
		} else {
			dst = append(dst, c)
		}
	}
	key := dst[start:]
	for i := range key {
		key[i] = canonicalHeaderByte(key, i) // reads key[i-1] only to find a '-'
	}
	return dst
}

// masks reports whether a canonical header name is masked, masked holding
// HeaderMaskKey's forms. Only a name with '_' differs from its key.
func masks[T string | []byte](masked map[string]bool, canonical T) bool {
	for i := range len(canonical) {
		if canonical[i] == '_' {
			var buf [64]byte
			return masked[string(appendHeaderMaskKey(buf[:0], canonical))]
		}
	}
	return masked[string(canonical)]
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
// not JSON. The HTTP adapter plugs in net/http's sniffer; see Policy.Sniff. It
// MUST NOT modify or retain body: the decoder reuses that buffer.
type Sniffer func(body []byte) string

// plainSniff is the fallback when no Sniffer is configured.
func plainSniff(body []byte) string {
	if utf8.Valid(body) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// contentType is the media type of the Content-Type header without parameters;
// without the header it is application/json for a JSON body (after byte order
// marks, if any), "" for an empty body, and the sniffed media type otherwise.
func contentType(h Header, body []byte, sniff Sniffer) string {
	if declared, ok := declaredType(h); ok {
		return declared
	}
	switch {
	case len(body) == 0:
		return ""
	case jsonbytes.IsValid(body[byteOrderMarks(body):]):
		return "application/json"
	default:
		return mediaType(sniff(body))
	}
}

// declaredType is the media type of a Content-Type header, if h has one.
func declaredType(h Header) (string, bool) {
	if values := h["Content-Type"]; len(values) > 0 && strings.TrimSpace(values[0]) != "" {
		return mediaType(values[0]), true
	}
	return "", false
}

// typeAndRedact returns contentType(h, body, sniff) and redactBody(body, that
// type, fields), with redactBody's isJSON. A body without a Content-Type is
// checked as JSON once for both: the pass that finds it valid also finds what
// to mask.
func typeAndRedact(h Header, body []byte, sniff Sniffer, fields fieldSet) (contentType, redacted string, isJSON bool) {
	if declared, ok := declaredType(h); ok {
		redacted, isJSON = redactBody(body, declared, fields)
		return declared, redacted, isJSON
	}
	if len(body) == 0 {
		return "", "", false
	}
	marks := byteOrderMarks(body)
	if redacted, valid, isJSON := redactValidJSON(body[marks:], fields); valid {
		// JSON is never form-shaped (a form's pairs hold '=', which JSON keeps
		// inside strings), so this is redactBody's JSON path.
		return "application/json", string(body[:marks]) + redacted, isJSON
	}
	sniffed := mediaType(sniff(body))
	redacted, isJSON = redactBody(body, sniffed, fields)
	return sniffed, redacted, isJSON
}

// mediaType drops parameters and lower-cases: the media type mime.ParseMediaType
// returns when it parses value, which is its part before ';', and that part for
// any other value. Parsing the parameters, which are dropped, would cost three
// allocations per body.
func mediaType(value string) string {
	mt, _, _ := strings.Cut(value, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
