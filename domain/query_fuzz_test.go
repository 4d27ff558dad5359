package domain

import (
	"errors"
	"math/big"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func FuzzParseQuery(f *testing.F) {
	cursor := Cursor{CreatedAt: testNow, ID: "0190f5a2-3b4c-7d8e-9f00-112233445566"}.Encode()
	for _, seed := range []string{
		"",
		"limit=5&name=shop&method=post&ip_address=2001:DB8::1&status_code=4xx&path=/a&path_prefix=/b&from=1795262400&to=2026-11-21T14:00:00%2B01:00",
		"cursor=" + cursor, "cursor=" + cursor + "x", "limit=0", "limit=100", "limit=+7", "limit=1&limit=1",
		"status_code=5XX", "status_code=0404", "status_code=404.0", "method=G%20T", "name=%20%20",
		"from=1e9&to=1e10", "from=2026-11-21T12:00:00.9999999Z&to=2026-11-21T12:00:00.9999991Z", "to=-5", "ip_address=::ffff:1.2.3.4",
		"to=0001-01-01T00:00:00Z", "from=1700000000000", "to=9999999999999", "from=1e-300&to=2026-11-22t03:41:25.0000031z",
		"ip_address=fe80::1%25eth0", "ip_address=::1%25%0A%00", "ip_address=::ffff:10.0.0.1%25%3Cimg%20src=x%3E",
		"%zz=1", "a=1;b=2",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return // the HTTP adapter answers 400 for a malformed query string
		}
		q, err := ParseQuery(values)
		if err != nil {
			var invalid *ValidationError
			if !errors.As(err, &invalid) || len(invalid.Fields) == 0 {
				t.Fatalf("ParseQuery(%q): %v, want a ValidationError naming a parameter", raw, err)
			}
			return
		}
		if problem := queryInvariant(q); problem != "" {
			t.Fatalf("ParseQuery(%q) = %+v: %s", raw, q, problem)
		}
	})
}

// queryInvariant returns what is wrong with an accepted query, or "".
func queryInvariant(q Query) string {
	f := q.Filter
	switch {
	case q.Limit < 1 || q.Limit > MaxLimit:
		return "limit out of range"
	case f.Method != "" && (!IsToken(f.Method) || f.Method != strings.ToUpper(f.Method)):
		return "method is not an upper-case token"
	case f.Path != "" && !strings.HasPrefix(f.Path, "/"), f.PathPrefix != "" && !strings.HasPrefix(f.PathPrefix, "/"):
		return "path filter does not start with /"
	case (f.StatusMin == 0) != (f.StatusMax == 0), f.StatusMin != 0 && (f.StatusMin < 100 || f.StatusMax > 599 || f.StatusMin > f.StatusMax):
		return "status range is not within 100-599"
	case !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To):
		return "from is not before to"
	case !isMicroUTC(f.From) || !isMicroUTC(f.To):
		return "from or to is not UTC at microsecond precision"
	}
	if f.IPAddress != "" {
		if problem := ipProblem(f.IPAddress); problem != "" {
			return problem
		}
	}
	if q.After != nil {
		if again, err := DecodeCursor(q.After.Encode()); err != nil || again != *q.After {
			return "the cursor does not round-trip"
		}
	}
	return ""
}

var unreservedZone = regexp.MustCompile(`^[A-Za-z0-9._~-]{0,64}$`)

// ipProblem returns what is wrong with an accepted ip_address, or "".
func ipProblem(ip string) string {
	addr, err := netip.ParseAddr(ip)
	switch {
	case err != nil || addr.String() != ip:
		return "ip_address is not canonical"
	case !unreservedZone.MatchString(addr.Zone()):
		return "ip_address has a zone that is not 1-64 unreserved characters"
	}
	return ""
}

// FuzzParseUnixOrRFC3339 checks accepted bounds against exact arithmetic: a number
// is its value in microseconds rounded up, an RFC 3339 time lies at most a
// microsecond before the bound, and every bound is within (epoch, 9999].
func FuzzParseUnixOrRFC3339(f *testing.F) {
	for _, seed := range []string{
		"1795318885", "1795318885.0000031", "1.7953188850000031e9", "17953188850000031E-7", "1e-300", "0", "0e9",
		"1700000000000", "253402300799.9999991", "1e999999999999", "0x1e5p1", "+5", "5.", "1e+",
		"2026-11-22T03:41:25.0000031Z", "2026-11-22t03:41:25z", "2026-11-22T03:41:25,0000031+01:00",
		"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.9999991Z", "9999-12-31T23:59:59-01:00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseUnixOrRFC3339(s)
		if err != nil {
			if !got.IsZero() || !(errors.Is(err, errTimeBoundSyntax) || errors.Is(err, errNotAfterEpoch) || errors.Is(err, errAfterYear9999)) {
				t.Fatalf("ParseUnixOrRFC3339(%q) = %v, %v: not a known refusal", s, got, err)
			}
			return
		}
		micros := got.UnixMicro()
		if got.Location() != time.UTC || !got.Equal(time.UnixMicro(micros)) || micros <= 0 || micros > lastBoundMicros {
			t.Fatalf("ParseUnixOrRFC3339(%q) = %v: not UTC whole microseconds in (epoch, 9999]", s, got)
		}
		if exact, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s)); err == nil {
			if got.Before(exact) || got.Sub(exact) > time.Microsecond {
				t.Fatalf("ParseUnixOrRFC3339(%q) = %v, want %v rounded up to the microsecond", s, got, exact)
			}
			return
		}
		// big.Rat is exact but slow with huge exponents; the bounds keep it quick.
		if _, exponent, _ := strings.Cut(strings.ToLower(s), "e"); len(strings.TrimLeft(exponent, "+-")) > 3 {
			return
		}
		value, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("ParseUnixOrRFC3339(%q) = %v, but it is neither RFC 3339 nor a number", s, got)
		}
		scaled := value.Mul(value, big.NewRat(1e6, 1))
		ceil := new(big.Int).Quo(new(big.Int).Add(scaled.Num(), new(big.Int).Sub(scaled.Denom(), big.NewInt(1))), scaled.Denom())
		if ceil.Cmp(big.NewInt(micros)) != 0 {
			t.Fatalf("ParseUnixOrRFC3339(%q) = %d microseconds, want %s", s, micros, ceil)
		}
	})
}

func isMicroUTC(t time.Time) bool {
	return t.IsZero() || (t.Location() == time.UTC && t.Equal(t.Truncate(time.Microsecond)))
}

func FuzzDecodeCursor(f *testing.F) {
	for _, seed := range []string{
		Cursor{CreatedAt: testNow, ID: "0190f5a2-3b4c-7d8e-9f00-112233445566"}.Encode(),
		"MTp4Onk", "", "=", "MToxOnx8fA", "MTotMTpmb28",
		"MTowMDAwMDAwMDE6MDE5MEY1QTItM0I0Qy03RDhFLTlGMDAtMTEyMjMzNDQ1NTY2", // upper-case id, leading zeros
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(s)
		if err != nil {
			return
		}
		if c.CreatedAt.Location() != time.UTC || c.CreatedAt.UnixMicro() <= 0 {
			t.Fatalf("DecodeCursor(%q) = %+v: time not positive UTC", s, c)
		}
		if id, ok := CanonicalID(c.ID); !ok || id != c.ID {
			t.Fatalf("DecodeCursor(%q) = %+v: id not canonical", s, c)
		}
		if again, err := DecodeCursor(c.Encode()); err != nil || again != c {
			t.Fatalf("cursor %+v from %q re-encodes to %q, which decodes to %+v, %v", c, s, c.Encode(), again, err)
		}
	})
}

func FuzzCursorRoundTrip(f *testing.F) {
	f.Add(testNow.UnixMicro(), []byte("0123456789abcdef"))
	f.Add(int64(1), make([]byte, 16))
	f.Add(int64(1<<63-1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, micros int64, idBytes []byte) {
		id, err := uuid.FromBytes(idBytes)
		if micros <= 0 || err != nil {
			return
		}
		c := Cursor{CreatedAt: time.UnixMicro(micros).UTC(), ID: id.String()}
		got, err := DecodeCursor(c.Encode())
		if err != nil || got != c {
			t.Fatalf("cursor %+v encoded as %q decodes to %+v, %v", c, c.Encode(), got, err)
		}
	})
}
