package elastic

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/elastic/esindex"
	"github.com/reqlog/reqlog/adapters/statsengine"
)

// Deferred returns a store of cfg, checked at once but set up only by start
// and closed by stop, for a framework that hands the store out before
// anything starts (elasticfx). start checks the cluster, installs the index
// template, creates the daily indices of today and tomorrow, waits for their
// replicas and warms the cluster's indexing path (esindex.Indices.PrepareWrites,
// within Config.WarmUp), then marks in the background the messages an earlier
// version stored without the statistics' marks (Store.MarkExisting), which
// stop ends; it logs on log (nil: nowhere).
func Deferred(cfg Config, log *zap.Logger) (s *Store, start, stop func(context.Context) error, err error) {
	s, err = newUnopened(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("elastic")
	marking, stopMarking := context.WithCancel(context.Background())
	marked := make(chan struct{})
	start = func(ctx context.Context) error {
		if err := s.setUp(ctx, time.Now()); err != nil {
			close(marked)
			return err
		}
		// Not fatal: the first write of a day creates its index anyway.
		warm, err := s.indices.PrepareWrites(ctx, time.Now())
		if err != nil {
			log.Warn("preparing the daily indices of today and tomorrow", zap.Error(err))
		}
		esindex.LogWarmUp(log, warm)
		names := s.indices.Names()
		log.Info("Elasticsearch store ready",
			zap.String("template", names.Template()),
			zap.String("indices", names.ReadPattern()),
			zap.Duration("read_lag", s.ReadLag()))
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

// DeferredAlertStore is the alert store on s's cluster and index prefix,
// whose indices start creates (after s's own start has set it up).
func DeferredAlertStore(s *Store) (a *AlertStore, start func(context.Context) error) {
	a = s.alertStore()
	return a, a.SetUp
}
