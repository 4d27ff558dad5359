package classpurge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/classpurge"
	"github.com/reqlog/reqlog/domain"
)

// A class whose retention cannot be told holds back no other: the others
// are purged at their keep and bodies, and the error is returned with the
// sum purged.
func TestAClassThatCannotBeToldHoldsBackNoOther(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	short, broken, gone := domain.RetentionClass{Account: "a", Rule: "short"}, domain.RetentionClass{Account: "a", Rule: "broken"},
		domain.RetentionClass{Account: "b", Rule: "removed"}
	purged := map[domain.RetentionClass][2]time.Time{}
	store := classpurge.Store{Name: "test",
		PurgeExpired: func(context.Context, time.Time) (int64, error) { return 2, nil },
		Classes: func(context.Context) ([]domain.RetentionClass, error) {
			return []domain.RetentionClass{broken, short, gone}, nil
		},
		Purge: func(_ context.Context, c domain.RetentionClass, keptFrom, bodiesFrom time.Time) (int64, error) {
			purged[c] = [2]time.Time{keptFrom, bodiesFrom}
			return 3, nil
		}}
	errUnknown := errors.New("rule set unreadable")
	n, err := store.PurgeRetention(t.Context(), now, func(_ context.Context, c domain.RetentionClass) (time.Duration, time.Duration, bool, error) {
		switch c {
		case broken:
			return 0, 0, false, errUnknown
		case short:
			return 24 * time.Hour, time.Hour, true, nil
		}
		return 0, 0, false, nil // removed: its stamped expiry stands
	})
	if n != 5 || !errors.Is(err, errUnknown) {
		t.Errorf("PurgeRetention = %d, %v; want 2 expired and 3 of the short class, and the broken class's error", n, err)
	}
	if want := [2]time.Time{now.Add(-24 * time.Hour), now.Add(-time.Hour)}; len(purged) != 1 || purged[short] != want {
		t.Errorf("purged %v, want the short class alone from %v", purged, want)
	}
}
