package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/alertrecord"
	"github.com/reqlog/reqlog/adapters/rescrubrecord"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.AlertStore = (*AlertStore)(nil)

// Collections of alerting, beside the messages in the store's database.
const (
	collAlertRules       = "alert_rules"
	collAlertEndpoints   = "alert_endpoints"
	collAlertStates      = "alert_states"
	collAlertTransitions = "alert_transitions"
	collAlertDeliveries  = "alert_deliveries"
	collAlertAttempts    = "alert_attempts"
	collAlertLeases      = "alert_leases"
)

// AlertStore is the MongoDB ports.AlertStore, on the message store's client
// and database, one collection per kind of record (alertrecord's documents).
//
// Compare-and-set rests on one thing only: an insert of an _id that exists
// fails. An update whose filter names the version it expects is not enough:
// FerretDB v1 (the tests' server) runs an update as a read and a write without
// a transaction, and the conformance suite caught two concurrent swaps both
// "winning" there. So what changes under compare-and-set (rule states, leases,
// the delivery queue) is kept as versions: each write inserts the next
// version, _id "<key>/<version>", which only one writer can; the latest
// version is the record. A writer checks that the version it expects is
// still there before inserting the next, and that none above its own appeared
// after (a version deleted since could otherwise be inserted again by a
// writer that read long before), then deletes the one it replaced
// (swapVersion). On MongoDB itself this costs a few reads more than an update
// would.
//
// Idempotent writes (history, queue entries) are inserts of derived ids whose
// duplicate-key errors are dropped. Rules and endpoints, written only by their
// owner's API calls, are replaced in place. A state swapped in just as its
// rule is deleted is deleted again by the swap, which looks for the rule once
// more afterwards.
type AlertStore struct {
	store *Store
}

// NewAlertStore returns the alert store on s, which must be open, and creates
// its indexes if they are missing.
func NewAlertStore(ctx context.Context, s *Store) (*AlertStore, error) {
	a := &AlertStore{store: s}
	if err := a.setUp(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *AlertStore) coll(name string) *mongodrv.Collection {
	return a.store.coll.Database().Collection(name, options.Collection().
		SetWriteConcern(a.store.cfg.WriteConcern))
}

// setUp creates the indexes of the queries, one command each (see
// ensureIndexes).
func (a *AlertStore) setUp(ctx context.Context) error {
	scope := bson.D{{Key: alertrecord.FieldAccount, Value: 1}, {Key: alertrecord.FieldDomain, Value: 1}}
	doc := func(fields ...string) bson.D {
		var keys bson.D
		for _, f := range fields {
			keys = append(keys, bson.E{Key: docField + f, Value: 1})
		}
		return keys
	}
	type index struct {
		coll  string
		model mongodrv.IndexModel
	}
	named := func(coll, name string, keys bson.D) index {
		return index{coll, mongodrv.IndexModel{Keys: keys, Options: options.Index().SetName(name)}}
	}
	indexes := []index{
		named(collErasures, "account_id", bson.D{{Key: "account", Value: 1}, {Key: "id", Value: -1}}),
		named(collAlertRules, "scope_created", append(append(bson.D{}, scope...), bson.E{Key: alertrecord.FieldCreatedAt, Value: 1})),
		named(collAlertEndpoints, "scope_created", append(append(bson.D{}, scope...), bson.E{Key: alertrecord.FieldCreatedAt, Value: 1})),
		named(collAlertStates, "scope", doc(alertrecord.FieldAccount, alertrecord.FieldDomain)),
		named(collAlertTransitions, "rule_seq", bson.D{{Key: alertrecord.FieldRuleID, Value: 1}, {Key: alertrecord.FieldSeq, Value: -1}}),
		named(collAlertTransitions, "at", bson.D{{Key: alertrecord.FieldAt, Value: 1}}),
		named(collAlertDeliveries, "due", doc(alertrecord.FieldStatus, alertrecord.FieldNextAttemptAt)),
		named(collAlertDeliveries, "updated", doc(alertrecord.FieldUpdatedAt)),
		named(collAlertAttempts, "endpoint_newest", append(append(bson.D{}, scope...), bson.E{Key: alertrecord.FieldEndpointID, Value: 1},
			bson.E{Key: alertrecord.FieldAt, Value: -1})),
		named(collAlertAttempts, "at", bson.D{{Key: alertrecord.FieldAt, Value: 1}}),
		named(collRescrubJobs, "account_number", bson.D{{Key: rescrubrecord.FieldAccount, Value: 1}, {Key: rescrubrecord.FieldNumber, Value: -1}}),
		named(collRescrubJobs, "state", bson.D{{Key: rescrubrecord.FieldState, Value: 1}}),
	}
	for _, coll := range []string{collAlertStates, collAlertDeliveries, collAlertLeases, collRuleSets} {
		for _, m := range versionIndexes() {
			indexes = append(indexes, index{coll, m})
		}
	}
	for _, ix := range indexes {
		if _, err := a.coll(ix.coll).Indexes().CreateOne(ctx, ix.model); err != nil {
			return storeError(ctx, "creating alert indexes", err)
		}
	}
	return nil
}

func scoped(scope domain.Scope, id string) bson.D {
	return bson.D{{Key: fieldID, Value: id}, {Key: alertrecord.FieldAccount, Value: scope.Account}, {Key: alertrecord.FieldDomain, Value: scope.Domain}}
}

func isDuplicate(err error) bool {
	var we mongodrv.WriteException
	if errors.As(err, &we) {
		for _, e := range we.WriteErrors {
			if e.Code == codeDuplicateKey {
				return true
			}
		}
	}
	return onlyDuplicates(err)
}

func notFoundError(what, id string) error {
	return fmt.Errorf("mongo: %s %q: %w", what, id, ports.ErrNotFound)
}

// insert stores a new document; a taken _id is ErrExists.
func (a *AlertStore) insert(ctx context.Context, coll, what, id string, doc any) error {
	_, err := a.coll(coll).InsertOne(ctx, doc)
	switch {
	case err == nil:
		return nil
	case isDuplicate(err):
		return fmt.Errorf("mongo: %s %q: %w", what, id, ports.ErrExists)
	}
	return storeError(ctx, "insert "+what, err)
}

// replace replaces the document filter selects; none is ErrNotFound.
func (a *AlertStore) replace(ctx context.Context, coll, what, id string, filter bson.D, doc any) error {
	res, err := a.coll(coll).ReplaceOne(ctx, filter, doc)
	if err != nil {
		return storeError(ctx, "replace "+what, err)
	}
	if res.MatchedCount == 0 {
		return notFoundError(what, id)
	}
	return nil
}

// findAll decodes every document filter selects, in sort order, at most limit
// (0: all), through decode.
func findAll[R any, T any](ctx context.Context, coll *mongodrv.Collection, op string, filter bson.D, sort bson.D, limit int64, decode func(R) (T, error)) ([]T, error) {
	opts := options.Find().SetSort(sort)
	if limit > 0 {
		opts.SetLimit(limit)
	}
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, storeError(ctx, op, err)
	}
	var records []R
	if err := cur.All(ctx, &records); err != nil {
		return nil, storeError(ctx, op, err)
	}
	out := make([]T, 0, len(records))
	for _, r := range records {
		v, err := decode(r)
		if err != nil {
			return nil, fmt.Errorf("mongo: %s: %w", op, err)
		}
		out = append(out, v)
	}
	return out, nil
}

var oldestFirst = bson.D{{Key: alertrecord.FieldCreatedAt, Value: 1}, {Key: fieldID, Value: 1}}

// CreateRule stores a new rule.
func (a *AlertStore) CreateRule(ctx context.Context, r alerting.Rule) error {
	rec, err := alertrecord.RuleOf(r)
	if err != nil {
		return err
	}
	return a.insert(ctx, collAlertRules, "rule", r.ID, rec)
}

// UpdateRule replaces a stored rule.
func (a *AlertStore) UpdateRule(ctx context.Context, r alerting.Rule) error {
	rec, err := alertrecord.RuleOf(r)
	if err != nil {
		return err
	}
	return a.replace(ctx, collAlertRules, "rule", r.ID, scoped(r.Scope, r.ID), rec)
}

// Rule returns one rule of scope.
func (a *AlertStore) Rule(ctx context.Context, scope domain.Scope, id string) (alerting.Rule, error) {
	var rec alertrecord.Rule
	err := a.coll(collAlertRules).FindOne(ctx, scoped(scope, id)).Decode(&rec)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return alerting.Rule{}, notFoundError("rule", id)
	case err != nil:
		return alerting.Rule{}, storeError(ctx, "rule", err)
	}
	return rec.ToDomain()
}

// Rules returns scope's rules, oldest first.
func (a *AlertStore) Rules(ctx context.Context, scope domain.Scope) ([]alerting.Rule, error) {
	return findAll(ctx, a.coll(collAlertRules), "rules", scopeFilter(scope), oldestFirst, 0, alertrecord.Rule.ToDomain)
}

// AllRules returns every rule.
func (a *AlertStore) AllRules(ctx context.Context) ([]alerting.Rule, error) {
	return findAll(ctx, a.coll(collAlertRules), "rules", bson.D{}, oldestFirst, 0, alertrecord.Rule.ToDomain)
}

// DeleteRule deletes a rule, then its state and history.
func (a *AlertStore) DeleteRule(ctx context.Context, scope domain.Scope, id string) error {
	res, err := a.coll(collAlertRules).DeleteOne(ctx, scoped(scope, id))
	if err != nil {
		return storeError(ctx, "delete rule", err)
	}
	if res.DeletedCount == 0 {
		return notFoundError("rule", id)
	}
	if _, err := a.coll(collAlertStates).DeleteMany(ctx, bson.D{{Key: fieldKey, Value: id}}); err != nil {
		return storeError(ctx, "delete rule state", err)
	}
	if _, err := a.coll(collAlertTransitions).DeleteMany(ctx, bson.D{{Key: alertrecord.FieldRuleID, Value: id}}); err != nil {
		return storeError(ctx, "delete rule history", err)
	}
	return nil
}

// CreateEndpoint stores a new endpoint.
func (a *AlertStore) CreateEndpoint(ctx context.Context, e alerting.Endpoint) error {
	return a.insert(ctx, collAlertEndpoints, "endpoint", e.ID, alertrecord.EndpointOf(e))
}

// UpdateEndpoint replaces a stored endpoint.
func (a *AlertStore) UpdateEndpoint(ctx context.Context, e alerting.Endpoint) error {
	return a.replace(ctx, collAlertEndpoints, "endpoint", e.ID, scoped(e.Scope, e.ID), alertrecord.EndpointOf(e))
}

// Endpoint returns one endpoint of scope.
func (a *AlertStore) Endpoint(ctx context.Context, scope domain.Scope, id string) (alerting.Endpoint, error) {
	var rec alertrecord.Endpoint
	err := a.coll(collAlertEndpoints).FindOne(ctx, scoped(scope, id)).Decode(&rec)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return alerting.Endpoint{}, notFoundError("endpoint", id)
	case err != nil:
		return alerting.Endpoint{}, storeError(ctx, "endpoint", err)
	}
	return rec.ToDomain(), nil
}

// Endpoints returns scope's endpoints, oldest first.
func (a *AlertStore) Endpoints(ctx context.Context, scope domain.Scope) ([]alerting.Endpoint, error) {
	return findAll(ctx, a.coll(collAlertEndpoints), "endpoints", scopeFilter(scope), oldestFirst, 0,
		func(r alertrecord.Endpoint) (alerting.Endpoint, error) { return r.ToDomain(), nil })
}

// DeleteEndpoint deletes an endpoint.
func (a *AlertStore) DeleteEndpoint(ctx context.Context, scope domain.Scope, id string) error {
	res, err := a.coll(collAlertEndpoints).DeleteOne(ctx, scoped(scope, id))
	if err != nil {
		return storeError(ctx, "delete endpoint", err)
	}
	if res.DeletedCount == 0 {
		return notFoundError("endpoint", id)
	}
	return nil
}

// states returns the states of the rules filter selects.
func (a *AlertStore) states(ctx context.Context, filter bson.D) ([]alerting.State, error) {
	versions, err := latestVersions[alertrecord.State](ctx, a.coll(collAlertStates), filter)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.State, 0, len(versions))
	for _, v := range versions {
		st, err := v.Doc.ToDomain()
		if err != nil {
			return nil, fmt.Errorf("mongo: states: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// States returns the states of scope's rules.
func (a *AlertStore) States(ctx context.Context, scope domain.Scope) ([]alerting.State, error) {
	return a.states(ctx, bson.D{{Key: docField + alertrecord.FieldAccount, Value: scope.Account},
		{Key: docField + alertrecord.FieldDomain, Value: scope.Domain}})
}

// AllStates returns every state.
func (a *AlertStore) AllStates(ctx context.Context) ([]alerting.State, error) {
	return a.states(ctx, bson.D{})
}

// SwapState stores next as the rule's state version prev+1 if prev is the
// latest.
func (a *AlertStore) SwapState(ctx context.Context, next alerting.State, prev int64) error {
	rec, err := alertrecord.StateOf(next, prev+1)
	if err != nil {
		return err
	}
	states := a.coll(collAlertStates)
	if err := swapVersion(ctx, states, next.RuleID, prev, rec); errors.Is(err, ports.ErrStale) {
		if _, ruleErr := a.Rule(ctx, next.Scope, next.RuleID); ruleErr != nil {
			return ruleErr // a deleted rule is not found, rather than stale
		}
		return err
	} else if err != nil {
		return err
	}
	// A rule deleted meanwhile: take the state back out.
	if _, err := a.Rule(ctx, next.Scope, next.RuleID); errors.Is(err, ports.ErrNotFound) {
		if _, err := states.DeleteMany(ctx, bson.D{{Key: fieldKey, Value: next.RuleID}}); err != nil {
			return storeError(ctx, "swap state", err)
		}
		return notFoundError("rule", next.RuleID)
	} else if err != nil {
		return err
	}
	return nil
}

// insertMissing inserts docs, dropping duplicate-key errors: those are stored.
func (a *AlertStore) insertMissing(ctx context.Context, coll, op string, docs []any) error {
	if len(docs) == 0 {
		return nil
	}
	_, err := a.coll(coll).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil || onlyDuplicates(err) {
		return nil
	}
	return storeError(ctx, op, err)
}

// AppendTransitions adds transitions not stored yet.
func (a *AlertStore) AppendTransitions(ctx context.Context, trs []alerting.Transition) error {
	docs := make([]any, len(trs))
	for i, tr := range trs {
		docs[i] = alertrecord.TransitionOf(tr)
	}
	return a.insertMissing(ctx, collAlertTransitions, "append transitions", docs)
}

// Transitions returns a rule's history, newest first.
func (a *AlertStore) Transitions(ctx context.Context, scope domain.Scope, ruleID string, q ports.TransitionQuery) ([]alerting.Transition, error) {
	if q.Limit <= 0 {
		return []alerting.Transition{}, nil
	}
	filter := append(scopeFilter(scope), bson.E{Key: alertrecord.FieldRuleID, Value: ruleID})
	if q.Before > 0 {
		filter = append(filter, bson.E{Key: alertrecord.FieldSeq, Value: bson.D{{Key: "$lt", Value: q.Before}}})
	}
	at := bson.D{}
	if !q.From.IsZero() {
		at = append(at, bson.E{Key: "$gte", Value: alertrecord.Micros(q.From)})
	}
	if !q.To.IsZero() {
		at = append(at, bson.E{Key: "$lt", Value: alertrecord.Micros(q.To)})
	}
	if len(at) > 0 {
		filter = append(filter, bson.E{Key: alertrecord.FieldAt, Value: at})
	}
	return findAll(ctx, a.coll(collAlertTransitions), "transitions", filter, bson.D{{Key: alertrecord.FieldSeq, Value: -1}},
		int64(q.Limit), func(r alertrecord.Transition) (alerting.Transition, error) { return r.ToDomain(), nil })
}

// AcquireLease takes or renews a lease: a new version of it, when the latest
// is free or owner's.
func (a *AlertStore) AcquireLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	leases := a.coll(collAlertLeases)
	latest, held, err := latestVersion[alertrecord.Lease](ctx, leases, name)
	if err != nil {
		return false, err
	}
	if held && latest.Doc.Owner != owner && latest.Doc.Until > alertrecord.Micros(now) {
		return false, nil
	}
	err = swapVersion(ctx, leases, name, latest.Ver, alertrecord.Lease{Name: name, Owner: owner, Until: alertrecord.Micros(until)})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ports.ErrStale):
		return false, nil
	}
	return false, err
}

// Enqueue adds deliveries not queued yet, as their first version.
func (a *AlertStore) Enqueue(ctx context.Context, ds []alerting.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	deliveries := a.coll(collAlertDeliveries)
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	known, err := versionKeys(ctx, deliveries, bson.D{{Key: fieldKey, Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return err
	}
	var docs []any
	for _, d := range ds {
		if slices.Contains(known, d.ID) {
			continue // queued before, maybe at a later version already
		}
		rec, err := alertrecord.DeliveryOf(d)
		if err != nil {
			return err
		}
		docs = append(docs, version[alertrecord.Delivery]{ID: versionID(d.ID, 1), Key: d.ID, Ver: 1, Doc: rec})
	}
	return a.insertMissing(ctx, collAlertDeliveries, "enqueue", docs)
}

// claimCandidates is how many due deliveries a claim reads per delivery it
// wants: some may be versions already replaced.
const claimCandidates = 4

// dueFilter selects the versions of deliveries Claim may take at now.
func dueFilter(now time.Time) bson.D {
	nowMicros := alertrecord.Micros(now)
	return bson.D{
		{Key: docField + alertrecord.FieldStatus, Value: string(alerting.DeliveryPending)},
		{Key: docField + alertrecord.FieldNextAttemptAt, Value: bson.D{{Key: "$lte", Value: nowMicros}}},
		{Key: docField + alertrecord.FieldLeaseUntil, Value: bson.D{{Key: "$lte", Value: nowMicros}}},
	}
}

// DueAccounts returns the accounts with deliveries due at now (a version
// replaced meanwhile may name one that has none: its claim then takes
// nothing).
func (a *AlertStore) DueAccounts(ctx context.Context, now time.Time, limit int) ([]string, error) {
	// A $group, not distinct: FerretDB v1's distinct refuses the maxTimeMS
	// the driver sends.
	cur, err := a.coll(collAlertDeliveries).Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: dueFilter(now)}},
		bson.D{{Key: "$group", Value: bson.D{{Key: fieldID, Value: "$" + docField + alertrecord.FieldAccount}}}},
		bson.D{{Key: "$limit", Value: max(limit, 1)}},
	})
	if err != nil {
		return nil, storeError(ctx, "due accounts", err)
	}
	var groups []struct {
		Account string `bson:"_id"`
	}
	if err := cur.All(ctx, &groups); err != nil {
		return nil, storeError(ctx, "due accounts", err)
	}
	accounts := []string{}
	for _, g := range groups[:min(len(groups), max(limit, 0))] {
		accounts = append(accounts, g.Account)
	}
	return accounts, nil
}

// Claim leases due deliveries of one account to owner: each a new version,
// which only one claimer can write.
func (a *AlertStore) Claim(ctx context.Context, owner string, now, until time.Time, q ports.ClaimQuery) ([]alerting.Delivery, error) {
	if q.Limit <= 0 {
		return []alerting.Delivery{}, nil
	}
	deliveries := a.coll(collAlertDeliveries)
	filter := append(dueFilter(now), bson.E{Key: docField + alertrecord.FieldAccount, Value: q.Account})
	if len(q.ExceptEndpoints) > 0 {
		filter = append(filter, bson.E{Key: docField + alertrecord.FieldEndpointID, Value: bson.D{{Key: "$nin", Value: q.ExceptEndpoints}}})
	}
	cur, err := deliveries.Find(ctx, filter, options.Find().SetLimit(int64(q.Limit*claimCandidates)).
		SetSort(bson.D{{Key: docField + alertrecord.FieldNextAttemptAt, Value: 1}, {Key: fieldKey, Value: 1}}))
	if err != nil {
		return nil, storeError(ctx, "claim deliveries", err)
	}
	var due []version[alertrecord.Delivery]
	if err := cur.All(ctx, &due); err != nil {
		return nil, storeError(ctx, "claim deliveries", err)
	}
	claimed := []alerting.Delivery{}
	for _, v := range due {
		if len(claimed) == q.Limit {
			break
		}
		v.Doc.LeaseOwner, v.Doc.LeaseUntil = owner, alertrecord.Micros(until)
		switch err := swapVersion(ctx, deliveries, v.Key, v.Ver, v.Doc); {
		case errors.Is(err, ports.ErrStale):
			continue // claimed or changed by another since
		case err != nil:
			return claimed, err
		}
		d, err := v.Doc.ToDomain()
		if err != nil {
			return claimed, fmt.Errorf("mongo: claim deliveries: %w", err)
		}
		claimed = append(claimed, d)
	}
	return claimed, nil
}

// DropExcess deletes an account's pending deliveries beyond limit, down to
// keep: every version of each. A delivery claimed between the read and the
// delete is spared, as its new version is not deleted: the read's version
// only goes.
func (a *AlertStore) DropExcess(ctx context.Context, account string, limit, keep int, now time.Time) ([]alerting.Delivery, error) {
	deliveries := a.coll(collAlertDeliveries)
	pendingOf := bson.D{{Key: docField + alertrecord.FieldAccount, Value: account},
		{Key: docField + alertrecord.FieldStatus, Value: string(alerting.DeliveryPending)}}
	dropped := []alerting.Delivery{}
	if n, err := deliveries.CountDocuments(ctx, pendingOf); err != nil {
		return dropped, storeError(ctx, "drop excess deliveries", err)
	} else if n <= int64(limit) {
		return dropped, nil
	}
	versions, err := latestVersions[alertrecord.Delivery](ctx, deliveries, pendingOf)
	if err != nil {
		return dropped, err
	}
	pending := make([]alerting.Delivery, 0, len(versions))
	ids := make(map[string]string, len(versions)) // delivery id -> the version read
	for _, v := range versions {
		d, err := v.Doc.ToDomain()
		if err != nil {
			return dropped, fmt.Errorf("mongo: drop excess deliveries: %w", err)
		}
		pending = append(pending, d)
		ids[d.ID] = v.ID
	}
	excess := alerting.Excess(pending, keep, now)
	if len(excess) == 0 {
		return dropped, nil
	}
	versionIDs := make([]string, len(excess))
	for i, d := range excess {
		versionIDs[i] = ids[d.ID]
	}
	if _, err := deliveries.DeleteMany(ctx, bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: versionIDs}}}}); err != nil {
		return dropped, storeError(ctx, "drop excess deliveries", err)
	}
	return append(dropped, excess...), nil
}

// Finish stores the outcome of owner's attempt as the delivery's next
// version, if owner holds the lease.
func (a *AlertStore) Finish(ctx context.Context, d alerting.Delivery, owner string) error {
	deliveries := a.coll(collAlertDeliveries)
	latest, found, err := latestVersion[alertrecord.Delivery](ctx, deliveries, d.ID)
	switch {
	case err != nil:
		return err
	case !found:
		return notFoundError("delivery", d.ID)
	case latest.Doc.LeaseOwner != owner:
		return fmt.Errorf("mongo: delivery %q is leased to another worker: %w", d.ID, ports.ErrStale)
	}
	rec, err := alertrecord.DeliveryOf(d)
	if err != nil {
		return err
	}
	return swapVersion(ctx, deliveries, d.ID, latest.Ver, rec)
}

// Delivery returns one delivery of scope.
func (a *AlertStore) Delivery(ctx context.Context, scope domain.Scope, id string) (alerting.Delivery, error) {
	latest, found, err := latestVersion[alertrecord.Delivery](ctx, a.coll(collAlertDeliveries), id)
	switch {
	case err != nil:
		return alerting.Delivery{}, err
	case !found || latest.Doc.Account != scope.Account || latest.Doc.Domain != scope.Domain:
		return alerting.Delivery{}, notFoundError("delivery", id)
	}
	return latest.Doc.ToDomain()
}

// LogAttempt adds an attempt to the log.
func (a *AlertStore) LogAttempt(ctx context.Context, at alerting.Attempt) error {
	return a.insertMissing(ctx, collAlertAttempts, "log attempt", []any{alertrecord.AttemptOf(at)})
}

// Attempts returns an endpoint's log, newest first.
func (a *AlertStore) Attempts(ctx context.Context, scope domain.Scope, endpointID string, limit int) ([]alerting.Attempt, error) {
	if limit <= 0 {
		return []alerting.Attempt{}, nil
	}
	filter := append(scopeFilter(scope), bson.E{Key: alertrecord.FieldEndpointID, Value: endpointID})
	return findAll(ctx, a.coll(collAlertAttempts), "attempts", filter,
		bson.D{{Key: alertrecord.FieldAt, Value: -1}, {Key: fieldID, Value: -1}}, int64(limit),
		func(r alertrecord.Attempt) (alerting.Attempt, error) { return r.ToDomain(), nil })
}

// PruneAlerts deletes old transitions, finished deliveries and attempts.
func (a *AlertStore) PruneAlerts(ctx context.Context, before time.Time) (int64, error) {
	cut := bson.D{{Key: "$lt", Value: alertrecord.Micros(before)}}
	var total int64
	// A finished delivery's latest version is its last: every version of it goes.
	deliveries := a.coll(collAlertDeliveries)
	keys, err := versionKeys(ctx, deliveries, bson.D{
		{Key: docField + alertrecord.FieldStatus, Value: bson.D{{Key: "$ne", Value: string(alerting.DeliveryPending)}}},
		{Key: docField + alertrecord.FieldUpdatedAt, Value: cut}})
	if err != nil {
		return 0, err
	}
	if len(keys) > 0 {
		if _, err := deliveries.DeleteMany(ctx, bson.D{{Key: fieldKey, Value: bson.D{{Key: "$in", Value: keys}}}}); err != nil {
			return 0, storeError(ctx, "prune alerts", err)
		}
		total += int64(len(keys))
	}
	for _, del := range []struct {
		coll   string
		filter bson.D
	}{
		{collAlertTransitions, bson.D{{Key: alertrecord.FieldAt, Value: cut}}},
		{collAlertAttempts, bson.D{{Key: alertrecord.FieldAt, Value: cut}}},
	} {
		res, err := a.coll(del.coll).DeleteMany(ctx, del.filter)
		if err != nil {
			return total, storeError(ctx, "prune alerts", err)
		}
		total += res.DeletedCount
	}
	return total, nil
}
