package mongo

import (
	"context"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/statsengine"
)

// Deferred returns a store of cfg, checked at once but connected only by
// start (which pings and creates the indexes, as New does) and disconnected
// by stop, for a framework that hands the store out before anything starts
// (mongofx). start then marks in the background the messages an earlier
// version stored without the statistics' marks (Store.MarkExisting), which
// stop ends. start logs on log (nil: nowhere).
func Deferred(cfg Config, log *zap.Logger) (s *Store, start, stop func(context.Context) error, err error) {
	s, err = newUnopened(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("mongo").With(zap.String("database", s.cfg.Database), zap.String("collection", s.cfg.Collection))
	marking, stopMarking := context.WithCancel(context.Background())
	marked := make(chan struct{})
	start = func(ctx context.Context) error {
		if err := s.open(ctx); err != nil {
			close(marked)
			return err
		}
		if s.TTLActive() {
			log.Info("MongoDB store ready; the server deletes expired messages (TTL index)")
		} else {
			log.Warn("MongoDB store ready without a TTL index; the periodic purge deletes expired messages",
				zap.NamedError("reason", s.ttlRefused))
		}
		go statsengine.MarkInBackground(marking, log, s.MarkExisting, marked)
		return nil
	}
	stop = func(ctx context.Context) error {
		stopMarking()
		<-marked
		return s.Close(ctx)
	}
	return s, start, stop, nil
}

// DeferredAlertStore is the alert store on s's database, whose indexes start
// creates (after s's own start has connected).
func DeferredAlertStore(s *Store) (a *AlertStore, start func(context.Context) error) {
	a = &AlertStore{store: s}
	return a, a.setUp
}
