package esalert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/alertrecord"
	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.AlertStore = (*Store)(nil)

// Kinds of alert records, one index each: "<prefix>-alert-<kind>".
const (
	alertRules       = "rules"
	alertEndpoints   = "endpoints"
	alertStates      = "states"
	alertTransitions = "transitions"
	alertDeliveries  = "deliveries"
	alertAttempts    = "attempts"
	alertLeases      = "leases"
)

// alertKinds lists every kind, for set-up (the rule sets too: rules.go;
// the re-scrub jobs: rescrub.go; the journal of erasures: erasures.go).
var alertKinds = []string{alertRules, alertEndpoints, alertStates, alertTransitions, alertDeliveries, alertAttempts, alertLeases, ruleSets,
	rescrubJobs, erasures}

// Store is the Elasticsearch ports.AlertStore: one small index per kind
// of record, "<prefix>-alert-<kind>" (one shard, a replica wherever a second
// node can hold one), each document an alertrecord struct under its own id,
// with strict mappings that index only what queries filter or sort on.
//
// Compare-and-set is Elasticsearch's own: a first version is created with
// op_type create, which fails (409) when the id exists, and a change is
// written with if_seq_no and if_primary_term of the version read by a
// realtime get, which fails when another write came between. Writes are not
// refreshed; a search of an index first refreshes it, so that every read sees
// what was written before it (the records are few: rules, their states, the
// queue). The test distribution has no delete-by-query: deletions search the
// ids and delete them in bulk.
type Store struct {
	client *esclient.Client
	cfg    Config
}

// Config is what the alert store takes of the message store's configuration.
type Config struct {
	// Prefix starts the alert indices' names, as it does the messages'.
	Prefix string
	// AutoExpandReplicas is the indices' index.auto_expand_replicas.
	AutoExpandReplicas string
}

// New returns the alert store of cfg on client's cluster, without touching
// the network: SetUp creates its indices.
func New(client *esclient.Client, cfg Config) *Store { return &Store{client: client, cfg: cfg} }

func (a *Store) index(kind string) string { return a.cfg.Prefix + "-alert-" + kind }

// Mapping types of the alert fields.
var (
	keyword   = map[string]any{"type": "keyword"}
	long      = map[string]any{"type": "long"}
	integer   = map[string]any{"type": "integer"}
	boolean   = map[string]any{"type": "boolean"}
	double    = map[string]any{"type": "double"}
	kept      = map[string]any{"type": "keyword", "index": false, "doc_values": false} // in _source only
	keptArray = map[string]any{"type": "object", "enabled": false}
)

// alertMappings are the strict mappings of each kind, field by field as
// alertrecord's json tags name them.
var alertMappings = map[string]map[string]any{
	alertRules: {"id": keyword, "account": keyword, "domain": keyword, "created_at": long, "rule": kept},
	alertEndpoints: {"id": keyword, "account": keyword, "domain": keyword, "url": kept, "description": kept, "format": kept,
		"enabled": boolean, "disabled_reason": kept, "secrets": keptArray, "created_at": long, "updated_at": long},
	alertStates: {"id": keyword, "account": keyword, "domain": keyword, "version": long, "status": keyword, "reason": keyword,
		"since": long, "evaluated_at": long, "observation": kept, "error": kept, "notified_at": long, "transitions": long,
		"events": long, "outbox": kept},
	alertTransitions: {"id": keyword, "rule_id": keyword, "account": keyword, "domain": keyword, "seq": long, "from": keyword,
		"to": keyword, "reason": keyword, "at": long, "value": double, "has_value": boolean},
	alertDeliveries: {"id": keyword, "account": keyword, "domain": keyword, "endpoint_id": keyword, "event": kept,
		"status": keyword, "attempts": integer, "next_attempt_at": long, "lease_owner": keyword, "lease_until": long,
		"last_status_code": integer, "last_error": kept, "created_at": long, "updated_at": long},
	alertAttempts: {"id": keyword, "account": keyword, "domain": keyword, "delivery_id": keyword, "endpoint_id": keyword,
		"event_id": keyword, "event_type": keyword, "rule_id": keyword, "number": integer, "at": long, "status_code": integer,
		"error": kept, "duration_micros": long, "response": kept},
	alertLeases: {"name": keyword, "owner": keyword, "until": long},
	ruleSets:    {"account": keyword, "version": long, "key_id": kept, "reason": kept, "at": long, "rules": kept},
	rescrubJobs: {"account": keyword, "kind": keyword, "number": long, "version": long, "from": long, "to": long, "applications": keptArray,
		"key_id": kept, "state": keyword, "cursor_domain": kept, "cursor_at": long, "cursor_id": kept, "scanned": long,
		"changed": long, "skipped": long, "error": kept, "created_at": long, "updated_at": long, "finished_at": long,
		"owner": kept, "lease_until": long, "revision": long},
	erasures: {"account": keyword, "id": keyword, "doc": kept},
}

// catIndex is a row of GET _cat/indices.
type catIndex struct {
	Index string `json:"index"`
}

// SetUp creates the indices that are missing (one request to learn which)
// and adds to each existing one the fields its mapping lacks (one request
// an index).
func (a *Store) SetUp(ctx context.Context) error {
	ctx, cancel := a.client.Bounded(ctx)
	defer cancel()
	var existing []catIndex
	if _, err := a.call(ctx, "list alert indices", esapi.CatIndicesRequest{Index: []string{a.index("*")}, Format: "json",
		H: []string{"index"}, ExpandWildcards: "all"}, &existing); err != nil {
		return err
	}
	for _, kind := range alertKinds {
		if slices.Contains(existing, catIndex{a.index(kind)}) {
			// The fields added since the index was made (a re-scrub job's
			// kind): a mapping may grow, and the same fields again change
			// nothing.
			body, err := esclient.JSONBody(map[string]any{"properties": alertMappings[kind]})
			if err != nil {
				return err
			}
			if err := a.client.Do(ctx, "update alert index mapping", esapi.IndicesPutMappingRequest{Index: []string{a.index(kind)}, Body: body}, nil); err != nil {
				return err
			}
			continue
		}
		body, err := esclient.JSONBody(map[string]any{
			"settings": map[string]any{"index": map[string]any{"number_of_shards": 1,
				"auto_expand_replicas": a.cfg.AutoExpandReplicas}},
			"mappings": map[string]any{"dynamic": "strict", "properties": alertMappings[kind]},
		})
		if err != nil {
			return err
		}
		err = a.client.Do(ctx, "create alert index", esapi.IndicesCreateRequest{Index: a.index(kind), Body: body}, nil)
		if err != nil && !errors.Is(err, esclient.ErrIndexExists) {
			return err
		}
	}
	return nil
}

// call runs req (esclient.Client.DoAllowing): a 404 of a missing document or
// a 409 of a lost compare-and-set is a status, not an error, when allowed.
func (a *Store) call(ctx context.Context, op string, req esapi.Request, out any, allowed ...int) (int, error) {
	return a.client.DoAllowing(ctx, op, req, out, allowed...)
}

// got is a realtime get's reply.
type got[R any] struct {
	Found       bool `json:"found"`
	SeqNo       int  `json:"_seq_no"`
	PrimaryTerm int  `json:"_primary_term"`
	Source      R    `json:"_source"`
}

// get reads one document by id, as it is now (realtime).
func getDoc[R any](ctx context.Context, a *Store, kind, id string) (got[R], error) {
	var g got[R]
	if id == "" {
		return g, nil
	}
	_, err := a.call(ctx, "get "+kind, esapi.GetRequest{Index: a.index(kind), DocumentID: id, Realtime: ptr(true)}, &g, http.StatusNotFound)
	return g, err
}

// put writes doc under id: created only if absent (create), or only over the
// version read (seqNo, primaryTerm), or unconditionally. It reports false on a
// lost condition (409).
type putMode int

const (
	putAlways putMode = iota
	putCreate
	putIfVersion
)

func (a *Store) put(ctx context.Context, kind, id string, doc any, mode putMode, seqNo, primaryTerm int) (bool, error) {
	body, err := esclient.JSONBody(doc)
	if err != nil {
		return false, err
	}
	req := esapi.IndexRequest{Index: a.index(kind), DocumentID: id, Body: body}
	switch mode {
	case putCreate:
		req.OpType = "create"
	case putIfVersion:
		req.IfSeqNo, req.IfPrimaryTerm = &seqNo, &primaryTerm
	}
	status, err := a.call(ctx, "write "+kind, req, nil, http.StatusConflict)
	return status != http.StatusConflict, err
}

// deleteDoc deletes one document; false when there was none.
func (a *Store) deleteDoc(ctx context.Context, kind, id string) (bool, error) {
	status, err := a.call(ctx, "delete "+kind, esapi.DeleteRequest{Index: a.index(kind), DocumentID: id}, nil, http.StatusNotFound)
	return status != http.StatusNotFound, err
}

// refresh makes every write so far searchable in kind's index.
func (a *Store) refresh(ctx context.Context, kind string) error {
	_, err := a.call(ctx, "refresh "+kind, esapi.IndicesRefreshRequest{Index: []string{a.index(kind)}}, nil)
	return err
}

// hit is one search result.
type hit[R any] struct {
	ID          string `json:"_id"`
	SeqNo       int    `json:"_seq_no"`
	PrimaryTerm int    `json:"_primary_term"`
	Source      R      `json:"_source"`
	Sort        []any  `json:"sort"`
}

// searchPage is the most a search reads at a time.
const searchPage = 1000

// search returns the documents of kind that filter selects (bool filter
// clauses), in sort order (which must end on a unique field), at most limit (0:
// all, page after page).
func search[R any](ctx context.Context, a *Store, kind string, filter []any, sort []any, limit int) ([]hit[R], error) {
	if err := a.refresh(ctx, kind); err != nil {
		return nil, err
	}
	var all []hit[R]
	var after []any
	for {
		size := searchPage
		if limit > 0 {
			size = min(size, limit-len(all))
		}
		q := map[string]any{"query": map[string]any{"bool": map[string]any{"filter": filter}}, "sort": sort,
			"size": size, "seq_no_primary_term": true, "track_total_hits": false}
		if after != nil {
			q["search_after"] = after
		}
		body, err := esclient.JSONBody(q)
		if err != nil {
			return nil, err
		}
		var reply struct {
			Hits struct {
				Hits []hit[R] `json:"hits"`
			} `json:"hits"`
		}
		if _, err := a.call(ctx, "search "+kind, esapi.SearchRequest{Index: []string{a.index(kind)}, Body: body}, &reply); err != nil {
			return nil, err
		}
		hits := reply.Hits.Hits
		all = append(all, hits...)
		if len(hits) < size || (limit > 0 && len(all) >= limit) {
			return all, nil
		}
		after = hits[len(hits)-1].Sort
	}
}

func term(field string, value any) map[string]any {
	return map[string]any{"term": map[string]any{field: value}}
}

func scopeTerms(scope domain.Scope) []any {
	return []any{term(alertrecord.FieldAccount, scope.Account), term(alertrecord.FieldDomain, scope.Domain)}
}

func rangeOf(field string, bounds map[string]any) map[string]any {
	return map[string]any{"range": map[string]any{field: bounds}}
}

func asc(field string) map[string]any  { return map[string]any{field: "asc"} }
func desc(field string) map[string]any { return map[string]any{field: "desc"} }

func notFound(what, id string) error {
	return fmt.Errorf("elastic: %s %q: %w", what, id, ports.ErrNotFound)
}

// bulkDelete deletes ids from kind's index.
func (a *Store) bulkDelete(ctx context.Context, kind string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), searchPage)
		var body bytes.Buffer
		for _, id := range ids[:n] {
			line, err := json.Marshal(map[string]any{"delete": map[string]any{"_index": a.index(kind), "_id": id}})
			if err != nil {
				return err
			}
			body.Write(line)
			body.WriteByte('\n')
		}
		if err := a.bulk(ctx, "delete "+kind, &body, http.StatusNotFound); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// bulk sends a bulk body and checks every item (esclient.Client.Bulk): a
// status in allowed is not a failure (409: created before; 404: deleted
// before).
func (a *Store) bulk(ctx context.Context, op string, body io.Reader, allowed ...int) error {
	return a.client.Bulk(ctx, op, body, allowed...)
}

// createAll creates docs (id -> document) that do not exist yet.
func (a *Store) createAll(ctx context.Context, kind string, ids []string, docs []any) error {
	if len(ids) == 0 {
		return nil
	}
	var body bytes.Buffer
	for i, id := range ids {
		action, err := json.Marshal(map[string]any{"create": map[string]any{"_index": a.index(kind), "_id": id}})
		if err != nil {
			return err
		}
		doc, err := json.Marshal(docs[i])
		if err != nil {
			return fmt.Errorf("elastic: encode %s: %w", kind, err)
		}
		body.Write(action)
		body.WriteByte('\n')
		body.Write(doc)
		body.WriteByte('\n')
	}
	return a.bulk(ctx, "create "+kind, &body, http.StatusConflict)
}

// CreateRule stores a new rule.
func (a *Store) CreateRule(ctx context.Context, r alerting.Rule) error {
	rec, err := alertrecord.RuleOf(r)
	if err != nil {
		return err
	}
	created, err := a.put(ctx, alertRules, r.ID, rec, putCreate, 0, 0)
	if err == nil && !created {
		return fmt.Errorf("elastic: rule %q: %w", r.ID, ports.ErrExists)
	}
	return err
}

// ruleDoc reads the rule of scope with id.
func (a *Store) ruleDoc(ctx context.Context, scope domain.Scope, id string) (got[alertrecord.Rule], error) {
	g, err := getDoc[alertrecord.Rule](ctx, a, alertRules, id)
	if err == nil && (!g.Found || g.Source.Account != scope.Account || g.Source.Domain != scope.Domain) {
		err = notFound("rule", id)
	}
	return g, err
}

// UpdateRule replaces a stored rule, if it is still the one read.
func (a *Store) UpdateRule(ctx context.Context, r alerting.Rule) error {
	g, err := a.ruleDoc(ctx, r.Scope, r.ID)
	if err != nil {
		return err
	}
	rec, err := alertrecord.RuleOf(r)
	if err != nil {
		return err
	}
	if written, err := a.put(ctx, alertRules, r.ID, rec, putIfVersion, g.SeqNo, g.PrimaryTerm); err != nil {
		return err
	} else if !written {
		return notFound("rule", r.ID) // deleted (or changed) meanwhile
	}
	return nil
}

// Rule returns one rule of scope.
func (a *Store) Rule(ctx context.Context, scope domain.Scope, id string) (alerting.Rule, error) {
	g, err := a.ruleDoc(ctx, scope, id)
	if err != nil {
		return alerting.Rule{}, err
	}
	return g.Source.ToDomain()
}

var oldestFirst = []any{asc(alertrecord.FieldCreatedAt), asc("id")}

func (a *Store) rules(ctx context.Context, filter []any) ([]alerting.Rule, error) {
	hits, err := search[alertrecord.Rule](ctx, a, alertRules, filter, oldestFirst, 0)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.Rule, 0, len(hits))
	for _, h := range hits {
		r, err := h.Source.ToDomain()
		if err != nil {
			return nil, fmt.Errorf("elastic: rules: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Rules returns scope's rules, oldest first.
func (a *Store) Rules(ctx context.Context, scope domain.Scope) ([]alerting.Rule, error) {
	return a.rules(ctx, scopeTerms(scope))
}

// AllRules returns every rule.
func (a *Store) AllRules(ctx context.Context) ([]alerting.Rule, error) {
	return a.rules(ctx, []any{})
}

// DeleteRule deletes a rule, then its state and history.
func (a *Store) DeleteRule(ctx context.Context, scope domain.Scope, id string) error {
	if _, err := a.ruleDoc(ctx, scope, id); err != nil {
		return err
	}
	if deleted, err := a.deleteDoc(ctx, alertRules, id); err != nil {
		return err
	} else if !deleted {
		return notFound("rule", id)
	}
	if _, err := a.deleteDoc(ctx, alertStates, id); err != nil {
		return err
	}
	history, err := search[alertrecord.Transition](ctx, a, alertTransitions, []any{term(alertrecord.FieldRuleID, id)}, []any{asc("id")}, 0)
	if err != nil {
		return err
	}
	return a.bulkDelete(ctx, alertTransitions, hitIDs(history))
}

func hitIDs[R any](hits []hit[R]) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// CreateEndpoint stores a new endpoint.
func (a *Store) CreateEndpoint(ctx context.Context, e alerting.Endpoint) error {
	created, err := a.put(ctx, alertEndpoints, e.ID, alertrecord.EndpointOf(e), putCreate, 0, 0)
	if err == nil && !created {
		return fmt.Errorf("elastic: endpoint %q: %w", e.ID, ports.ErrExists)
	}
	return err
}

func (a *Store) endpointDoc(ctx context.Context, scope domain.Scope, id string) (got[alertrecord.Endpoint], error) {
	g, err := getDoc[alertrecord.Endpoint](ctx, a, alertEndpoints, id)
	if err == nil && (!g.Found || g.Source.Account != scope.Account || g.Source.Domain != scope.Domain) {
		err = notFound("endpoint", id)
	}
	return g, err
}

// UpdateEndpoint replaces a stored endpoint, if it is still the one read.
func (a *Store) UpdateEndpoint(ctx context.Context, e alerting.Endpoint) error {
	g, err := a.endpointDoc(ctx, e.Scope, e.ID)
	if err != nil {
		return err
	}
	if written, err := a.put(ctx, alertEndpoints, e.ID, alertrecord.EndpointOf(e), putIfVersion, g.SeqNo, g.PrimaryTerm); err != nil {
		return err
	} else if !written {
		return notFound("endpoint", e.ID)
	}
	return nil
}

// Endpoint returns one endpoint of scope.
func (a *Store) Endpoint(ctx context.Context, scope domain.Scope, id string) (alerting.Endpoint, error) {
	g, err := a.endpointDoc(ctx, scope, id)
	if err != nil {
		return alerting.Endpoint{}, err
	}
	return g.Source.ToDomain(), nil
}

// Endpoints returns scope's endpoints, oldest first.
func (a *Store) Endpoints(ctx context.Context, scope domain.Scope) ([]alerting.Endpoint, error) {
	hits, err := search[alertrecord.Endpoint](ctx, a, alertEndpoints, scopeTerms(scope), oldestFirst, 0)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.Endpoint, len(hits))
	for i, h := range hits {
		out[i] = h.Source.ToDomain()
	}
	return out, nil
}

// DeleteEndpoint deletes an endpoint.
func (a *Store) DeleteEndpoint(ctx context.Context, scope domain.Scope, id string) error {
	if _, err := a.endpointDoc(ctx, scope, id); err != nil {
		return err
	}
	if deleted, err := a.deleteDoc(ctx, alertEndpoints, id); err != nil {
		return err
	} else if !deleted {
		return notFound("endpoint", id)
	}
	return nil
}

func (a *Store) states(ctx context.Context, filter []any) ([]alerting.State, error) {
	hits, err := search[alertrecord.State](ctx, a, alertStates, filter, []any{asc("id")}, 0)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.State, 0, len(hits))
	for _, h := range hits {
		st, err := h.Source.ToDomain()
		if err != nil {
			return nil, fmt.Errorf("elastic: states: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// States returns the states of scope's rules.
func (a *Store) States(ctx context.Context, scope domain.Scope) ([]alerting.State, error) {
	return a.states(ctx, scopeTerms(scope))
}

// AllStates returns every state.
func (a *Store) AllStates(ctx context.Context) ([]alerting.State, error) {
	return a.states(ctx, []any{})
}

// SwapState creates the rule's state (prev 0) or writes it over version prev,
// conditioned on the sequence number read with it.
func (a *Store) SwapState(ctx context.Context, next alerting.State, prev int64) error {
	if _, err := a.ruleDoc(ctx, next.Scope, next.RuleID); err != nil {
		return err
	}
	rec, err := alertrecord.StateOf(next, prev+1)
	if err != nil {
		return err
	}
	stale := fmt.Errorf("elastic: state of rule %q is not at version %d: %w", next.RuleID, prev, ports.ErrStale)
	var written bool
	if prev == 0 {
		written, err = a.put(ctx, alertStates, next.RuleID, rec, putCreate, 0, 0)
	} else {
		var g got[alertrecord.State]
		if g, err = getDoc[alertrecord.State](ctx, a, alertStates, next.RuleID); err != nil {
			return err
		}
		if !g.Found || g.Source.Version != prev {
			return stale
		}
		written, err = a.put(ctx, alertStates, next.RuleID, rec, putIfVersion, g.SeqNo, g.PrimaryTerm)
	}
	if err != nil {
		return err
	}
	if !written {
		return stale
	}
	// A rule deleted meanwhile: take the state back out.
	if _, err := a.ruleDoc(ctx, next.Scope, next.RuleID); errors.Is(err, ports.ErrNotFound) {
		if _, err := a.deleteDoc(ctx, alertStates, next.RuleID); err != nil {
			return err
		}
		return notFound("rule", next.RuleID)
	}
	return nil
}

// AppendTransitions creates the transitions not stored yet.
func (a *Store) AppendTransitions(ctx context.Context, trs []alerting.Transition) error {
	ids, docs := make([]string, len(trs)), make([]any, len(trs))
	for i, tr := range trs {
		rec := alertrecord.TransitionOf(tr)
		ids[i], docs[i] = rec.ID, rec
	}
	return a.createAll(ctx, alertTransitions, ids, docs)
}

// Transitions returns a rule's history, newest first.
func (a *Store) Transitions(ctx context.Context, scope domain.Scope, ruleID string, q ports.TransitionQuery) ([]alerting.Transition, error) {
	if q.Limit <= 0 {
		return []alerting.Transition{}, nil
	}
	filter := append(scopeTerms(scope), term(alertrecord.FieldRuleID, ruleID))
	if q.Before > 0 {
		filter = append(filter, rangeOf(alertrecord.FieldSeq, map[string]any{"lt": q.Before}))
	}
	at := map[string]any{}
	if !q.From.IsZero() {
		at["gte"] = alertrecord.Micros(q.From)
	}
	if !q.To.IsZero() {
		at["lt"] = alertrecord.Micros(q.To)
	}
	if len(at) > 0 {
		filter = append(filter, rangeOf(alertrecord.FieldAt, at))
	}
	hits, err := search[alertrecord.Transition](ctx, a, alertTransitions, filter, []any{desc(alertrecord.FieldSeq)}, q.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.Transition, len(hits))
	for i, h := range hits {
		out[i] = h.Source.ToDomain()
	}
	return out, nil
}

// AcquireLease takes or renews a lease, conditioned on the version read.
func (a *Store) AcquireLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	g, err := getDoc[alertrecord.Lease](ctx, a, alertLeases, name)
	if err != nil {
		return false, err
	}
	if g.Found && g.Source.Owner != owner && g.Source.Until > alertrecord.Micros(now) {
		return false, nil
	}
	lease := alertrecord.Lease{Name: name, Owner: owner, Until: alertrecord.Micros(until)}
	if !g.Found {
		return a.put(ctx, alertLeases, name, lease, putCreate, 0, 0)
	}
	return a.put(ctx, alertLeases, name, lease, putIfVersion, g.SeqNo, g.PrimaryTerm)
}

// Enqueue creates the deliveries not queued yet.
func (a *Store) Enqueue(ctx context.Context, ds []alerting.Delivery) error {
	ids, docs := make([]string, len(ds)), make([]any, len(ds))
	for i, d := range ds {
		rec, err := alertrecord.DeliveryOf(d)
		if err != nil {
			return err
		}
		ids[i], docs[i] = d.ID, rec
	}
	return a.createAll(ctx, alertDeliveries, ids, docs)
}

// claimCandidates is how many due deliveries a claim reads per delivery it
// wants: others may claim some first.
const claimCandidates = 4

// dueFilter selects the deliveries Claim may take at now.
func dueFilter(now time.Time) []any {
	nowMicros := alertrecord.Micros(now)
	return []any{
		term(alertrecord.FieldStatus, string(alerting.DeliveryPending)),
		rangeOf(alertrecord.FieldNextAttemptAt, map[string]any{"lte": nowMicros}),
		rangeOf(alertrecord.FieldLeaseUntil, map[string]any{"lte": nowMicros}),
	}
}

// DueAccounts returns the accounts with deliveries due at now: a terms
// aggregation of limit buckets.
func (a *Store) DueAccounts(ctx context.Context, now time.Time, limit int) ([]string, error) {
	accounts := []string{}
	if limit <= 0 {
		return accounts, nil
	}
	if err := a.refresh(ctx, alertDeliveries); err != nil {
		return nil, err
	}
	body, err := esclient.JSONBody(map[string]any{"size": 0, "track_total_hits": false,
		"query": map[string]any{"bool": map[string]any{"filter": dueFilter(now)}},
		"aggs":  map[string]any{"accounts": map[string]any{"terms": map[string]any{"field": alertrecord.FieldAccount, "size": limit}}}})
	if err != nil {
		return nil, err
	}
	var reply struct {
		Aggregations struct {
			Accounts struct {
				Buckets []struct {
					Key string `json:"key"`
				} `json:"buckets"`
			} `json:"accounts"`
		} `json:"aggregations"`
	}
	if _, err := a.call(ctx, "due accounts", esapi.SearchRequest{Index: []string{a.index(alertDeliveries)}, Body: body}, &reply); err != nil {
		return nil, err
	}
	for _, b := range reply.Aggregations.Accounts.Buckets {
		accounts = append(accounts, b.Key)
	}
	return accounts, nil
}

// Claim leases due deliveries of one account to owner, each written over the
// version the search found.
func (a *Store) Claim(ctx context.Context, owner string, now, until time.Time, q ports.ClaimQuery) ([]alerting.Delivery, error) {
	claimed := []alerting.Delivery{}
	if q.Limit <= 0 {
		return claimed, nil
	}
	filter := append(dueFilter(now), term(alertrecord.FieldAccount, q.Account))
	if len(q.ExceptEndpoints) > 0 {
		filter = append(filter, map[string]any{"bool": map[string]any{
			"must_not": map[string]any{"terms": map[string]any{alertrecord.FieldEndpointID: q.ExceptEndpoints}}}})
	}
	due, err := search[alertrecord.Delivery](ctx, a, alertDeliveries, filter,
		[]any{asc(alertrecord.FieldNextAttemptAt), asc("id")}, q.Limit*claimCandidates)
	if err != nil {
		return claimed, err
	}
	for _, h := range due {
		if len(claimed) == q.Limit {
			break
		}
		rec := h.Source
		rec.LeaseOwner, rec.LeaseUntil = owner, alertrecord.Micros(until)
		written, err := a.put(ctx, alertDeliveries, h.ID, rec, putIfVersion, h.SeqNo, h.PrimaryTerm)
		if err != nil {
			return claimed, err
		}
		if !written {
			continue // claimed or changed by another since the search
		}
		d, err := rec.ToDomain()
		if err != nil {
			return claimed, fmt.Errorf("elastic: claim deliveries: %w", err)
		}
		claimed = append(claimed, d)
	}
	return claimed, nil
}

// DropExcess deletes an account's pending deliveries beyond limit, down to
// keep: a count, and only over the limit a search of them all and a bulk
// delete. Each delete is conditioned on the version the search found, so
// that one claimed meanwhile stays.
func (a *Store) DropExcess(ctx context.Context, account string, limit, keep int, now time.Time) ([]alerting.Delivery, error) {
	dropped := []alerting.Delivery{}
	pendingOf := []any{term(alertrecord.FieldAccount, account), term(alertrecord.FieldStatus, string(alerting.DeliveryPending))}
	if err := a.refresh(ctx, alertDeliveries); err != nil {
		return dropped, err
	}
	body, err := esclient.JSONBody(map[string]any{"query": map[string]any{"bool": map[string]any{"filter": pendingOf}}})
	if err != nil {
		return dropped, err
	}
	var counted struct {
		Count int `json:"count"`
	}
	if _, err := a.call(ctx, "count deliveries", esapi.CountRequest{Index: []string{a.index(alertDeliveries)}, Body: body}, &counted); err != nil {
		return dropped, err
	}
	if counted.Count <= limit {
		return dropped, nil
	}
	hits, err := search[alertrecord.Delivery](ctx, a, alertDeliveries, pendingOf, []any{asc("id")}, 0)
	if err != nil {
		return dropped, err
	}
	pending := make([]alerting.Delivery, 0, len(hits))
	byID := make(map[string]hit[alertrecord.Delivery], len(hits))
	for _, h := range hits {
		d, err := h.Source.ToDomain()
		if err != nil {
			return dropped, fmt.Errorf("elastic: drop excess deliveries: %w", err)
		}
		pending = append(pending, d)
		byID[d.ID] = h
	}
	var lines bytes.Buffer
	excess := alerting.Excess(pending, keep, now)
	for _, d := range excess {
		h := byID[d.ID]
		line, err := json.Marshal(map[string]any{"delete": map[string]any{"_index": a.index(alertDeliveries), "_id": h.ID,
			"if_seq_no": h.SeqNo, "if_primary_term": h.PrimaryTerm}})
		if err != nil {
			return dropped, err
		}
		lines.Write(line)
		lines.WriteByte('\n')
	}
	if len(excess) > 0 {
		// 409: claimed or finished since the search; 404: dropped by another.
		if err := a.bulk(ctx, "drop excess deliveries", &lines, http.StatusConflict, http.StatusNotFound); err != nil {
			return dropped, err
		}
	}
	return append(dropped, excess...), nil
}

// Finish stores the outcome of owner's attempt, over the version that shows
// owner's lease.
func (a *Store) Finish(ctx context.Context, d alerting.Delivery, owner string) error {
	g, err := getDoc[alertrecord.Delivery](ctx, a, alertDeliveries, d.ID)
	switch {
	case err != nil:
		return err
	case !g.Found:
		return notFound("delivery", d.ID)
	case g.Source.LeaseOwner != owner:
		return fmt.Errorf("elastic: delivery %q is leased to another worker: %w", d.ID, ports.ErrStale)
	}
	rec, err := alertrecord.DeliveryOf(d)
	if err != nil {
		return err
	}
	written, err := a.put(ctx, alertDeliveries, d.ID, rec, putIfVersion, g.SeqNo, g.PrimaryTerm)
	if err == nil && !written {
		err = fmt.Errorf("elastic: delivery %q changed during its attempt: %w", d.ID, ports.ErrStale)
	}
	return err
}

// Delivery returns one delivery of scope.
func (a *Store) Delivery(ctx context.Context, scope domain.Scope, id string) (alerting.Delivery, error) {
	g, err := getDoc[alertrecord.Delivery](ctx, a, alertDeliveries, id)
	switch {
	case err != nil:
		return alerting.Delivery{}, err
	case !g.Found || g.Source.Account != scope.Account || g.Source.Domain != scope.Domain:
		return alerting.Delivery{}, notFound("delivery", id)
	}
	return g.Source.ToDomain()
}

// LogAttempt adds an attempt to the log.
func (a *Store) LogAttempt(ctx context.Context, at alerting.Attempt) error {
	_, err := a.put(ctx, alertAttempts, at.ID, alertrecord.AttemptOf(at), putCreate, 0, 0)
	return err
}

// Attempts returns an endpoint's log, newest first.
func (a *Store) Attempts(ctx context.Context, scope domain.Scope, endpointID string, limit int) ([]alerting.Attempt, error) {
	if limit <= 0 {
		return []alerting.Attempt{}, nil
	}
	hits, err := search[alertrecord.Attempt](ctx, a, alertAttempts, append(scopeTerms(scope), term(alertrecord.FieldEndpointID, endpointID)),
		[]any{desc(alertrecord.FieldAt), desc("id")}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.Attempt, len(hits))
	for i, h := range hits {
		out[i] = h.Source.ToDomain()
	}
	return out, nil
}

// PruneAlerts deletes old transitions, finished deliveries and attempts:
// found by a search, deleted in bulk.
func (a *Store) PruneAlerts(ctx context.Context, before time.Time) (int64, error) {
	cut := map[string]any{"lt": alertrecord.Micros(before)}
	var total int64
	for _, p := range []struct {
		kind   string
		filter []any
	}{
		{alertTransitions, []any{rangeOf(alertrecord.FieldAt, cut)}},
		{alertDeliveries, []any{rangeOf(alertrecord.FieldUpdatedAt, cut), map[string]any{"bool": map[string]any{
			"must_not": term(alertrecord.FieldStatus, string(alerting.DeliveryPending))}}}},
		{alertAttempts, []any{rangeOf(alertrecord.FieldAt, cut)}},
	} {
		hits, err := search[json.RawMessage](ctx, a, p.kind, p.filter, []any{asc("id")}, 0)
		if err != nil {
			return total, err
		}
		if err := a.bulkDelete(ctx, p.kind, hitIDs(hits)); err != nil {
			return total, err
		}
		total += int64(len(hits))
	}
	return total, nil
}

func ptr[T any](v T) *T { return &v }
