package domain

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// TimeLayout is the wire form of every timestamp: UTC with exactly six fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Micro normalises t to the precision every store keeps: UTC, whole microseconds.
func Micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// rounding says what becomes of digits finer than a microsecond.
type rounding bool

const (
	truncate rounding = false // created_at: stored as the microsecond it falls in
	roundUp  rounding = true  // from and to: see ParseUnixOrRFC3339
)

// lastBoundMicros is the latest from or to, 9999-12-31T23:59:59.999999Z: the last
// instant RFC 3339's four-digit year (and so TimeLayout) can write.
const lastBoundMicros = 253402300799999999

// Why a from or to value is refused; the texts are the 400's messages.
var (
	errTimeBoundSyntax = errors.New("must be an RFC 3339 time or Unix seconds")
	errNotAfterEpoch   = errors.New("must be after 1970-01-01T00:00:00Z (Unix time 0)")
	errAfterYear9999   = errors.New("must be an RFC 3339 time or Unix seconds no later than 9999-12-31T23:59:59.999999Z")
	errLooksLikeMillis = errors.New("this looks like milliseconds: divide by 1000")
	errLooksLikeMicros = errors.New("this looks like microseconds: divide by 1000000")
)

// ParseUnixOrRFC3339 reads a query-string time bound: RFC 3339, or Unix seconds
// (never milliseconds: the contract says seconds, and a number too large to be
// seconds is refused with a hint rather than read as a far-future year).
//
// The bound must lie after the Unix epoch, judged on its exact value: 0 and
// 1970-01-01T00:00:00Z are refused, 1e-300 is not. Digits finer than a microsecond
// round up: stored times are whole microseconds, so for [from, to) the rounded-up
// bound selects exactly the messages the exact one does, and a value after the
// epoch never rounds to it. An accepted bound is therefore never the zero time,
// which Filter reads as "unbounded".
func ParseUnixOrRFC3339(s string) (time.Time, error) {
	if t, ok := parseRFC3339(s, roundUp); ok {
		return timeBound(t.UnixMicro(), nil)
	}
	d, ok := parseDecimal(s)
	if !ok {
		return time.Time{}, errTimeBoundSyntax
	}
	micros, fits := d.micros(secondsToMicros, roundUp)
	if !fits {
		micros = lastBoundMicros + 1
	}
	return timeBound(micros, d.unitHint())
}

// timeBound checks a bound in microseconds; hint explains a number too large.
func timeBound(micros int64, hint error) (time.Time, error) {
	switch {
	case micros <= 0:
		return time.Time{}, errNotAfterEpoch
	case micros > lastBoundMicros && hint != nil:
		return time.Time{}, fmt.Errorf("%w; %w", errAfterYear9999, hint)
	case micros > lastBoundMicros:
		return time.Time{}, errAfterYear9999
	}
	return time.UnixMicro(micros).UTC(), nil
}

// parseRFC3339 reads an RFC 3339 time as UTC at whole microseconds, rounding finer
// digits as round says. RFC 3339 §5.6 allows a lower-case "t" and "z", which
// time.Parse does not.
func parseRFC3339(s string, round rounding) (time.Time, bool) {
	text := s
	if len(text) > len("2006-01-02") && text[len("2006-01-02")] == 't' {
		text = text[:10] + "T" + text[11:]
	}
	if strings.HasSuffix(text, "z") {
		text = text[:len(text)-1] + "Z"
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, false
	}
	micro := Micro(t)
	if round == roundUp && finerThanMicros(text) {
		micro = micro.Add(time.Microsecond)
	}
	return micro, true
}

// finerThanMicros reports whether the fraction of seconds of a parsed RFC 3339 text
// has a non-zero digit past the sixth. It reads the text, not the time.Time:
// time.Parse drops digits past the ninth.
func finerThanMicros(text string) bool {
	dot := strings.IndexAny(text, ".,") // time.Parse also takes a comma
	if dot < 0 {
		return false
	}
	frac := text[dot+1:]
	end := 0
	for end < len(frac) && isDigit(frac[end]) {
		end++
	}
	return end > 6 && strings.Trim(frac[6:end], "0") != ""
}
