package mongo

import (
	"context"
	"errors"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Stats is being written (issue 19): this placeholder keeps the build whole.
func (s *Store) Stats(context.Context, domain.StatsQuery, time.Time) (domain.Stats, error) {
	return domain.Stats{}, errors.New("mongo: stats: not implemented yet")
}
