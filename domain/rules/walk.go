package rules

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

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

// Withheld replaces a body the rules could not read: never stored unread.
const Withheld = "[body withheld: the privacy rules could not read it]"

// walkMessage calls v with every value of m and writes back what it keeps.
// fieldsRead says, per side, whether a rule reads body fields: a body that
// looks like JSON but cannot be read within the bounds is then withheld
// (reported in withheld).
func walkMessage(m *domain.Message, v visit, fieldsRead func(side) bool) (withheld []string) {
	loc := location{kind: kindIP}
	if m.IPAddress != "" {
		if kept, remove := v(&loc, m.IPAddress); remove {
			m.IPAddress = ""
		} else {
			m.IPAddress = kept
		}
	}
	path, query, hasQuery := strings.Cut(m.Path, "?")
	loc = location{kind: kindPath}
	if kept, remove := v(&loc, path); remove {
		path = domain.Mask
	} else {
		path = kept
	}
	if hasQuery {
		if kept := walkQuery(query, location{kind: kindQuery}, v); kept != "" || query == "" {
			m.Path = path + "?" + kept
		} else {
			m.Path = path // every parameter removed: no "?" left over
		}
	} else {
		m.Path = path
	}
	for _, c := range []struct {
		side    side
		content *domain.Content
	}{{sideRequest, &m.Request}, {sideResponse, &m.Response}} {
		walkHeader(c.content.Header, c.side, v)
		if c.content.Body == "" {
			continue
		}
		body, ok := walkBody(c.content.Body, c.content.ContentType, c.side, v)
		if !ok && fieldsRead(c.side) {
			body = Withheld
			withheld = append(withheld, location{kind: kindBodyText, side: c.side}.String())
		}
		c.content.Body = body
	}
	return withheld
}

func walkHeader(h domain.Header, s side, v visit) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		loc := location{kind: kindHeader, side: s, name: strings.ToLower(name)}
		values := h[name]
		kept := values[:0:0]
		changed := false
		for _, value := range values {
			next, remove := v(&loc, value)
			changed = changed || remove || next != value
			if !remove {
				kept = append(kept, next)
			}
		}
		switch {
		case !changed:
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
// text. ok is false when it looks like JSON the walk cannot read.
func walkBody(body, contentType string, s side, v visit) (string, bool) {
	trimmed := strings.TrimLeft(body, " \t\r\n\ufeff")
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		if jsonbytes.Check(trimmed, maxJSONDepth, nil) != jsonbytes.Valid {
			text, _ := v(&location{kind: kindBodyText, side: s}, body)
			return text, false
		}
		out, changed, _ := walkJSON([]byte(trimmed), &location{kind: kindBody, side: s}, v, 0)
		if !changed {
			return body, true
		}
		return body[:len(body)-len(trimmed)] + string(out), true
	}
	if contentType == "application/x-www-form-urlencoded" {
		return walkQuery(body, location{kind: kindBody, side: s}, v), true
	}
	text, remove := v(&location{kind: kindBodyText, side: s}, body)
	if remove {
		return "", true
	}
	return text, true
}

// walkJSON visits the strings, numbers and booleans of a well-formed JSON
// value at loc, opening JSON held in strings up to maxEmbeddedJSON deep. It
// returns the value rewritten where anything changed (containers along the
// way rebuilt, the rest copied as sent), or removed.
func walkJSON(raw []byte, loc *location, v visit, embedded int) (out []byte, changed, removed bool) {
	switch raw[0] {
	case '{', '[':
		isObject := raw[0] == '{'
		type part struct{ key, value []byte }
		var parts []part
		i := 0
		add := func(key, value []byte, name string) {
			loc.path = append(loc.path, name)
			next, ch, rm := walkJSON(value, loc, v, embedded)
			loc.path = loc.path[:len(loc.path)-1]
			changed = changed || ch || rm
			if !rm {
				parts = append(parts, part{key, next})
			}
			i++
		}
		if isObject {
			for key, value := range jsonbytes.Members(raw, nil) {
				add(key, value, jsonbytes.Unquote(key))
			}
		} else {
			for value := range jsonbytes.Elements(raw, nil) {
				add(nil, value, strconv.Itoa(i))
			}
		}
		if !changed {
			return raw, false, false
		}
		buf := []byte{raw[0]}
		for j, p := range parts {
			if j > 0 {
				buf = append(buf, ',')
			}
			if isObject {
				buf = append(append(buf, p.key...), ':')
			}
			buf = append(buf, p.value...)
		}
		return append(buf, map[bool]byte{true: '}', false: ']'}[isObject]), true, false
	case 'n':
		return raw, false, false
	case '"':
		value := jsonbytes.Unquote(raw)
		if embedded < maxEmbeddedJSON && (strings.HasPrefix(value, "{") || strings.HasPrefix(value, "[")) &&
			jsonbytes.Check(value, maxJSONDepth, nil) == jsonbytes.Valid {
			inner, ch, rm := walkJSON([]byte(value), loc, v, embedded+1)
			if rm {
				return nil, true, true
			}
			if !ch {
				return raw, false, false
			}
			return jsonbytes.AppendString(nil, string(inner)), true, false
		}
		kept, remove := v(loc, value)
		if remove {
			return nil, true, true
		}
		if kept == value {
			return raw, false, false
		}
		return jsonbytes.AppendString(nil, kept), true, false
	}
	// A number or a boolean, matched as its text; a change makes it a string.
	value := string(raw)
	kept, remove := v(loc, value)
	if remove {
		return nil, true, true
	}
	if kept == value {
		return raw, false, false
	}
	return jsonbytes.AppendString(nil, kept), true, false
}
