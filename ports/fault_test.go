package ports_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/reqlog/reqlog/ports"
)

type brokenFile string

func (b brokenFile) Error() string { return "/data/" + string(b) + " is corrupt" }
func (b brokenFile) Fault() string { return string(b) + " is corrupt" }

// Faults finds every fault in a tree of wrapped and joined errors, in order.
func TestFaults(t *testing.T) {
	err := errors.Join(fmt.Errorf("ping: %w", brokenFile("a.db")), errors.New("disk full"),
		fmt.Errorf("x: %w", errors.Join(brokenFile("b.db"))))
	if got := ports.Faults(err); !slices.Equal(got, []string{"a.db is corrupt", "b.db is corrupt"}) {
		t.Errorf("Faults = %q", got)
	}
	if got := ports.Faults(errors.New("plain")); got != nil {
		t.Errorf("Faults of an error without one = %q", got)
	}
}
