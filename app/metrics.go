package app

import (
	"context"
	"errors"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// Store operations, as Metrics names them.
const (
	OpAppend = "append"
	OpList   = "list"
	OpGet    = "get"
	OpLookup = "lookup"
	OpPurge  = "purge"
	OpStats  = "stats"
)

// Kinds of store errors, as Metrics names them: the names of their
// ports.ErrorKind (ports.KindOf(err).String()).
const (
	// ErrorUnavailable: the store could not be reached or did not answer in time
	// (ports.ErrUnavailable, a deadline); the service answered 503.
	ErrorUnavailable = "unavailable"
	// ErrorOverloaded: the store is busy and asks to be called later (an
	// Elasticsearch 429).
	ErrorOverloaded = "overloaded"
	// ErrorCanceled: the caller went away before the store answered.
	ErrorCanceled = "canceled"
	// ErrorOther: anything else, a bug or a refusal of the store.
	ErrorOther = "other"
)

// Metrics receives what the use cases measure of the store. An adapter exports
// it (Prometheus, in httpapi); app itself knows no metrics library.
type Metrics interface {
	// ObserveAppend reports one Append of size messages that took took,
	// whether it failed or not.
	ObserveAppend(size int, took time.Duration)
	// ObserveStoreError reports a failed store call: operation is one of the Op
	// constants, kind the name of its ports.ErrorKind (the Error variables). A lookup that finds nothing
	// is not a failure.
	ObserveStoreError(operation, kind string)
}

// Observe returns store reporting every Append and every failed call to m; with a
// nil m it returns store itself.
func Observe(store ports.MessageStore, m Metrics) ports.MessageStore {
	if m == nil {
		return store
	}
	return observedStore{MessageStore: store, metrics: m}
}

type observedStore struct {
	ports.MessageStore
	metrics Metrics
}

func (s observedStore) Append(ctx context.Context, msgs []domain.Message) error {
	began := time.Now()
	err := s.MessageStore.Append(ctx, msgs)
	s.metrics.ObserveAppend(len(msgs), time.Since(began))
	return s.observe(OpAppend, err)
}

func (s observedStore) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	page, err := s.MessageStore.List(ctx, q, now)
	return page, s.observe(OpList, err)
}

func (s observedStore) Get(ctx context.Context, scope domain.Scope, idOrReference string, now time.Time) (domain.Message, error) {
	m, err := s.MessageStore.Get(ctx, scope, idOrReference, now)
	return m, s.observe(OpGet, err)
}

func (s observedStore) Stats(ctx context.Context, q stats.Query, now time.Time) (stats.Stats, error) {
	st, err := s.MessageStore.Stats(ctx, q, now)
	return st, s.observe(OpStats, err)
}

func (s observedStore) Lookup(ctx context.Context, scope domain.Scope, ids []string) ([]domain.Message, error) {
	found, err := s.MessageStore.Lookup(ctx, scope, ids)
	return found, s.observe(OpLookup, err)
}

// LookupTallies is the store's, or none found when it cannot tell
// (ports.TallyLookup).
func (s observedStore) LookupTallies(ctx context.Context, scope domain.Scope, ids []string) ([]ports.StoredTally, error) {
	tl, ok := s.MessageStore.(ports.TallyLookup)
	if !ok {
		return nil, nil
	}
	found, err := tl.LookupTallies(ctx, scope, ids)
	return found, s.observe(OpLookup, err)
}

func (s observedStore) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	n, err := s.MessageStore.PurgeExpired(ctx, now)
	return n, s.observe(OpPurge, err)
}

// PurgeRetention is the store's, or its PurgeExpired when it keeps no
// retention classes apart.
func (s observedStore) PurgeRetention(ctx context.Context, now time.Time, current ports.RetentionOf) (int64, error) {
	rp, ok := s.MessageStore.(ports.RetentionPurger)
	if !ok {
		return s.PurgeExpired(ctx, now)
	}
	n, err := rp.PurgeRetention(ctx, now, current)
	return n, s.observe(OpPurge, err)
}

// observe reports err, if it is a failure, and returns it unchanged.
func (s observedStore) observe(operation string, err error) error {
	if err != nil && !errors.Is(err, ports.ErrNotFound) {
		s.metrics.ObserveStoreError(operation, ports.KindOf(err).String())
	}
	return err
}

// Reasons the delivery worker disables an endpoint, as AlertMetrics names
// them.
const (
	DisabledGone    = "gone"    // it answered 410 Gone
	DisabledTimeout = "timeout" // no reply within the timeout for AlertConfig.EndpointDisableAfter
)

// AlertMetrics receives what keeps one account's alerting from delaying
// another's: the bounds, the budget and the back-off at work. The Metrics of
// the fx graph gets it when it implements this too. No account is named (the
// logs name it): a label per account would grow without bound.
type AlertMetrics interface {
	// ObserveDeliveriesDropped reports deliveries dropped from a full queue:
	// tests of alert.test events, others of the rest.
	ObserveDeliveriesDropped(tests, others int)
	// ObserveEndpointDisabled reports an endpoint the worker disabled, for
	// reason DisabledGone or DisabledTimeout.
	ObserveEndpointDisabled(reason string)
	// ObserveEvaluationsDeferred reports rules left to the next slot because
	// their account used its budget, or the slot ended.
	ObserveEvaluationsDeferred(rules int)
	// ObserveSlotsSkipped reports evaluation slots in which no evaluation
	// started (the pass before ran past them).
	ObserveSlotsSkipped(slots int)
}

// nopAlertMetrics counts nothing, for a configuration without Metrics.
type nopAlertMetrics struct{}

func (nopAlertMetrics) ObserveDeliveriesDropped(int, int) {}
func (nopAlertMetrics) ObserveEndpointDisabled(string)    {}
func (nopAlertMetrics) ObserveEvaluationsDeferred(int)    {}
func (nopAlertMetrics) ObserveSlotsSkipped(int)           {}

func alertMetricsOf(c AlertConfig) AlertMetrics {
	if c.Metrics == nil {
		return nopAlertMetrics{}
	}
	return c.Metrics
}
