package ports

import (
	"context"

	"github.com/reqlog/reqlog/domain/rules"
)

// RuleSetStore keeps each account's rule set (domain/rules) as numbered
// versions: the current one, which every write of the account goes through,
// and the history of who saved each, when and why. Several replicas share one
// store; each polls RuleSetVersions to learn of versions another saved. Every
// method takes ctx first and reports backend outages wrapping ErrUnavailable;
// returned values belong to the caller, and a store keeps no reference to
// what it is given.
type RuleSetStore interface {
	// RuleSet returns the account's current version, the one with the
	// highest Number; with none saved, a Version of the account with Number
	// 0 and no rules (not an error). It MUST see every version whose
	// ReplaceRuleSet returned nil, from any replica.
	RuleSet(ctx context.Context, account string) (rules.Version, error)
	// ReplaceRuleSet saves v (its Account, Rules, KeyID, Reason and At) as
	// the account's version expected+1, if the current version is expected
	// (0: none saved yet), and returns it numbered. It MUST be atomic: of
	// concurrent calls with the same expected at most one succeeds; the
	// others, and any call whose expected is not the current version, fail
	// with an error wrapping ErrStale, having changed nothing. It MUST be
	// durable, and its version seen by RuleSet on every replica, when it
	// returns nil.
	ReplaceRuleSet(ctx context.Context, v rules.Version, expected int64) (rules.Version, error)
	// RuleSetHistory returns the account's versions with Number below before
	// (0: no bound), newest first, at most limit; none is not an error.
	RuleSetHistory(ctx context.Context, account string, before int64, limit int) ([]rules.Version, error)
	// RuleSetVersions returns the current version number of every account
	// that has saved one: what a replica polls to learn of new versions, so
	// it SHOULD cost one small query however long the histories are.
	RuleSetVersions(ctx context.Context) (map[string]int64, error)
}
