package domain

import (
	"testing"
	"time"
)

// duration_ms is bounded by its exact value, and a value whose nanoseconds
// overflow int64 is refused rather than wrapped around.
func TestParseDurationMSBound(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration
		ok   bool
	}{
		{"86400000", MaxDuration, true},
		{"86400000.000", MaxDuration, true},
		{"86399999.9999999", MaxDuration - time.Microsecond, true},
		{"86400000.0000001", 0, false},
		{"86400000.001", 0, false},
		{"18446744073709.552", 0, false}, // × 10^6 ns wraps to 384 ns
		{"9223372036854.775808", 0, false},
		{"1e14", 0, false},
		{"0.0009", 0, true},
	} {
		got, ok := parseDurationMS(c.text, true)
		if got != c.want || ok != c.ok {
			t.Errorf("parseDurationMS(%s) = %v, %v; want %v, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}
