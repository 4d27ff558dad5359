package elastic

import (
	"context"

	"github.com/reqlog/reqlog/adapters/elastic/esalert"
)

// AlertStore is the Elasticsearch ports.AlertStore (esalert.Store) on the
// message store's cluster and index prefix.
type AlertStore = esalert.Store

// NewAlertStore returns the alert store on s's cluster and index prefix, and
// creates its indices if they are missing.
func NewAlertStore(ctx context.Context, s *Store) (*AlertStore, error) {
	a := s.alertStore()
	if err := a.SetUp(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// alertStore is the alert store on s's cluster and prefix, not set up.
func (s *Store) alertStore() *AlertStore {
	return esalert.New(s.client, esalert.Config{Prefix: s.cfg.IndexPrefix,
		AutoExpandReplicas: s.cfg.indexConfig().AutoExpandReplicas()})
}
