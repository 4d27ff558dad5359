package rules

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// visit is called with each value of an exchange and where it is. It returns
// the value to keep (the same when nothing changes), or remove to take the
// value out (a header value, a query parameter, a body field).
type visit func(l *location, value string) (kept string, remove bool)

// Bounds of reading a body for the rules.
const (
	// maxJSONDepth is as deep as a body is walked; a deeper one is withheld
	// when a rule reads its fields.
	maxJSONDepth = domain.MaxNesting
	// maxEmbeddedJSON is how many times JSON held in a JSON string is opened.
	maxEmbeddedJSON = 3
)

// formType is the content type whose body is walked as a form.
const formType = "application/x-www-form-urlencoded"

// Withheld replaces a body the rules could not read: never stored unread.
const Withheld = "[body withheld: the privacy rules could not read it]"

// walkMessage calls v with every value of m and writes back what it keeps:
// a walk whose visit changes nothing writes nothing. fieldsRead says, per
// side, whether a rule reads body fields: a body that looks like JSON but
// cannot be read within the bounds is then withheld (reported in withheld).
func walkMessage(m *domain.Message, v visit, fieldsRead func(side) bool) (withheld []string) {
	loc := location{kind: kindIP}
	if m.IPAddress != "" {
		if kept, remove := v(&loc, m.IPAddress); remove {
			m.IPAddress = ""
		} else if kept != m.IPAddress {
			m.IPAddress = kept
		}
	}
	path, query, hasQuery := strings.Cut(m.Path, "?")
	loc = location{kind: kindPath}
	pathKept, remove := v(&loc, path)
	if remove {
		pathKept = domain.Mask
	}
	if hasQuery {
		switch kept := walkQuery(query, location{kind: kindQuery}, v); {
		case pathKept == path && kept == query:
		case kept != "" || query == "":
			m.Path = pathKept + "?" + kept
		default:
			m.Path = pathKept // every parameter removed: no "?" left over
		}
	} else if pathKept != path {
		m.Path = pathKept
	}
	for _, c := range []struct {
		side    side
		content *domain.Content
	}{{sideRequest, &m.Request}, {sideResponse, &m.Response}} {
		walkHeader(c.content.Header, c.side, v)
		if c.content.Body == "" {
			continue
		}
		body, ok := walkBody(c.content, c.side, v)
		if !ok && fieldsRead(c.side) {
			body = Withheld
			withheld = append(withheld, location{kind: kindBodyText, side: c.side}.String())
		}
		if body != c.content.Body {
			c.content.Body = body
		}
	}
	return withheld
}

func walkHeader(h domain.Header, s side, v visit) {
	var onStack [32]string
	names := onStack[:0]
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	loc := location{kind: kindHeader, side: s} // one for every name: the visit's pointer makes it escape
	for _, name := range names {
		loc.name = name
		values := h[name]
		var kept []string // from the first change on
		for i, value := range values {
			next, remove := v(&loc, value)
			if kept == nil && (remove || next != value) {
				kept = append(make([]string, 0, len(values)), values[:i]...)
			}
			if kept != nil && !remove {
				kept = append(kept, next)
			}
		}
		switch {
		case kept == nil:
		case len(kept) == 0:
			delete(h, name)
		default:
			h[name] = kept
		}
	}
}

// walkQuery visits the values of a query string or form body, decoded, and
// returns it with what changed encoded again; pairs are kept in their order.
func walkQuery(query string, loc location, v visit) string {
	pairs := strings.Split(query, "&")
	out := pairs[:0]
	changed := false
	for _, pair := range pairs {
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			key = rawKey
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			value = rawValue
		}
		if loc.kind == kindBody {
			loc.path = []string{key}
		} else {
			loc.name = key
		}
		kept, remove := v(&loc, value)
		switch {
		case remove:
			changed = true
			continue
		case kept != value:
			changed = true
			pair = rawKey + "=" + url.QueryEscape(kept)
		}
		out = append(out, pair)
	}
	if !changed {
		return query
	}
	return strings.Join(out, "&")
}

// walkBody visits a body's fields (JSON, or a form) or, failing that, its
// text, and returns the body rewritten. ok is false when it looks like JSON
// the walk cannot read. Validation's verdict that the body is JSON
// (domain.Content.BodyIsJSON) spares checking it again.
func walkBody(content *domain.Content, s side, v visit) (string, bool) {
	body, contentType := content.Body, content.ContentType
	trimmed := strings.TrimLeft(body, " \t\r\n\ufeff")
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		if !content.BodyIsJSON() && jsonbytes.Check(trimmed, maxJSONDepth, nil) != jsonbytes.Valid {
			text, _ := v(&location{kind: kindBodyText, side: s}, body)
			return text, false
		}
		out, changed := walkJSON(trimmed, &location{kind: kindBody, side: s}, v, 0)
		if !changed {
			return body, true
		}
		return body[:len(body)-len(trimmed)] + out, true
	}
	if contentType == formType {
		return walkQuery(body, location{kind: kindBody, side: s}, v), true
	}
	text, remove := v(&location{kind: kindBodyText, side: s}, body)
	if remove {
		return "", true
	}
	return text, true
}

// walkJSON visits the strings, numbers and booleans of src, a well-formed
// JSON object or array, at loc, opening JSON held in strings up to
// maxEmbeddedJSON deep, and returns src rewritten where anything changed.
func walkJSON(src string, loc *location, v visit, embedded int) (string, bool) {
	w := jsonWalk{src: src, loc: loc, visit: v, embedded: embedded,
		plain: strings.IndexByte(src, '\\') < 0 && utf8.ValidString(src)}
	w.value(0)
	if !w.changed {
		return src, false
	}
	w.out.WriteString(src[w.copied:])
	return w.out.String(), true
}

// jsonWalk is one pass over a JSON text that copies it only from its first
// change on: out holds the rewritten src[:copied] once changed. A Builder,
// whose room is not zeroed first, as a make'd slice's is.
// Values are read as substrings of src, so that a value without escapes
// costs no copy.
type jsonWalk struct {
	src      string
	loc      *location
	visit    visit
	embedded int
	out      strings.Builder
	changed  bool
	copied   int
	quoted   []byte // a changed value as a JSON string
	// plain says src holds no escape and is valid UTF-8: each string is
	// then its literal without the quotes, looked at once for the whole.
	plain bool
}

// unquote is the value of the string literal lit of src.
func (w *jsonWalk) unquote(lit string) string {
	if w.plain {
		return lit[1 : len(lit)-1]
	}
	return unquote(lit)
}

// replace puts text in place of src[start:end].
func (w *jsonWalk) replace(start, end int, text string) {
	if !w.changed {
		w.changed = true
		w.out.Grow(len(w.src) + len(text))
	}
	w.out.WriteString(w.src[w.copied:start])
	w.out.WriteString(text)
	w.copied = end
}

// replaceQuoted puts value, as a JSON string, in place of src[start:end].
func (w *jsonWalk) replaceQuoted(start, end int, value string) {
	w.quoted = jsonbytes.AppendString(w.quoted[:0], value)
	w.replace(start, end, "")
	w.out.Write(w.quoted)
}

// skipTo drops src[copied:end] (a removed member and a separator).
func (w *jsonWalk) skipTo(start, end int) { w.replace(start, end, "") }

// value walks the value at src[i] and returns where it ends and whether the
// visit removed it.
func (w *jsonWalk) value(i int) (end int, removed bool) {
	switch c := w.src[i]; c {
	case '{', '[':
		return w.container(i), false
	case 'n':
		return i + len("null"), false
	case '"':
		end = jsonbytes.StringEnd(w.src, i)
		return end, w.text(i, end, w.unquote(w.src[i:end]), true)
	}
	end = jsonbytes.ValueEnd(w.src, i)
	return end, w.text(i, end, w.src[i:end], false) // a number or a boolean, matched as its text
}

// text visits the scalar src[start:end] whose value is value, and reports
// whether it goes; a changed value is written as a string.
func (w *jsonWalk) text(start, end int, value string, quoted bool) bool {
	if quoted && w.embedded < maxEmbeddedJSON && (strings.HasPrefix(value, "{") || strings.HasPrefix(value, "[")) &&
		jsonbytes.Check(value, maxJSONDepth, nil) == jsonbytes.Valid {
		if inner, changed := walkJSON(value, w.loc, w.visit, w.embedded+1); changed {
			w.replaceQuoted(start, end, inner)
		}
		return false
	}
	kept, remove := w.visit(w.loc, value)
	switch {
	case remove:
		return true
	case kept != value:
		w.replaceQuoted(start, end, kept)
	}
	return false
}

// container walks the object or array at src[i] and returns where it ends.
// A removed member goes with the separator before it, or, for the first
// member kept, with the one after it.
func (w *jsonWalk) container(i int) int {
	object := w.src[i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	depth := len(w.loc.path)
	defer func() { w.loc.path = w.loc.path[:depth] }()
	kept := false       // a member is kept: a later removal takes the separator before it
	prevEnd := -1       // the end of the last member kept
	dropSeparator := -1 // the end of a removed first member: what follows it up to the next goes too
	j := jsonbytes.SkipSpace(w.src, i+1)
	for index := 0; w.src[j] != closing; index++ {
		start := j
		w.loc.path = w.loc.path[:depth]
		if object {
			keyEnd := jsonbytes.StringEnd(w.src, j)
			w.loc.path = append(w.loc.path, w.unquote(w.src[j:keyEnd]))
			j = jsonbytes.SkipSpace(w.src, jsonbytes.SkipSpace(w.src, keyEnd)+1) // past the colon
		} else {
			w.loc.path = append(w.loc.path, strconv.Itoa(index))
		}
		if dropSeparator >= 0 {
			w.skipTo(dropSeparator, start)
			dropSeparator = -1
		}
		end, removed := w.value(j)
		switch {
		case !removed:
			kept, prevEnd = true, end
		case kept:
			w.skipTo(prevEnd, end)
			prevEnd = end // what the next removal drops starts after this one's
		default:
			w.skipTo(start, end)
			dropSeparator = end
		}
		if j = jsonbytes.SkipSpace(w.src, end); w.src[j] == ',' {
			j = jsonbytes.SkipSpace(w.src, j+1)
		}
	}
	return j + 1
}

// unquote is the value of the well-formed string literal lit: lit without
// its quotes, uncopied, when it holds no escape.
func unquote(lit string) string {
	if s := lit[1 : len(lit)-1]; strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s) {
		return s
	}
	return jsonbytes.Unquote([]byte(lit))
}
