package domain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the q search parameter.
const (
	// MaxSearchLength is the longest q, in characters.
	MaxSearchLength = 200
	// SearchedBodyBytes is how much of each body a store must search; it may
	// search more.
	SearchedBodyBytes = 64 << 10
)

// checkSearch validates q: 1 to MaxSearchLength characters holding at least one
// letter or digit. A q of punctuation alone has no word for a word index to
// look up, so the contract's "text" is read as needing one (docs/contract.md).
func checkSearch(q string) string {
	if utf8.RuneCountInString(q) > MaxSearchLength {
		return "must be at most 200 characters"
	}
	if strings.IndexFunc(q, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return "must contain at least one letter or digit"
	}
	return ""
}

// SearchedTexts calls yield with each text of m that q searches: the path
// (query string included), the request and response bodies, and every header
// value of both sides, never a header name. It stops when yield returns false.
func SearchedTexts(m Message, yield func(string) bool) {
	if !yield(m.Path) || !yield(m.Request.Body) || !yield(m.Response.Body) {
		return
	}
	for _, h := range []Header{m.Request.Header, m.Response.Header} {
		for _, values := range h {
			for _, v := range values {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// Search is a compiled q: a case-insensitive substring search, which meets
// every rule of the contract (any occurrence bounded by words is a substring;
// no substring means no match). It is the memory store's search and the
// reference the conformance suite states its examples against.
type Search struct {
	folded string // q in lower case
	ascii  bool
	// For an ASCII q: the byte of folded the scan looks for first (the rarest
	// by byteRank), its offset in folded, and its upper-case form.
	anchor, anchorUpper byte
	anchorAt            int
}

// NewSearch compiles q; the zero Search (q "") matches everything.
func NewSearch(q string) Search {
	s := Search{folded: strings.ToLower(q), ascii: true}
	for i := 0; i < len(q); i++ {
		if q[i] >= utf8.RuneSelf {
			s.ascii = false
			return s
		}
	}
	s.folded = asciiLower(q)
	for i := 0; i < len(s.folded); i++ {
		if byteRank(s.folded[i]) < byteRank(s.folded[s.anchorAt]) {
			s.anchorAt = i
		}
	}
	if len(s.folded) > 0 {
		s.anchor = s.folded[s.anchorAt]
		s.anchorUpper = asciiUpperByte(s.anchor)
	}
	return s
}

// Matches reports whether m holds q in one of its searched texts.
func (s Search) Matches(m Message) bool {
	if s.folded == "" {
		return true
	}
	found := false
	SearchedTexts(m, func(text string) bool {
		found = s.In(text)
		return !found
	})
	return found
}

// In reports whether text holds q, ignoring case.
func (s Search) In(text string) bool {
	if s.folded == "" {
		return true
	}
	if !s.ascii {
		return strings.Contains(strings.ToLower(text), s.folded)
	}
	n := len(s.folded)
	lower, upper := anchorScan{c: s.anchor}, anchorScan{c: s.anchorUpper}
	for from := s.anchorAt; from+n-s.anchorAt <= len(text); {
		i := lower.next(text, from)
		if s.anchorUpper != s.anchor {
			if j := upper.next(text, from); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i < 0 {
			return false
		}
		start := i - s.anchorAt
		if start+n <= len(text) && equalASCIIFold(text[start:start+n], s.folded) {
			return true
		}
		from = i + 1
	}
	return false
}

// anchorScan finds one byte's occurrences in order, remembering the last one
// found, so that text is scanned once per byte whatever the other byte does.
type anchorScan struct {
	c     byte
	at    int  // the last occurrence found
	known bool // at holds an occurrence, or -1 once there is none
}

// next is the first index at or after from holding c, or -1.
func (a *anchorScan) next(text string, from int) int {
	if a.known && (a.at < 0 || a.at >= from) {
		return a.at
	}
	a.known, a.at = true, strings.IndexByte(text[from:], a.c)
	if a.at >= 0 {
		a.at += from
	}
	return a.at
}

func equalASCIIFold(text, folded string) bool {
	for i := 0; i < len(folded); i++ {
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != folded[i] {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func asciiUpperByte(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// commonBytes lists bytes from most to least frequent in request logs (JSON,
// paths, English); byteRank ranks the rest as rarest.
const commonBytes = ` "e:,tao/in.srlhd{}-cump_10fg2=yb3&w4v5k6?98x7qjz`

// byteRank is higher for bytes more frequent in logged text, so a search
// anchors on its rarest byte and verifies few candidates.
func byteRank(c byte) int {
	if i := strings.IndexByte(commonBytes, c); i >= 0 {
		return len(commonBytes) - i
	}
	return 0
}
