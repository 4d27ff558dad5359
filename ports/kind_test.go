package ports_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/reqlog/reqlog/ports"
)

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		err       error
		want      ports.ErrorKind
		retryable bool
		transient bool
	}{
		{nil, ports.KindNone, false, false},
		{errors.New("boom"), ports.KindOther, false, false},
		{fmt.Errorf("item 2: %w", ports.ErrConflict), ports.KindConflict, false, false},
		{fmt.Errorf("queue full: %w", ports.ErrOverloaded), ports.KindOverloaded, true, true},
		{fmt.Errorf("dial: %w", ports.ErrUnavailable), ports.KindUnavailable, true, true},
		{fmt.Errorf("mongo: %w", context.DeadlineExceeded), ports.KindUnavailable, true, true},
		{fmt.Errorf("mongo: %w", context.Canceled), ports.KindCanceled, false, true},
		// The group committer's "caller gone" wraps both: the caller is gone.
		{fmt.Errorf("%w: %w", ports.ErrUnavailable, context.Canceled), ports.KindCanceled, false, true},
	} {
		got := ports.KindOf(tc.err)
		if got != tc.want || got.Retryable() != tc.retryable || got.Transient() != tc.transient {
			t.Errorf("KindOf(%v) = %v (retryable %v, transient %v), want %v (%v, %v)",
				tc.err, got, got.Retryable(), got.Transient(), tc.want, tc.retryable, tc.transient)
		}
	}
}
