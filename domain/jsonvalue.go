package domain

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

type jsonKind int

const (
	kindInvalid jsonKind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// kindOf classifies an already well-formed JSON value by its first byte.
func kindOf(raw json.RawMessage) jsonKind {
	if len(raw) == 0 {
		return kindInvalid
	}
	switch c := raw[0]; {
	case c == 'n':
		return kindNull
	case c == 't' || c == 'f':
		return kindBool
	case c == '"':
		return kindString
	case c == '[':
		return kindArray
	case c == '{':
		return kindObject
	case c == '-' || (c >= '0' && c <= '9'):
		return kindNumber
	}
	return kindInvalid
}

// isAbsent treats a missing field and an explicit null alike.
func isAbsent(raw json.RawMessage) bool { return len(raw) == 0 || kindOf(raw) == kindNull }

// jsonInteger accepts a JSON number with an integral value (200, 200.0, 2e2).
func jsonInteger(raw json.RawMessage) (int64, bool) {
	if kindOf(raw) != kindNumber {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// Magnitudes at which a numeric created_at is taken as milliseconds or microseconds.
const (
	millisFrom = 1e11
	microsFrom = 1e14
)

var errTimestamp = errors.New("must be a positive Unix timestamp (seconds, milliseconds or microseconds) or an RFC 3339 string")

// parseTimestamp reads created_at: a Unix timestamp whose unit follows from its size,
// or an RFC 3339 string. The result is UTC at microsecond precision.
func parseTimestamp(raw json.RawMessage) (time.Time, error) {
	switch kindOf(raw) {
	case kindString:
		t, err := time.Parse(time.RFC3339Nano, unquote(raw))
		if err != nil {
			return time.Time{}, errors.New("must be an RFC 3339 timestamp such as 2023-06-06T19:53:02.928272Z when given as a string")
		}
		return Micro(t), nil
	case kindNumber:
		micros, ok := unixMicros(string(raw))
		if !ok {
			return time.Time{}, errTimestamp
		}
		return time.UnixMicro(micros).UTC(), nil
	}
	return time.Time{}, errTimestamp
}

// ParseUnixOrRFC3339 reads a query-string time: RFC 3339, or Unix seconds.
func ParseUnixOrRFC3339(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Micro(t), true
	}
	micros, ok := unixScaled(s, 1e6)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMicro(micros).UTC(), true
}

// unixMicros converts a positive decimal number to microseconds, choosing the unit
// by magnitude. Plain decimals are converted exactly; exponent forms via float64.
func unixMicros(text string) (int64, bool) {
	magnitudeText := text
	if !strings.ContainsAny(text, "eE") {
		// The integer part alone decides the unit, immune to float rounding.
		magnitudeText, _, _ = strings.Cut(text, ".")
	}
	magnitude, err := strconv.ParseFloat(magnitudeText, 64)
	if err != nil {
		return 0, false
	}
	return unixScaled(text, scaleFor(magnitude))
}

// scaleFor returns how many microseconds one unit of a timestamp of size v is.
func scaleFor(v float64) int64 {
	switch {
	case v >= microsFrom:
		return 1
	case v >= millisFrom:
		return 1e3
	default:
		return 1e6
	}
}

// unixScaled converts a positive decimal text in units of scale microseconds to
// microseconds, truncating below a microsecond.
func unixScaled(text string, scale int64) (int64, bool) {
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f*float64(scale) >= math.MaxInt64/2 {
			return 0, false
		}
		return int64(f * float64(scale)), true
	}
	intPart, frac, hasFrac := strings.Cut(text, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return 0, false
	}
	whole, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || whole > math.MaxInt64/scale/2 {
		return 0, false
	}
	micros := whole * scale
	// Fraction digits worth keeping: six for seconds, three for milliseconds.
	digits := len(strconv.FormatInt(scale, 10)) - 1
	if len(frac) > digits {
		frac = frac[:digits]
	}
	if frac != "" {
		f, _ := strconv.ParseInt(frac+strings.Repeat("0", digits-len(frac)), 10, 64)
		micros += f
	}
	if micros <= 0 {
		return 0, false
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
