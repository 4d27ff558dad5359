package esalert

import (
	"context"
	"fmt"
	"strconv"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/rulerecord"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RuleSetStore = (*Store)(nil)

// ruleSets is the index of every version of every account's rule set,
// "<prefix>-alert-rule-sets", beside alerting's configuration: one document
// per version, its id "<account>:<number>" (an id goes into the URL as it
// is, and accounts are letters, digits, '.', '_' and '-'). Versions are never deleted, so
// the compare-and-set is the create (op_type create) of the next id, which
// one writer alone can make, after a search (which refreshes the index first)
// found the expected version the latest.
const ruleSets = "rule-sets"

func ruleSetID(account string, number int64) string {
	return account + ":" + strconv.FormatInt(number, 10)
}

// latestRuleSets reads the account's newest versions, below before (0: no
// bound), at most limit.
func (a *Store) latestRuleSets(ctx context.Context, account string, before int64, limit int) ([]rules.Version, error) {
	filter := []any{term(rulerecord.FieldAccount, account)}
	if before > 0 {
		filter = append(filter, rangeOf(rulerecord.FieldNumber, map[string]any{"lt": before}))
	}
	hits, err := search[rulerecord.Record](ctx, a, ruleSets, filter, []any{desc(rulerecord.FieldNumber)}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]rules.Version, len(hits))
	for i, h := range hits {
		if out[i], err = h.Source.Version(); err != nil {
			return nil, fmt.Errorf("elastic: %w", err)
		}
	}
	return out, nil
}

// RuleSet returns the account's current version.
func (a *Store) RuleSet(ctx context.Context, account string) (rules.Version, error) {
	vs, err := a.latestRuleSets(ctx, account, 0, 1)
	if err != nil || len(vs) == 0 {
		return rules.Version{Account: account}, err
	}
	return vs[0], nil
}

// ReplaceRuleSet creates version expected+1 if expected is the latest.
func (a *Store) ReplaceRuleSet(ctx context.Context, v rules.Version, expected int64) (rules.Version, error) {
	stale := fmt.Errorf("elastic: rule set of %q is not at version %d: %w", v.Account, expected, ports.ErrStale)
	current, err := a.RuleSet(ctx, v.Account)
	if err != nil {
		return rules.Version{}, err
	}
	if current.Number != expected {
		return rules.Version{}, stale
	}
	v.Number = expected + 1
	rec, err := rulerecord.Of(v)
	if err != nil {
		return rules.Version{}, fmt.Errorf("elastic: %w", err)
	}
	created, err := a.put(ctx, ruleSets, ruleSetID(v.Account, v.Number), rec, putCreate, 0, 0)
	switch {
	case err != nil:
		return rules.Version{}, err
	case !created:
		return rules.Version{}, stale
	}
	return v, nil
}

// RuleSetHistory returns the account's versions below before, newest first.
func (a *Store) RuleSetHistory(ctx context.Context, account string, before int64, limit int) ([]rules.Version, error) {
	if limit <= 0 {
		return nil, nil
	}
	return a.latestRuleSets(ctx, account, before, limit)
}

// RuleSetVersions returns every account's latest version number: a composite
// aggregation by account of the highest version, a page of accounts at a time.
func (a *Store) RuleSetVersions(ctx context.Context) (map[string]int64, error) {
	if err := a.refresh(ctx, ruleSets); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	var after map[string]any
	for {
		composite := map[string]any{"size": searchPage,
			"sources": []any{map[string]any{"account": map[string]any{"terms": map[string]any{"field": rulerecord.FieldAccount}}}}}
		if after != nil {
			composite["after"] = after
		}
		body, err := esclient.JSONBody(map[string]any{"size": 0, "track_total_hits": false, "aggs": map[string]any{
			"accounts": map[string]any{"composite": composite,
				"aggs": map[string]any{"latest": map[string]any{"max": map[string]any{"field": rulerecord.FieldNumber}}}}}})
		if err != nil {
			return nil, err
		}
		var reply struct {
			Aggregations struct {
				Accounts struct {
					AfterKey map[string]any `json:"after_key"`
					Buckets  []struct {
						Key    struct{ Account string } `json:"key"`
						Latest struct{ Value float64 }  `json:"latest"`
					} `json:"buckets"`
				} `json:"accounts"`
			} `json:"aggregations"`
		}
		if _, err := a.call(ctx, "search "+ruleSets, esapi.SearchRequest{Index: []string{a.index(ruleSets)}, Body: body}, &reply); err != nil {
			return nil, err
		}
		page := reply.Aggregations.Accounts
		for _, b := range page.Buckets {
			out[b.Key.Account] = int64(b.Latest.Value)
		}
		if len(page.Buckets) < searchPage || page.AfterKey == nil {
			return out, nil
		}
		after = page.AfterKey
	}
}
