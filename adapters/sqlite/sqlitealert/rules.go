package sqlitealert

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/reqlog/reqlog/adapters/rulerecord"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RuleSetStore = (*AlertStore)(nil)

// The accounts' rule sets live in the alert file, beside alerting's
// configuration: table rule_sets (alertSchema), one row per version, each a
// rulerecord as JSON. The compare-and-set is a transaction begun IMMEDIATE,
// so that reading the latest version and inserting the next have no other
// write between them.

// RuleSet returns the account's current version.
func (a *AlertStore) RuleSet(ctx context.Context, account string) (rules.Version, error) {
	vs, err := a.RuleSetHistory(ctx, account, 0, 1)
	if err != nil || len(vs) == 0 {
		return rules.Version{Account: account}, err
	}
	return vs[0], nil
}

// ReplaceRuleSet inserts version expected+1 if expected is the latest.
func (a *AlertStore) ReplaceRuleSet(ctx context.Context, v rules.Version, expected int64) (rules.Version, error) {
	v.Number = expected + 1
	rec, err := rulerecord.Of(v)
	if err != nil {
		return rules.Version{}, fmt.Errorf("sqlite: %w", err)
	}
	doc, err := encodeDoc(rec)
	if err != nil {
		return rules.Version{}, err
	}
	err = a.inTx(ctx, "replace rule set", func(tx *sql.Tx) error {
		var latest int64
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM rule_sets WHERE account = ?", v.Account).Scan(&latest); err != nil {
			return storeError(ctx, "replace rule set", err)
		}
		if latest != expected {
			return fmt.Errorf("sqlite: rule set of %q is at version %d, not %d: %w", v.Account, latest, expected, ports.ErrStale)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO rule_sets (account, version, doc) VALUES (?, ?, ?)", v.Account, v.Number, doc); err != nil {
			return storeError(ctx, "replace rule set", err)
		}
		return nil
	})
	if err != nil {
		return rules.Version{}, err
	}
	return v, nil
}

// RuleSetHistory returns the account's versions below before, newest first.
func (a *AlertStore) RuleSetHistory(ctx context.Context, account string, before int64, limit int) ([]rules.Version, error) {
	if before <= 0 {
		before = 1 << 62
	}
	return docs(ctx, a.read, "rule sets", "SELECT doc FROM rule_sets WHERE account = ? AND version < ? ORDER BY version DESC LIMIT ?",
		rulerecord.Record.Version, account, before, limit)
}

// RuleSetVersions returns every account's latest version number.
func (a *AlertStore) RuleSetVersions(ctx context.Context) (map[string]int64, error) {
	rows, err := a.read.QueryContext(ctx, "SELECT account, max(version) FROM rule_sets GROUP BY account")
	if err != nil {
		return nil, storeError(ctx, "rule set versions", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var account string
		var version int64
		if err := rows.Scan(&account, &version); err != nil {
			return nil, storeError(ctx, "rule set versions", err)
		}
		out[account] = version
	}
	if err := rows.Err(); err != nil {
		return nil, storeError(ctx, "rule set versions", err)
	}
	return out, nil
}
