package rules

import (
	"math/big"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// detector finds one kind of secret or personal value in a text: candidates
// by a pattern, kept when check (a checksum, a parse) says so. hint is a
// cheap test that the text may hold one at all.
type detector struct {
	hint  func(string) bool
	re    *regexp.Regexp
	check func(string) bool
	// scheme is the part keep_scheme keeps ("Bearer "), by the length of
	// its match's first group.
	scheme bool
}

// Detectors are the built-in detectors, by the name a rule gives.
var detectors = map[string]detector{
	"email":           {hint: has("@"), re: regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,63}`)},
	"card_number":     {hint: hasDigits(13), re: regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`), check: luhn},
	"iban":            {hint: hasIBANStart, re: regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b`), check: ibanValid},
	"jwt":             {hint: has("eyJ"), re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*`)},
	"bearer_token":    {hint: hasFold("bearer"), re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*`), scheme: true},
	"aws_access_key":  {hint: hasAfter('A', "KIA", "SIA", "GPA", "IDA", "ROA"), re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b`)},
	"github_token":    {hint: hasAfter('g', "hp_", "ho_", "hu_", "hs_", "hr_", "ithub_pat_"), re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	"stripe_key":      {hint: hasAfter('_', "live_", "test_"), re: regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,247}\b`)},
	"pem_private_key": {hint: has("PRIVATE KEY"), re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)},
	"us_ssn":          {hint: both(hasCount('-', 2), hasDigits(9)), re: regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`), check: ssnValid},
	"ipv4":            {hint: hasCount('.', 3), re: regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}\b`), check: ipValid},
	"ipv6":            {hint: hasCount(':', 2), re: regexp.MustCompile(`(?i)\b[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%[0-9a-z]+)?\b|::[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){0,6}\b`), check: ipValid},
}

// DetectorNames lists the built-in detectors, sorted.
func DetectorNames() []string {
	names := make([]string, 0, len(detectors))
	for name := range detectors {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Hints: each is a cheap test every match of its detector's pattern passes,
// so that most values never reach the pattern.

func has(s string) func(string) bool     { return func(t string) bool { return strings.Contains(t, s) } }
func hasFold(s string) func(string) bool { return func(t string) bool { return containsFold(t, s) } }

func containsFold(t, s string) bool {
	for i := 0; i+len(s) <= len(t); i++ {
		if strings.EqualFold(t[i:i+len(s)], s) {
			return true
		}
	}
	return false
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
// two digits, as every IBAN starts.
func hasIBANStart(t string) bool {
	upper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i+3 < len(t); i++ {
		if upper(t[i]) && upper(t[i+1]) && digit(t[i+2]) && digit(t[i+3]) {
			return true
		}
	}
	return false
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

// find returns the spans of what d finds in s: [start, end) pairs.
func (d *detector) find(s string) [][]int {
	if !d.hint(s) {
		return nil
	}
	var out [][]int
	find := d.re.FindAllStringIndex // cheaper: no groups kept
	if d.scheme {
		find = d.re.FindAllStringSubmatchIndex
	}
	for _, m := range find(s, -1) {
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
