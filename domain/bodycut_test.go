package domain_test

import (
	"testing"

	"github.com/reqlog/reqlog/domain"
)

func TestCutBody(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"short", "short"},
		{"0123456789", "0123456789"},
		{"0123456789ab", "0123456789…[truncated by reqlog capture: 12 bytes total]"},
		{"012345678é", "012345678…[truncated by reqlog capture: 12 bytes total]"}, // é is bytes 10 and 11: not cut in half
		{"0123456789abc…[truncated by reqlog capture: at least 99 bytes]", "0123456789…[truncated by reqlog capture: at least 99 bytes]"},
		{"0123…[truncated by reqlog capture: at least 99 bytes]", "0123…[truncated by reqlog capture: at least 99 bytes]"},
	} {
		if got := domain.CutBody(c.body, 10, 12); got != c.want {
			t.Errorf("CutBody(%q, 10, 12) = %q, want %q", c.body, got, c.want)
		}
	}
}
