package statsengine

import (
	"context"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// ScopeHours are the hours of scopes' messages, for KeepHours: the hours
// holding some, each apart, so that messages far apart in time (a purge of
// several retention classes) cost their own hours alone, not the span
// between them.
type ScopeHours map[ScopeHour]struct{}

// ScopeHour is one hour of one scope.
type ScopeHour struct {
	Scope domain.Scope
	Hour  time.Time
}

// Add adds the hour of t of scope.
func (h ScopeHours) Add(scope domain.Scope, t time.Time) {
	h[ScopeHour{scope, floorHour(t)}] = struct{}{}
}

// KeepHours is KeepAll of each of hours: what a store runs before its purge
// deletes the messages of those hours, so that their rollups outlive them.
func (m *Marked) KeepHours(ctx context.Context, hours ScopeHours) error {
	for h := range hours {
		if err := m.KeepAll(ctx, h.Scope, h.Hour, h.Hour.Add(time.Hour)); err != nil {
			return err
		}
	}
	return nil
}
