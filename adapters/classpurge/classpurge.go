// Package classpurge applies the retention classes' current retention for
// the stores that find their classes by query: MongoDB, a class's messages
// in the same collection as the others', and Elasticsearch, a class's in
// daily indices of its own.
package classpurge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Purge is how a store purges one class: it deletes the class's messages
// created at or before keptFrom and empties the bodies of those created at
// or before bodiesFrom, and returns how many it deleted.
type Purge func(ctx context.Context, class domain.RetentionClass, keptFrom, bodiesFrom time.Time) (int64, error)

// Store is what a store gives the purge of its classes.
type Store struct {
	Name         string // in errors
	PurgeExpired func(ctx context.Context, now time.Time) (int64, error)
	// Classes lists the classes of the messages stored.
	Classes func(ctx context.Context) ([]domain.RetentionClass, error)
	Purge   Purge
}

// PurgeRetention does what ports.RetentionPurger's does: PurgeExpired,
// then each class purged by its current retention at now. A class current
// cannot tell of holds back no other: its error is joined to the rest; a
// purge that fails ends the walk.
func (s Store) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	purged, err := s.PurgeExpired(ctx, now)
	if err != nil {
		return purged, err
	}
	classes, err := s.Classes(ctx)
	if err != nil {
		return purged, err
	}
	var errs []error
	for _, class := range classes {
		keep, bodies, ok, err := current(ctx, class)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: purge: the retention of account %s's rule %s: %w", s.Name, class.Account, class.Rule, err))
			continue
		}
		if !ok {
			continue
		}
		n, err := s.Purge(ctx, class, now.Add(-keep), now.Add(-bodies))
		purged += n
		if err != nil {
			return purged, err
		}
	}
	return purged, errors.Join(errs...)
}
