package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RuleSetStore = (*RuleSetStore)(nil)

// RuleSetStore is the in-memory ports.RuleSetStore: each account's versions,
// oldest first, under one mutex. Rule sets are copied in and out through
// their JSON, as the other stores keep them.
type RuleSetStore struct {
	mu       sync.Mutex
	versions map[string][]rules.Version    // by account; index i holds Number i+1
	jobs     map[string][]rules.RescrubJob // by account; index i holds Number i+1
}

// NewRuleSetStore returns an empty store.
func NewRuleSetStore() *RuleSetStore {
	return &RuleSetStore{versions: map[string][]rules.Version{}, jobs: map[string][]rules.RescrubJob{}}
}

// RuleSet returns the account's current version.
func (s *RuleSetStore) RuleSet(_ context.Context, account string) (rules.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[account]
	if len(vs) == 0 {
		return rules.Version{Account: account}, nil
	}
	return copyVersion(vs[len(vs)-1])
}

// ReplaceRuleSet saves v as version expected+1 if expected is current.
func (s *RuleSetStore) ReplaceRuleSet(_ context.Context, v rules.Version, expected int64) (rules.Version, error) {
	saved, err := copyVersion(v)
	if err != nil {
		return rules.Version{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[v.Account]
	if current := int64(len(vs)); current != expected {
		return rules.Version{}, fmt.Errorf("memory: rule set of %q is at version %d, not %d: %w", v.Account, current, expected, ports.ErrStale)
	}
	saved.Number = expected + 1
	s.versions[v.Account] = append(vs, saved)
	return copyVersion(saved)
}

// RuleSetHistory returns the account's versions below before, newest first.
func (s *RuleSetStore) RuleSetHistory(_ context.Context, account string, before int64, limit int) ([]rules.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[account]
	if before > 0 && before <= int64(len(vs)) {
		vs = vs[:before-1]
	}
	var out []rules.Version
	for _, v := range slices.Backward(vs) {
		if len(out) == limit {
			break
		}
		c, err := copyVersion(v)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// RuleSetVersions returns every account's current version number.
func (s *RuleSetStore) RuleSetVersions(context.Context) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.versions))
	for account, vs := range s.versions {
		out[account] = int64(len(vs))
	}
	return out, nil
}

// copyVersion is a deep copy of v: its rules through their JSON.
func copyVersion(v rules.Version) (rules.Version, error) {
	raw, err := rules.Encode(v.Rules)
	if err != nil {
		return rules.Version{}, fmt.Errorf("memory: %w", err)
	}
	if v.Rules, err = rules.Parse(raw); err != nil {
		return rules.Version{}, fmt.Errorf("memory: %w", err)
	}
	return v, nil
}
