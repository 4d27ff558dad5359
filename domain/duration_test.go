package domain

import (
	"strings"
	"testing"
	"time"
)

func TestDurationMSInSubmissions(t *testing.T) {
	micros := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	cases := []struct {
		raw  string // duration_ms as submitted; "<absent>" leaves it out
		want time.Duration
		has  bool
	}{
		{"<absent>", 0, false},
		{"null", 0, false},
		{"0", 0, true}, // a zero duration is not an absent one
		{"12.345", micros(12345), true},
		{"12.3456789", micros(12345), true}, // decimals beyond microseconds dropped
		{"0.0009", 0, true},
		{"0.001", micros(1), true},
		{"-0", 0, true}, // zero, whatever its sign
		{"250", micros(250_000), true},
		{"2.5e2", micros(250_000), true},
		{"86400000", MaxDuration, true},
	}
	for _, c := range cases {
		s := mustParse(t, validItem("duration_ms", c.raw)).Submissions[0]
		if s.Duration != c.want || s.HasDuration != c.has {
			t.Errorf("duration_ms %s: got %s (HasDuration %v), want %s (%v)", c.raw, s.Duration, s.HasDuration, c.want, c.has)
		}
	}
}

func TestDurationMSErrors(t *testing.T) {
	for _, raw := range []string{`"12"`, `"12.5"`, `-1`, `-0.001`, `86400000.001`, `86400000.0009`, `86400001`, `1e300`, `true`, `{}`, `[1]`, `""`} {
		t.Run(raw, func(t *testing.T) {
			_, err := parse(t, validItem("duration_ms", raw))
			assertFields(t, err, "duration_ms")
		})
	}
	// In a batch the item index prefixes the field.
	_, err := parse(t, "["+validItem()+","+validItem("duration_ms", `"5"`)+"]")
	assertFields(t, err, "[1].duration_ms")
}

func TestDurationMSInEnvelopeItems(t *testing.T) {
	item := `{"app":"sdk-app","created_at":1795262400,"method":"GET","path":"/","status_code":200,"duration_ms":5.5,"request":{},"response":{}}`
	b := mustParse(t, `{"messages":[`+item+`,`+strings.Replace(item, `"duration_ms":5.5,`, "", 1)+`]}`)
	if s := b.Submissions[0]; s.Duration != 5500*time.Microsecond || !s.HasDuration {
		t.Errorf("envelope item with duration_ms 5.5: got %s (HasDuration %v)", s.Duration, s.HasDuration)
	}
	if s := b.Submissions[1]; s.HasDuration {
		t.Errorf("envelope item without duration_ms has one: %s", s.Duration)
	}
	_, err := parse(t, `{"messages":[`+strings.Replace(item, "5.5", "-5.5", 1)+`]}`)
	assertFields(t, err, "[0].duration_ms")
}

// request.size and response.size count the body's UTF-8 bytes after JSON
// unescaping, before redaction.
func TestContentSizes(t *testing.T) {
	s := mustParse(t, validItem(
		"request", `{"body":"{\"a\":\"\u00e9\",\"password\":\"hunter2\"}","header":{}}`,
		"response", `{"status_code":200,"body":""}`,
	)).Submissions[0]
	want := len(`{"a":"é","password":"hunter2"}`)
	if s.Request.Size != want || s.Response.Size != 0 {
		t.Errorf("sizes %d and %d, want %d and 0", s.Request.Size, s.Response.Size, want)
	}
	if strings.Contains(s.Request.Body, "hunter2") {
		t.Fatalf("the password was not redacted, so the size proves nothing: %s", s.Request.Body)
	}
}
