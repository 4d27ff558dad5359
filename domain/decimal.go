package domain

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain/jsonbytes"
)

// integer accepts a JSON number with an integral value (200, 200.0, 2e2).
func integer(v Value) (int64, bool) {
	if v.Kind != jsonbytes.Number {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(v.Text), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(v.Text), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// Integer-part lengths at which a numeric created_at is taken as milliseconds
// (values >= 1e11) or microseconds (>= 1e14).
const (
	millisDigits = 12
	microsDigits = 15
)

// Powers of ten that turn each unit into microseconds.
const (
	secondsToMicros = 6
	millisToMicros  = 3
	microsToMicros  = 0
)

var errTimestamp = errors.New("must be a positive Unix timestamp (seconds, milliseconds or microseconds) or an RFC 3339 string")

// parseTimestamp reads created_at: a Unix timestamp whose unit follows from its size,
// or an RFC 3339 string. The result is UTC, truncated to the microsecond.
func parseTimestamp(v Value) (time.Time, error) {
	switch v.Kind {
	case jsonbytes.String:
		t, ok := parseRFC3339(string(v.Text), truncate)
		if !ok {
			return time.Time{}, errors.New("must be an RFC 3339 timestamp such as 2023-06-06T19:53:02.928272Z when given as a string")
		}
		return t, nil
	case jsonbytes.Number:
		d, ok := parseDecimal(string(v.Text))
		if !ok {
			return time.Time{}, errTimestamp
		}
		micros, fits := d.micros(d.unit(), truncate)
		if !fits || micros <= 0 {
			return time.Time{}, errTimestamp
		}
		return time.UnixMicro(micros).UTC(), nil
	}
	return time.Time{}, errTimestamp
}

// decimal is a non-negative number read exactly, without float rounding: the digits
// of whole and frac run together, times 10^exp.
type decimal struct {
	whole, frac string
	exp         int
}

// maxExponent caps exponents: far beyond any timestamp, far from int overflow.
const maxExponent = 1e9

// parseDecimal reads digits[.digits][(e|E)[+|-]digits]: a JSON number without a
// sign, leading zeros allowed.
func parseDecimal(text string) (decimal, bool) {
	mantissa, exponent, hasExponent := text, "", false
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		mantissa, exponent, hasExponent = text[:i], text[i+1:], true
	}
	whole, frac, hasFrac := strings.Cut(mantissa, ".")
	if whole == "" || !allDigits(whole) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return decimal{}, false
	}
	sign := 1
	if hasExponent {
		switch {
		case strings.HasPrefix(exponent, "-"):
			sign, exponent = -1, exponent[1:]
		case strings.HasPrefix(exponent, "+"):
			exponent = exponent[1:]
		}
		if exponent == "" || !allDigits(exponent) {
			return decimal{}, false
		}
	}
	exp := 0
	for i := 0; i < len(exponent) && exp < maxExponent; i++ {
		exp = exp*10 + int(exponent[i]-'0')
	}
	return decimal{whole: whole, frac: frac, exp: sign*min(exp, maxExponent) - len(frac)}, true
}

func (d decimal) digit(i int) byte {
	if i < len(d.whole) {
		return d.whole[i]
	}
	return d.frac[i-len(d.whole)]
}

// digits returns where the significant digits start and how many digits there are.
func (d decimal) digits() (first, n int) {
	n = len(d.whole) + len(d.frac)
	for first < n && d.digit(first) == '0' {
		first++
	}
	return first, n
}

// intDigits is the length of the integer part, without leading zeros (0 for < 1).
func (d decimal) intDigits() int {
	first, n := d.digits()
	return max(n-first+d.exp, 0)
}

// unit is the power of ten that turns d into microseconds when its size picks the
// unit, as for created_at: seconds, then milliseconds from 1e11, microseconds from 1e14.
func (d decimal) unit() int {
	switch n := d.intDigits(); {
	case n >= microsDigits:
		return microsToMicros
	case n >= millisDigits:
		return millisToMicros
	default:
		return secondsToMicros
	}
}

// unitHint names the unit d looks like when, read in that unit, it is a valid time
// bound; nil when it looks like seconds or is absurd in any unit.
func (d decimal) unitHint() error {
	pow := d.unit()
	if micros, fits := d.micros(pow, roundUp); !fits || micros > lastBoundMicros {
		return nil
	}
	switch pow {
	case millisToMicros:
		return errLooksLikeMillis
	case microsToMicros:
		return errLooksLikeMicros
	}
	return nil
}

// micros returns d × 10^pow as an integer, rounding the digits below it as round
// says; fits is false when that needs more than 18 digits.
func (d decimal) micros(pow int, round rounding) (micros int64, fits bool) {
	first, n := d.digits()
	if first == n {
		return 0, true
	}
	intEnd := n + d.exp + pow // the digits [first, intEnd) form the integer part
	if intEnd-first > 18 {
		return 0, false
	}
	for i := first; i < intEnd; i++ {
		micros *= 10
		if i < n {
			micros += int64(d.digit(i) - '0')
		}
	}
	if round == roundUp {
		for i := max(first, intEnd); i < n; i++ {
			if d.digit(i) != '0' {
				return micros + 1, true
			}
		}
	}
	return micros, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
