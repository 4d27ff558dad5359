package mongo

import (
	"context"

	"go.uber.org/zap"
)

// Deferred returns a store of cfg, checked at once but connected only by
// start (which pings and creates the indexes, as New does) and disconnected
// by stop, for a framework that hands the store out before anything starts
// (mongofx). start logs on log (nil: nowhere).
func Deferred(cfg Config, log *zap.Logger) (s *Store, start, stop func(context.Context) error, err error) {
	s, err = newUnopened(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("mongo").With(zap.String("database", s.cfg.Database), zap.String("collection", s.cfg.Collection))
	start = func(ctx context.Context) error {
		if err := s.open(ctx); err != nil {
			return err
		}
		if s.TTLActive() {
			log.Info("MongoDB store ready; the server deletes expired messages (TTL index)")
		} else {
			log.Warn("MongoDB store ready without a TTL index; the periodic purge deletes expired messages",
				zap.NamedError("reason", s.ttlRefused))
		}
		return nil
	}
	return s, start, s.Close, nil
}

// DeferredAlertStore is the alert store on s's database, whose indexes start
// creates (after s's own start has connected).
func DeferredAlertStore(s *Store) (a *AlertStore, start func(context.Context) error) {
	a = &AlertStore{store: s}
	return a, a.setUp
}
