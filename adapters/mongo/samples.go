package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
)

// StreamSamples yields the sample of each of scope's messages readable at
// now that passes f (ports.SampleStreamer).
func (s *Store) StreamSamples(ctx context.Context, scope domain.Scope, f domain.Filter, now time.Time, yield func(stats.Sample) error) error {
	filter, possible := listFilter(domain.Query{Scope: scope, Filter: f}, now)
	if !possible {
		return nil
	}
	return eachNarrow(ctx, s.coll, "stats", filter, func(m *domain.Message) error { return yield(stats.SampleOf(*m)) })
}

// narrowMessage is what the statistics read of a stored message.
type narrowMessage struct {
	CreatedAt  int64  `bson:"createdAt"`
	StatusCode int32  `bson:"statusCode"`
	Duration   *int64 `bson:"durationMicros"`
	Path       string `bson:"path"`
	Name       string `bson:"name"`
	Template   string `bson:"routeTemplate"`
	VisibleAt  int64  `bson:"visibleAt"`
	ExpiresAt  int64  `bson:"expiresAt"`
	Tally      bool   `bson:"tally"`
}

// narrowProjection is narrowMessage's fields.
var narrowProjection = func() bson.D {
	projection := bson.D{{Key: fieldID, Value: 0}}
	for _, field := range []string{fieldCreatedAt, fieldStatus, fieldDuration, fieldPath, fieldName, fieldTemplate, fieldVisibleAt, fieldExpiresAt, fieldTally} {
		projection = append(projection, bson.E{Key: field, Value: 1})
	}
	return projection
}()

// eachNarrow reads only the fields the statistics need of each message of
// coll that filter selects, in the server's natural order (no sort to pay
// for), and yields it.
func eachNarrow(ctx context.Context, coll *mongodrv.Collection, op string, filter bson.D, yield func(*domain.Message) error) error {
	return findEach(ctx, coll, op, filter, func(n *narrowMessage) error {
		m := domain.Message{CreatedAt: time.UnixMicro(n.CreatedAt).UTC(), StatusCode: int(n.StatusCode), Path: n.Path, Name: n.Name,
			Route: n.Template, VisibleAt: time.UnixMicro(n.VisibleAt).UTC(), ExpiresAt: time.UnixMicro(n.ExpiresAt).UTC(), Tally: n.Tally}
		if n.Duration != nil {
			m.Duration, m.HasDuration = time.Duration(*n.Duration)*time.Microsecond, true
		}
		return yield(&m)
	}, narrowProjection)
}

// statsBatchSize is how many projected messages one reply of the stream
// carries: each is about a hundred bytes.
const statsBatchSize = 10000
