package domain

import (
	"slices"
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
// As with strings.ToLower, each invalid byte of a text reads as U+FFFD.
//
// Every q is found by one scan of each text for the rarest of its runes (its
// anchor), checking the rest of q only around each occurrence; no text is
// lowered or copied, so no q costs much more than an ASCII q of the same length
// (cmd/reqlog-bench BenchmarkHostileSearch).
type Search struct {
	folded string // q in lower case
	ascii  bool
	// For an ASCII q: the byte of folded the scan looks for first (the rarest
	// by byteRank), its offset in folded, and its upper-case form.
	anchor, anchorUpper byte
	anchorAt            int
	// For any other q: its runes in lower case, the one the scan looks for
	// first, and the UTF-8 of every rune whose lower case that one is (nil for
	// U+FFFD, which an invalid byte is too: the scan then walks the runes
	// beyond ASCII).
	runes       []rune
	anchorRune  int
	anchorForms []string
	// The fewest bytes of text that can hold the runes of q before its
	// anchor, and its anchor and the runes after it.
	minBefore, minFrom int
	// For a q whose lower case is all ASCII (İstanbul, the Kelvin sign): the
	// ASCII search of its lower case, which finds q in any text holding none of
	// otherForms, the runes beyond ASCII that lower to a rune of q.
	asciiFold  *Search
	otherForms []string
	// joined is what CouldBeIn looks for in a q that is not all ASCII; nil
	// when it cannot rule anything out.
	joined *joinedSearch
}

// NewSearch compiles q; the zero Search (q "") matches everything.
func NewSearch(q string) Search {
	for i := 0; i < len(q); i++ {
		if q[i] >= utf8.RuneSelf {
			s := compileUnicode(strings.ToLower(q))
			s.joined = newJoinedSearch(s.runes)
			return s
		}
	}
	s := Search{folded: asciiLower(q), ascii: true}
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

// compileUnicode prepares the scan of folded, a q in lower case that is not all
// ASCII (or a part of one): it anchors on a rune beyond ASCII (rare in logged
// text; U+FFFD last of them, as its scan decodes every such rune), else on the
// rarest byte.
func compileUnicode(folded string) Search {
	s := Search{folded: folded, runes: []rune(folded)}
	rank := func(r rune) int {
		switch {
		case r == utf8.RuneError:
			return -1
		case r >= utf8.RuneSelf:
			return -2
		}
		return byteRank(byte(r))
	}
	for i, r := range s.runes {
		if rank(r) < rank(s.runes[s.anchorRune]) {
			s.anchorRune = i
		}
	}
	if anchor := s.runes[s.anchorRune]; anchor != utf8.RuneError {
		for _, r := range runesLoweringTo(anchor) {
			s.anchorForms = append(s.anchorForms, string(r))
		}
	}
	for i, r := range s.runes {
		if i < s.anchorRune {
			s.minBefore += shortestForm(r)
		} else {
			s.minFrom += shortestForm(r)
		}
	}
	if s.runes[s.anchorRune] < utf8.RuneSelf { // q's lower case is all ASCII
		fold := NewSearch(folded)
		s.asciiFold = &fold
		for _, r := range s.runes {
			for _, form := range runesLoweringTo(r) {
				if other := string(form); form >= utf8.RuneSelf && !slices.Contains(s.otherForms, other) {
					s.otherForms = append(s.otherForms, other)
				}
			}
		}
	}
	return s
}

// shortestForm is the fewest bytes of text a rune of q in lower case can match:
// one for U+FFFD (an invalid byte), else the shortest UTF-8 of a rune lowering
// to it (k: one, for k and K; the Kelvin sign takes three).
func shortestForm(lower rune) int {
	if lower == utf8.RuneError {
		return 1
	}
	shortest := utf8.UTFMax
	for _, r := range runesLoweringTo(lower) {
		shortest = min(shortest, utf8.RuneLen(r))
	}
	return shortest
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
	switch {
	case s.folded == "":
		return true
	case s.ascii:
		return s.inASCII(text)
	case s.asciiFold != nil && !slices.ContainsFunc(s.otherForms, func(form string) bool { return strings.Contains(text, form) }):
		// Every rune of text that could match lowers as ASCII does.
		return s.asciiFold.inASCII(text)
	}
	return s.eachAnchor(text, 0, func(at int) bool { return s.matchesAround(text, at) })
}

// CouldBeIn reports whether joined, any bytes that hold each of a message's
// searched texts (in any order, with any bytes between them), may hold q in one
// of them: false means none of them does. A store that keeps a message's texts
// in one record rules most records out with one scan of it, instead of one
// scan per text (a message has dozens of header values), and searches the
// texts one by one only where it returns true.
func (s Search) CouldBeIn(joined string) bool {
	switch {
	case s.ascii:
		return s.In(joined)
	case s.joined == nil:
		return true
	}
	return s.joined.in(joined)
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

// eachAnchor calls check with each byte of text where the anchor rune of a q
// that is not all ASCII occurs, in order, until check returns true; it skips
// those too near either end of text to hold q, and extra more bytes after it.
// Each form is found with strings.Index, and where each occurs next is kept, so
// the text is scanned once however many candidates fail. U+FFFD is found by
// decoding the runes beyond ASCII, skipping ASCII many bytes at a time.
func (s Search) eachAnchor(text string, extra int, check func(at int) bool) bool {
	last := len(text) - s.minFrom - extra // the last byte the anchor can be at
	if last < s.minBefore {
		return false // text is too short
	}
	if s.anchorForms == nil {
		for at := 0; at <= last; { // from the start: runes are read from there
			i := indexHigh(text[at:])
			if i < 0 {
				return false
			}
			at += i
			r, width := utf8.DecodeRuneInString(text[at:])
			if r == utf8.RuneError && at >= s.minBefore && at <= last && check(at) {
				return true
			}
			at += width // the next rune, as strings.ToLower reads them
		}
		return false
	}
	var buf [maxForms]int
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
		if at < 0 || at > last {
			return false
		}
		if at >= s.minBefore && check(at) {
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

// maxForms is the most runes lowering to one rune: three (k, K and the Kelvin
// sign), which TestRunesLoweringTo checks.
const maxForms = 3

// matchesAround reports whether text holds q with its anchor rune at byte at,
// where a rune of text starts.
func (s Search) matchesAround(text string, at int) bool {
	if _, ok := matchBefore(text, at, s.runes[:s.anchorRune]); !ok {
		return false
	}
	_, ok := matchAfter(text, at, s.runes[s.anchorRune:])
	return ok
}

// matchAfter reports whether the runes of text from byte pos on, lowered, begin
// with want, and where they end. ASCII bytes are compared without decoding.
func matchAfter(text string, pos int, want []rune) (end int, ok bool) {
	for _, w := range want {
		if pos == len(text) {
			return 0, false
		}
		r, width := rune(text[pos]), 1
		if r >= utf8.RuneSelf {
			r, width = utf8.DecodeRuneInString(text[pos:])
		}
		if lowerRune(r) != w {
			return 0, false
		}
		pos += width
	}
	return pos, true
}

// matchBefore reports whether the runes of text before byte pos, lowered, end
// with want, and where they start.
func matchBefore(text string, pos int, want []rune) (start int, ok bool) {
	for k := len(want) - 1; k >= 0; k-- {
		if pos == 0 {
			return 0, false
		}
		r, width := rune(text[pos-1]), 1
		if r >= utf8.RuneSelf {
			r, width = utf8.DecodeLastRuneInString(text[:pos])
		}
		if lowerRune(r) != want[k] {
			return 0, false
		}
		pos -= width
	}
	return pos, true
}

// lowerRune is unicode.ToLower, without its call for ASCII.
func lowerRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// indexHigh is the index of the first byte of s at or above 0x80 (a byte of a
// rune beyond ASCII, or an invalid one), or -1. It tests 32 bytes, then 8, at a
// time, as utf8.ValidString skips ASCII; a byte at a time, a scan anchored on
// U+FFFD cost several times an ASCII q's (BenchmarkHostileSearch).
func indexHigh(s string) int {
	const high = 0x8080808080808080
	i := 0
	for ; i+32 <= len(s); i += 32 {
		t := s[i : i+32]
		if (le64(t[0:8])|le64(t[8:16])|le64(t[16:24])|le64(t[24:32]))&high != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if le64(s[i:i+8])&high != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return i
		}
	}
	return -1
}

// le64 is the first eight bytes of t as a little-endian word.
func le64(t string) uint64 {
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

// joinedSearch is what CouldBeIn looks for in a q that is not all ASCII: its
// runes without the U+FFFD it begins and ends with (core), and how many there
// were. Inside q every rune reads in the joined bytes as in its own text: the
// runes around it are valid, and UTF-8 decoding does not look across a valid
// rune. But a U+FFFD at q's edge may be an invalid byte at its text's edge,
// which the bytes next to the text in joined complete into a valid rune; all
// it tells is that bytes at or above 0x80 (invalid, or of U+FFFD) lie next to
// the core, one at least for each.
type joinedSearch struct {
	core          Search
	before, after int
}

// newJoinedSearch compiles the joined search of a q's runes, lower case and not
// all ASCII; nil when q is U+FFFD alone, which rules nothing out. The core is
// compiled as not all ASCII even when it is, so that it ignores case as q does
// (the Kelvin sign is k).
func newJoinedSearch(runes []rune) *joinedSearch {
	first, last := 0, len(runes)
	for first < last && runes[first] == utf8.RuneError {
		first++
	}
	for last > first && runes[last-1] == utf8.RuneError {
		last--
	}
	if first == last {
		return nil
	}
	return &joinedSearch{core: compileUnicode(string(runes[first:last])), before: first, after: len(runes) - last}
}

// in is CouldBeIn for j. A core anchored beyond ASCII is found as In finds it;
// else, with U+FFFD at its edges, each run of bytes at or above 0x80 (rare in
// logged text) is found, and the core tried next to it.
func (j *joinedSearch) in(b string) bool {
	c := j.core
	switch {
	case len(b) < c.minBefore+c.minFrom+j.before+j.after:
		return false
	case j.before == 0 && j.after == 0:
		return c.In(b)
	case c.runes[c.anchorRune] >= utf8.RuneSelf:
		return c.eachAnchor(b, j.after, func(at int) bool {
			start, ok := matchBefore(b, at, c.runes[:c.anchorRune])
			if !ok || !highBefore(b, start, j.before) {
				return false
			}
			end, ok := matchAfter(b, at, c.runes[c.anchorRune:])
			return ok && highAfter(b, end, j.after)
		})
	}
	for from := 0; from < len(b); {
		h := indexHigh(b[from:])
		if h < 0 {
			return false
		}
		h += from
		r := h + 1 // the run of high bytes is [h, r)
		for r < len(b) && b[r] >= utf8.RuneSelf {
			r++
		}
		if j.before > 0 {
			for x := h + j.before; x <= r; x++ {
				if end, ok := matchAfter(b, x, c.runes); ok && highAfter(b, end, j.after) {
					return true
				}
			}
		} else {
			for y := h + j.after; y <= r; y++ {
				if _, ok := matchBefore(b, y-j.after, c.runes); ok {
					return true
				}
			}
		}
		from = r
	}
	return false
}

// highBefore reports whether the n bytes of b before pos are at or above 0x80.
func highBefore(b string, pos, n int) bool {
	if pos < n {
		return false
	}
	for _, c := range []byte(b[pos-n : pos]) {
		if c < utf8.RuneSelf {
			return false
		}
	}
	return true
}

// highAfter reports whether the n bytes of b from pos on are at or above 0x80.
func highAfter(b string, pos, n int) bool {
	if len(b)-pos < n {
		return false
	}
	for _, c := range []byte(b[pos : pos+n]) {
		if c < utf8.RuneSelf {
			return false
		}
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
