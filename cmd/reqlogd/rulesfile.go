package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain/rules"
)

// maxRulesFileBytes bounds REQLOG_RULES_FILE: every account's rule set at its
// bounds, and more.
const maxRulesFileBytes = 64 << 20

// loadRulesFile reads REQLOG_RULES_FILE: a mapping of account names to rule
// sets, in JSON (a name ending in .json) or YAML, each set the document PUT
// /v1/rules takes. YAML is read into generic values and written as JSON, so
// both forms go through rules.Parse: unknown fields are refused alike. Each
// set is compiled here, so a mistake stops start-up naming the account and
// the field ("acme: privacy[0].match.detector must be one of …").
func loadRulesFile(path string) (map[string]rules.RuleSet, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > maxRulesFileBytes {
		return nil, fmt.Errorf("is larger than %d bytes", maxRulesFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var accounts map[string]json.RawMessage
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		if err := json.Unmarshal(data, &accounts); err != nil {
			return nil, fmt.Errorf("is not a JSON object of account names to rule sets: %w", err)
		}
	} else if accounts, err = yamlAccounts(data); err != nil {
		return nil, err
	}
	out := make(map[string]rules.RuleSet, len(accounts))
	var errs []error
	for _, account := range slices.Sorted(maps.Keys(accounts)) {
		if !app.ValidAccount(account) {
			errs = append(errs, fmt.Errorf("%q is not an account name (1 to 64 characters from A-Z a-z 0-9 . _ -)", account))
			continue
		}
		rs, err := rules.Parse(accounts[account])
		if err == nil {
			_, err = rules.Compile(rs, []byte("a key to check the rules with"))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", account, err))
			continue
		}
		out[account] = rs
	}
	return out, errors.Join(errs...)
}

// yamlAccounts reads a YAML mapping of account names to rule sets, each set
// turned into JSON.
func yamlAccounts(data []byte) (map[string]json.RawMessage, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("is not YAML: %w", err)
	}
	out := make(map[string]json.RawMessage, len(doc))
	for account, set := range doc {
		raw, err := json.Marshal(set)
		if err != nil {
			return nil, fmt.Errorf("%s: the rule set is not a mapping of string keys: %w", account, err)
		}
		out[account] = raw
	}
	return out, nil
}

// rulesFileReloader is RulesConfig.ReloadFile of the file at path, read at
// start with the given stat: it reads the file again when its size or
// modification time differs from the last read's (an editor's save, or the
// symbolic link a Kubernetes ConfigMap swaps).
func rulesFileReloader(path string, readAt os.FileInfo) func() (map[string]rules.RuleSet, bool, error) {
	last := readAt
	return func() (map[string]rules.RuleSet, bool, error) {
		info, err := os.Stat(path)
		if err != nil {
			return nil, false, err
		}
		if last != nil && info.Size() == last.Size() && info.ModTime().Equal(last.ModTime()) {
			return nil, false, nil
		}
		last = info // a file that does not load is not read again until it changes
		sets, err := loadRulesFile(path)
		return sets, true, err
	}
}
