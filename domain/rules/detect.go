package rules

import (
	"encoding/binary"
	"math/big"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// detector finds one kind of secret or personal value in a text: candidates
// by a pattern, kept when check (a checksum, a parse) says so. needs and
// hint are cheap tests that the text may hold one at all: needs the least
// counts of the bytes every match holds, hint a closer look.
type detector struct {
	index int // in detectorOrder
	needs byteCounts
	hint  func(string) bool
	re    *regexp.Regexp
	// shapeAt, when not nil, matches re's pattern at a place without the
	// regexp package (findShapes).
	shapeAt func(s string, i int) int
	check   func(string) bool
	// anchor, when not 0, is a byte every match holds that a JSON text
	// holds only inside strings: a body's values without it need no look.
	anchor byte
	// scheme is the part keep_scheme keeps ("Bearer "), by the length of
	// its match's first group.
	scheme bool
}

// Detectors are the built-in detectors, by the name a rule gives.
var detectors = map[string]detector{
	"email":           {needs: textCounts{at: 1, dot: 1}.packed(), hint: has("@"), anchor: '@', re: regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,63}`)},
	"card_number":     {needs: textCounts{digits: 13}.packed(), hint: hasDigits(13), re: regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`), check: luhn, shapeAt: cardAt},
	"iban":            {needs: textCounts{upper: 2, digits: 2}.packed(), hint: hasIBANStart, re: regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b`), check: ibanValid},
	"jwt":             {needs: textCounts{dot: 2, upper: 2}.packed(), hint: hasBefore('J', "ey"), re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*`)},
	"bearer_token":    {needs: textCounts{space: 1}.packed(), hint: hasFold("bearer"), re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*`), scheme: true},
	"aws_access_key":  {needs: textCounts{upper: 4}.packed(), hint: hasAfter('A', "KIA", "SIA", "GPA", "IDA", "ROA"), re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b`)},
	"github_token":    {needs: textCounts{under: 1}.packed(), hint: hasGitHubStart, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	"stripe_key":      {needs: textCounts{under: 2}.packed(), hint: hasAfter('_', "live_", "test_"), re: regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,247}\b`)},
	"pem_private_key": {needs: textCounts{dash: 10, upper: 10}.packed(), hint: has("PRIVATE KEY"), re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)},
	"us_ssn":          {needs: textCounts{dash: 2, digits: 9}.packed(), hint: both(hasCount('-', 2), hasDigits(9)), re: regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`), check: ssnValid, shapeAt: ssnAt},
	"ipv4":            {needs: textCounts{dot: 3, digits: 4}.packed(), hint: hasCount('.', 3), re: regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}\b`), check: ipValid, shapeAt: ipv4At},
	"ipv6":            {needs: textCounts{colon: 2}.packed(), hint: hasCount(':', 2), re: regexp.MustCompile(`(?i)\b[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%[0-9a-z]+)?\b|::[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){0,6}\b`), check: ipValid},
}

// detectorOrder is the detectors' names in order; each detector's index is
// its place here.
var detectorOrder = [...]string{"aws_access_key", "bearer_token", "card_number", "email", "github_token", "iban",
	"ipv4", "ipv6", "jwt", "pem_private_key", "stripe_key", "us_ssn"}

func init() {
	for i, name := range detectorOrder {
		d, ok := detectors[name]
		if !ok {
			panic("rules: detectorOrder names no detector " + name)
		}
		d.index = i
		detectors[name] = d
	}
	if len(detectors) != len(detectorOrder) {
		panic("rules: a detector is missing from detectorOrder")
	}
}

// DetectorNames lists the built-in detectors, sorted.
func DetectorNames() []string {
	return slices.Clone(detectorOrder[:])
}

// Hints: each is a cheap test every match of its detector's pattern passes,
// so that most values never reach the pattern.

func has(s string) func(string) bool     { return func(t string) bool { return strings.Contains(t, s) } }
func hasFold(s string) func(string) bool { return func(t string) bool { return containsFold(t, s) } }

// containsFold reports whether t holds s, ignoring case. s is ASCII and its
// first letter is no fold of a non-ASCII letter (as ſ is of s, K of k) or t
// holds no such letter (foldsToASCII): a match then starts with s's first
// byte in either case.
func containsFold(t, s string) bool {
	lower, upper := s[0], s[0]
	if 'a' <= lower|0x20 && lower|0x20 <= 'z' {
		lower, upper = lower|0x20, lower&^0x20
	}
	// Where a match may start: the next of each case found by IndexByte,
	// each looked for again only once passed.
	starts := t[:max(len(t)-len(s)+1, 0)]
	nextLower, nextUpper := -1, -1
	for at := 0; at < len(starts); {
		if nextLower < at {
			nextLower = indexFrom(starts, lower, at)
		}
		if nextUpper < at {
			nextUpper = indexFrom(starts, upper, at)
		}
		i := min(nextLower, nextUpper)
		if i == len(starts) {
			return false
		}
		if strings.EqualFold(t[i:i+len(s)], s) {
			return true
		}
		at = i + 1
	}
	return false
}

// indexFrom is the index of the first c in t at or after from, len(t) if none.
func indexFrom(t string, c byte, from int) int {
	if i := strings.IndexByte(t[from:], c); i >= 0 {
		return from + i
	}
	return len(t)
}

// hasAfter reports whether a text holds c followed by one of tails: one
// scan for c, rather than one for each literal.
func hasAfter(c byte, tails ...string) func(string) bool {
	return func(t string) bool {
		for i := strings.IndexByte(t, c); i >= 0; {
			rest := t[i+1:]
			for _, tail := range tails {
				if strings.HasPrefix(rest, tail) {
					return true
				}
			}
			j := strings.IndexByte(rest, c)
			if j < 0 {
				return false
			}
			i += 1 + j
		}
		return false
	}
}

// hasBefore reports whether a text holds head followed by c: one scan for
// c, a rare byte in most texts, where the head's first byte is a common one.
func hasBefore(c byte, head string) func(string) bool {
	return func(t string) bool {
		for i := strings.IndexByte(t, c); i >= 0; {
			if i >= len(head) && t[i-len(head):i] == head {
				return true
			}
			j := strings.IndexByte(t[i+1:], c)
			if j < 0 {
				return false
			}
			i += 1 + j
		}
		return false
	}
}

// hasGitHubStart reports whether a text holds the start of a GitHub token,
// "gh" and one of "pousr", or "github", then "_" ("_pat_" for the latter):
// one scan for the '_' each holds, rarer in most texts than a 'g'.
func hasGitHubStart(t string) bool {
	for i := strings.IndexByte(t, '_'); i >= 0; {
		if i >= 3 && t[i-3:i-1] == "gh" && strings.IndexByte("pousr", t[i-1]) >= 0 ||
			i >= 6 && t[i-6:i] == "github" && strings.HasPrefix(t[i+1:], "pat_") {
			return true
		}
		j := strings.IndexByte(t[i+1:], '_')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// hasCount reports whether a text holds c at least n times.
func hasCount(c byte, n int) func(string) bool {
	return func(t string) bool {
		for i := 0; i < n; i++ {
			j := strings.IndexByte(t, c)
			if j < 0 {
				return false
			}
			t = t[j+1:]
		}
		return true
	}
}

func both(a, b func(string) bool) func(string) bool {
	return func(t string) bool { return a(t) && b(t) }
}

// hasIBANStart reports whether a text holds two capital letters followed by
// two digits, as every IBAN starts. It reads eight bytes at a time and looks
// closer only where one of them is a capital, where a start may be.
func hasIBANStart(t string) bool {
	for i := 0; i+3 < len(t); i += 8 {
		if i+8 <= len(t) && capitals(binary.LittleEndian.Uint64([]byte(t[i:i+8]))) == 0 {
			continue
		}
		for p := i; p < i+8 && p+3 < len(t); p++ {
			if byteKind[t[p]] == kindUpper && byteKind[t[p+1]] == kindUpper && byteKind[t[p+2]] == kindDigit && byteKind[t[p+3]] == kindDigit {
				return true
			}
		}
	}
	return false
}

// capitals has the high bit of each byte of word that is an ASCII capital
// letter set, and no other bit.
func capitals(word uint64) uint64 {
	const ones = 0x0101010101010101
	low := word &^ laneHigh           // each byte below 0x80: no carry out of a byte below
	atLeastA := low + (0x80-'A')*ones // high bit set where the byte is 'A' or more
	pastZ := low + (0x80-'Z'-1)*ones  // high bit set where it is past 'Z'
	return atLeastA &^ pastZ &^ word & laneHigh
}

// hasDigits reports whether a text holds at least n digits.
func hasDigits(n int) func(string) bool {
	return func(t string) bool {
		count := 0
		for i := 0; i < len(t); i++ {
			if t[i] >= '0' && t[i] <= '9' {
				if count++; count >= n {
					return true
				}
			}
		}
		return false
	}
}

// textCounts are counts of the bytes the detectors' matches need, taken in
// one pass over a value: a value is counted once, however many detectors
// look at it, and most are then ruled out without a scan of their own.
type textCounts struct{ digits, upper, at, dot, colon, dash, under, space int }

// byteCounts are textCounts packed for the walk: a lane of 8 bits a kind,
// each count capped at 127, so that a value is counted with one addition a
// byte and compared with a rule's needs (capped so too: they ask no more
// than they did) in three operations.
type byteCounts uint64

// laneHigh is the high bit of each lane.
const laneHigh = 0x8080808080808080

// byteIncrement is what a byte adds to byteCounts: 1 in its kind's lane.
var byteIncrement = func() (t [256]uint64) {
	for c := range t {
		if k := byteKind[c]; k != kindOther {
			t[c] = 1 << (8 * (k - 1))
		}
	}
	return t
}()

// countText counts s's bytes of each kind textCounts holds.
func countText(s string) byteCounts {
	var total byteCounts
	for len(s) > 0 {
		chunk := s[:min(len(s), 127)] // no lane passes 127 within a chunk
		var sum uint64
		for i := 0; i < len(chunk); i++ {
			sum += byteIncrement[chunk[i]]
		}
		total = total.plus(byteCounts(sum))
		s = s[len(chunk):]
	}
	return total
}

// plus adds o to c lane by lane, capped at 127.
func (c byteCounts) plus(o byteCounts) byteCounts {
	sum := c + o // lanes of at most 254: no carry out of a lane
	over := sum & laneHigh
	return (sum | (over - over>>7)) &^ laneHigh
}

// covers reports whether counts n reach every count of need.
func (n byteCounts) covers(need byteCounts) bool {
	return ((n|laneHigh)-need)&laneHigh == laneHigh
}

// packed is c as byteCounts.
func (c textCounts) packed() byteCounts {
	var out byteCounts
	for k, n := range [...]int{c.digits, c.upper, c.at, c.dot, c.colon, c.dash, c.under, c.space} {
		out |= byteCounts(min(max(n, 0), 127)) << (8 * k)
	}
	return out
}

// The kinds of bytes textCounts counts; byteKind maps a byte to its kind.
const (
	kindOther = iota
	kindDigit
	kindUpper
	kindAt
	kindDot
	kindColon
	kindDash
	kindUnder
	kindSpace // what \s matches: tab, newline, form feed, return, space
	countKinds
)

var byteKind = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = kindDigit
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = kindUpper
	}
	t['@'], t['.'], t[':'], t['-'], t['_'] = kindAt, kindDot, kindColon, kindDash, kindUnder
	for _, c := range "\t\n\f\r " {
		t[c] = kindSpace
	}
	return t
}()

// add counts n more bytes of kind.
func (c *textCounts) add(kind uint8, n int) {
	switch kind {
	case kindDigit:
		c.digits += n
	case kindUpper:
		c.upper += n
	case kindAt:
		c.at += n
	case kindDot:
		c.dot += n
	case kindColon:
		c.colon += n
	case kindDash:
		c.dash += n
	case kindUnder:
		c.under += n
	case kindSpace:
		c.space += n
	}
}

func (c textCounts) plus(o textCounts) textCounts {
	return textCounts{c.digits + o.digits, c.upper + o.upper, c.at + o.at, c.dot + o.dot, c.colon + o.colon, c.dash + o.dash, c.under + o.under, c.space + o.space}
}

func (c textCounts) times(k int) textCounts {
	return textCounts{c.digits * k, c.upper * k, c.at * k, c.dot * k, c.colon * k, c.dash * k, c.under * k, c.space * k}
}

func (c textCounts) least(o textCounts) textCounts {
	return textCounts{min(c.digits, o.digits), min(c.upper, o.upper), min(c.at, o.at), min(c.dot, o.dot), min(c.colon, o.colon),
		min(c.dash, o.dash), min(c.under, o.under), min(c.space, o.space)}
}

// find returns the spans of what d finds in s: [start, end) pairs.
func (d *detector) find(s string) [][]int {
	return d.findCounted(s, countText(s))
}

// findCounted is find with s's counts already taken.
func (d *detector) findCounted(s string, counts byteCounts) [][]int {
	if !counts.covers(d.needs) || !d.hint(s) {
		return nil
	}
	var out [][]int
	var found [][]int
	switch {
	case d.shapeAt != nil:
		found = findShapes(s, d.shapeAt)
	case d.scheme:
		found = d.re.FindAllStringSubmatchIndex(s, -1)
	default:
		found = d.re.FindAllStringIndex(s, -1) // cheaper: no groups kept
	}
	for _, m := range found {
		if d.check != nil && !d.check(s[m[0]:m[1]]) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// luhn checks a card number's check digit (spaces and dashes ignored).
func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && n <= 19 && sum%10 == 0
}

// ibanValid checks an IBAN's mod-97 check digits (ISO 13616).
func ibanValid(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	var digits strings.Builder
	for _, c := range s[4:] + s[:4] {
		switch {
		case c >= '0' && c <= '9':
			digits.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			digits.WriteString(big.NewInt(int64(c - 'A' + 10)).String())
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(digits.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// ssnValid refuses the numbers the SSA never issues.
func ssnValid(s string) bool {
	area, group, serial := s[:3], s[4:6], s[7:]
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}

func ipValid(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}
