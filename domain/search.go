package domain

import (
	"strings"
	"sync"
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
//
// Case is ignored rune by rune with unicode.ToLower, as strings.ToLower does,
// except that an ASCII q ignores only ASCII case: it does not find "k" in the
// Kelvin sign (U+212A) nor "i" in "İ" (U+0130), whose lower cases are ASCII.
type Search struct {
	folded string // q in lower case
	ascii  bool
	// For an ASCII q: the byte of folded the scan looks for first (the rarest
	// by byteRank), its offset in folded, and its upper-case form.
	anchor, anchorUpper byte
	anchorAt            int
	// For any other q: its runes in lower case, the one the scan looks for
	// first, and the UTF-8 of every rune whose lower case that one is.
	runes       []rune
	anchorRune  int
	anchorForms []string
	// lowerEach is set for a q holding U+FFFD or invalid UTF-8, which
	// strings.ToLower finds in a text's invalid bytes: each text is lowered.
	lowerEach bool
}

// NewSearch compiles q; the zero Search (q "") matches everything.
func NewSearch(q string) Search {
	s := Search{folded: strings.ToLower(q), ascii: true}
	for i := 0; i < len(q); i++ {
		if q[i] >= utf8.RuneSelf {
			s.ascii = false
			s.compileUnicode()
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

// compileUnicode prepares the scan of a q that is not all ASCII: it anchors on
// a non-ASCII rune (rare in logged text), else on the rarest byte.
func (s *Search) compileUnicode() {
	s.runes = []rune(s.folded)
	if strings.ContainsRune(s.folded, utf8.RuneError) {
		s.lowerEach = true
		return
	}
	rank := func(r rune) int {
		if r >= utf8.RuneSelf {
			return -1
		}
		return byteRank(byte(r))
	}
	for i, r := range s.runes {
		if rank(r) < rank(s.runes[s.anchorRune]) {
			s.anchorRune = i
		}
	}
	for _, r := range runesLoweringTo(s.runes[s.anchorRune]) {
		s.anchorForms = append(s.anchorForms, string(r))
	}
}

var (
	lowerPreimagesOnce sync.Once
	lowerPreimages     map[rune][]rune // lower case -> the other runes lowering to it
)

// runesLoweringTo lists every rune r with unicode.ToLower(r) == lower.
func runesLoweringTo(lower rune) []rune {
	lowerPreimagesOnce.Do(func() {
		// unicode.ToLower changes only runes of unicode.CaseRanges.
		lowerPreimages = map[rune][]rune{}
		for _, cr := range unicode.CaseRanges {
			for r := rune(cr.Lo); r <= rune(cr.Hi); r++ {
				if l := unicode.ToLower(r); l != r {
					lowerPreimages[l] = append(lowerPreimages[l], r)
				}
			}
		}
	})
	forms := lowerPreimages[lower]
	if unicode.ToLower(lower) == lower {
		forms = append([]rune{lower}, forms...)
	}
	return forms
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
	if s.lowerEach {
		return strings.Contains(strings.ToLower(text), s.folded)
	}
	if !s.ascii {
		return s.inUnicode(text)
	}
	return s.inASCII(text)
}

// inASCII is In for an ASCII q: it finds each occurrence of the anchor byte in
// either case and compares q around it. Where each case occurs next is kept,
// so the text is scanned once however many candidates fail.
func (s Search) inASCII(text string) bool {
	n := len(s.folded)
	if len(text) < n {
		return false
	}
	next := func(b byte, from int) int {
		if i := strings.IndexByte(text[from:], b); i >= 0 {
			return from + i
		}
		return -1
	}
	lower, upper := next(s.anchor, s.anchorAt), -1
	if s.anchorUpper != s.anchor {
		upper = next(s.anchorUpper, s.anchorAt)
	}
	for {
		i := lower
		if upper >= 0 && (i < 0 || upper < i) {
			i = upper
		}
		if i < 0 {
			return false
		}
		start := i - s.anchorAt
		if start+n > len(text) {
			return false // every later candidate ends later still
		}
		if equalASCIIFold(text[start:start+n], s.folded) {
			return true
		}
		if i == lower {
			lower = next(s.anchor, i+1)
		} else {
			upper = next(s.anchorUpper, i+1)
		}
	}
}

// inUnicode is In for a q that is not all ASCII: it finds each form of the
// anchor rune, then compares the runes before and after it, lowered.
func (s Search) inUnicode(text string) bool {
	var buf [4]int  // a rune has at most three forms: k, K and the Kelvin sign
	next := buf[:0] // where each form occurs next, -1: never
	for _, form := range s.anchorForms {
		next = append(next, strings.Index(text, form))
	}
	for {
		at, form := -1, 0
		for i, n := range next {
			if n >= 0 && (at < 0 || n < at) {
				at, form = n, i
			}
		}
		if at < 0 {
			return false
		}
		if s.matchesAround(text, at) {
			return true
		}
		width := len(s.anchorForms[form])
		if n := strings.Index(text[at+width:], s.anchorForms[form]); n >= 0 {
			next[form] = at + width + n
		} else {
			next[form] = -1
		}
	}
}

// matchesAround reports whether text holds q with its anchor rune at byte at.
func (s Search) matchesAround(text string, at int) bool {
	pos := at
	for k := s.anchorRune - 1; k >= 0; k-- {
		r, width := utf8.DecodeLastRuneInString(text[:pos])
		if width == 0 || unicode.ToLower(r) != s.runes[k] {
			return false
		}
		pos -= width
	}
	pos = at
	for _, want := range s.runes[s.anchorRune:] {
		r, width := utf8.DecodeRuneInString(text[pos:])
		if width == 0 || unicode.ToLower(r) != want {
			return false
		}
		pos += width
	}
	return true
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
