package domain

import (
	"errors"
	"net/netip"
	"net/url"
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
	case f.Method != "" && (!isToken(f.Method) || f.Method != strings.ToUpper(f.Method)):
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
		if addr, err := netip.ParseAddr(f.IPAddress); err != nil || addr.String() != f.IPAddress {
			return "ip_address is not canonical"
		}
	}
	if q.After != nil {
		if again, err := DecodeCursor(q.After.Encode()); err != nil || again != *q.After {
			return "the cursor does not round-trip"
		}
	}
	return ""
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
