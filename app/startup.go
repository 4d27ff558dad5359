package app

import (
	"fmt"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// CheckReadLag refuses a visibility delay shorter than the store's read lag: a
// message could then become visible before reads can find it.
func CheckReadLag(policy domain.Policy, store ports.MessageStore) error {
	if lag := store.ReadLag(); policy.VisibilityDelay < lag {
		return &ConfigError{
			Setting: "REQLOG_VISIBILITY_DELAY",
			Value:   formatDuration(policy.VisibilityDelay),
			Reason:  fmt.Sprintf("must be at least the store's read lag of %s", formatDuration(lag)),
		}
	}
	return nil
}
