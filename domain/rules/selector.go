package rules

import (
	"fmt"
	"strings"
)

// kind is what a value of an exchange is.
type kind uint8

const (
	kindIP kind = iota
	kindPath
	kindQuery
	kindHeader
	kindBody     // a field of a JSON or form body
	kindBodyText // a body read as one text
)

// side is which half of the exchange a header or body is in.
type side uint8

const (
	sideBoth side = iota
	sideRequest
	sideResponse
)

// location is where a value is: what a selector is matched against, and what
// a change names ("request.body.user.email").
type location struct {
	kind kind
	side side
	name string   // a query parameter's or header's name (a header's in any case)
	path []string // a body field's keys and indexes
}

func (l location) String() string {
	prefix := ""
	switch l.side {
	case sideRequest:
		prefix = "request."
	case sideResponse:
		prefix = "response."
	}
	switch l.kind {
	case kindIP:
		return "ip_address"
	case kindPath:
		return "path"
	case kindQuery:
		return "query." + l.name
	case kindHeader:
		return prefix + "headers." + strings.ToLower(l.name)
	case kindBodyText:
		return prefix + "body"
	}
	n := len(prefix) + len("body")
	for _, key := range l.path {
		n += 1 + len(key)
	}
	var b strings.Builder // one allocation: a message changed is changed in several places
	b.Grow(n)
	b.WriteString(prefix)
	b.WriteString("body")
	for _, key := range l.path {
		b.WriteByte('.')
		b.WriteString(key)
	}
	return b.String()
}

// selector picks values of an exchange. Its grammar, a dotted path:
//
//	**                          every value
//	ip_address | path
//	query[.NAME|.*]             query parameters, decoded
//	[request.|response.]headers[.NAME|.*]   by name, ignoring case
//	[request.|response.]body[.KEY|.*|.**]...  fields of JSON and form bodies;
//	                            body alone: every value of the body, or its text
//
// A key with dots or spaces is quoted: body."a.b".
type selector struct {
	every bool
	kind  kind
	side  side
	name  string   // query or header name; "" or "*" for any
	path  []string // body path, with * and **
}

func parseSelector(text string) (selector, error) {
	parts, err := splitSelector(text)
	if err != nil {
		return selector{}, err
	}
	if len(parts) == 1 && parts[0] == "**" {
		return selector{every: true}, nil
	}
	s := selector{}
	switch parts[0] {
	case "request":
		s.side, parts = sideRequest, parts[1:]
	case "response":
		s.side, parts = sideResponse, parts[1:]
	}
	if len(parts) == 0 {
		return selector{}, fmt.Errorf("names a side but no headers or body")
	}
	first, rest := parts[0], parts[1:]
	switch {
	case first == "ip_address" && s.side == sideBoth && len(rest) == 0:
		s.kind = kindIP
	case first == "path" && s.side == sideBoth && len(rest) == 0:
		s.kind = kindPath
	case first == "query" && s.side == sideBoth && len(rest) <= 1:
		s.kind = kindQuery
		if len(rest) == 1 {
			s.name = rest[0]
		}
	case first == "headers" && len(rest) <= 1:
		s.kind = kindHeader
		if len(rest) == 1 {
			s.name = strings.ToLower(rest[0])
		}
	case first == "body":
		s.kind, s.path = kindBody, rest
	default:
		return selector{}, fmt.Errorf("must be **, ip_address, path, query[.name], [request.|response.]headers[.name] or [request.|response.]body[.path]")
	}
	return s, nil
}

// splitSelector splits at dots, keeping quoted keys whole.
func splitSelector(text string) ([]string, error) {
	if text == "" || len(text) > 512 {
		return nil, fmt.Errorf("must be 1 to 512 bytes")
	}
	var parts []string
	for text != "" {
		var part string
		if text[0] == '"' {
			end := strings.IndexByte(text[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("has an unclosed quote")
			}
			part, text = text[1:end+1], text[end+2:]
		} else {
			end := strings.IndexByte(text, '.')
			if end < 0 {
				end = len(text)
			}
			part, text = text[:end], text[end:]
		}
		if part == "" {
			return nil, fmt.Errorf("has an empty part")
		}
		parts = append(parts, part)
		if text != "" {
			if text[0] != '.' || len(text) == 1 {
				return nil, fmt.Errorf("must separate its parts with single dots")
			}
			text = text[1:]
		}
	}
	return parts, nil
}

// matches reports whether the selector picks the value at l.
func (s *selector) matches(l *location) bool {
	if s.every {
		return true
	}
	if s.side != sideBoth && s.side != l.side {
		return false
	}
	switch s.kind {
	case kindQuery:
		return l.kind == s.kind && (s.name == "" || s.name == "*" || s.name == l.name)
	case kindHeader:
		return l.kind == s.kind && (s.name == "" || s.name == "*" || strings.EqualFold(s.name, l.name))
	case kindBody:
		switch l.kind {
		case kindBodyText:
			return len(s.path) == 0 || len(s.path) == 1 && s.path[0] == "**"
		case kindBody:
			return len(s.path) == 0 || pathMatches(s.path, l.path)
		}
		return false
	}
	return l.kind == s.kind
}

// class is the kind of place a location is: a rule is tried on a value only
// when one of its selectors may pick that kind of place (reach).
type class uint8

const (
	classIP class = iota
	classPath
	classQuery
	classRequestHeader
	classResponseHeader
	classRequestBody
	classResponseBody
	classRequestText
	classResponseText
	classes // how many there are
)

// class is l's class.
func (l *location) class() class {
	pick := func(request, response class) class {
		if l.side == sideResponse {
			return response
		}
		return request
	}
	switch l.kind {
	case kindIP:
		return classIP
	case kindPath:
		return classPath
	case kindQuery:
		return classQuery
	case kindHeader:
		return pick(classRequestHeader, classResponseHeader)
	case kindBody:
		return pick(classRequestBody, classResponseBody)
	}
	return pick(classRequestText, classResponseText)
}

// reach is the set of classes the selector may pick (bit c for class c): a
// superset of where matches holds.
func (s *selector) reach() uint16 {
	if s.every {
		return 1<<classes - 1
	}
	pick := func(request, response class) uint16 {
		switch s.side {
		case sideRequest:
			return 1 << request
		case sideResponse:
			return 1 << response
		}
		return 1<<request | 1<<response
	}
	switch s.kind {
	case kindIP:
		return 1 << classIP
	case kindPath:
		return 1 << classPath
	case kindQuery:
		return 1 << classQuery
	case kindHeader:
		return pick(classRequestHeader, classResponseHeader)
	case kindBody:
		r := pick(classRequestBody, classResponseBody)
		if len(s.path) == 0 || len(s.path) == 1 && s.path[0] == "**" {
			r |= pick(classRequestText, classResponseText)
		}
		return r
	}
	return 0
}

// key is the one key a value must have for the selector to pick it (a
// header's or query parameter's name, a body field's last key), if it names
// one; location.key is that key of a value.
func (s *selector) key() (string, bool) {
	switch {
	case s.every:
	case s.kind == kindHeader || s.kind == kindQuery:
		return s.name, s.name != "" && s.name != "*"
	case s.kind == kindBody && len(s.path) > 0:
		last := s.path[len(s.path)-1]
		return last, last != "*" && last != "**"
	}
	return "", false
}

// key is the location's key, as selector.key names it.
func (l *location) key() string {
	switch {
	case l.kind == kindHeader || l.kind == kindQuery:
		return l.name
	case l.kind == kindBody && len(l.path) > 0:
		return l.path[len(l.path)-1]
	}
	return ""
}

// readsFields reports whether the selector needs a body's fields, not its text.
func (s *selector) readsFields() bool {
	return !s.every && s.kind == kindBody && len(s.path) > 0 && !(len(s.path) == 1 && s.path[0] == "**")
}

// pathMatches matches a body path against a pattern of keys, * (one key or
// index) and ** (any number of them).
func pathMatches(pattern, path []string) bool {
	for len(pattern) > 0 {
		if pattern[0] == "**" {
			for i := 0; i <= len(path); i++ {
				if pathMatches(pattern[1:], path[i:]) {
					return true
				}
			}
			return false
		}
		if len(path) == 0 || pattern[0] != "*" && pattern[0] != path[0] {
			return false
		}
		pattern, path = pattern[1:], path[1:]
	}
	return len(path) == 0
}
