package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// RuleSetStoreMaker returns a fresh, empty rule set store for one subtest and
// registers its own cleanup with t.Cleanup, as StoreMaker does.
type RuleSetStoreMaker func(ctx context.Context, t *testing.T) (ports.RuleSetStore, error)

// RunRuleSetStoreTests checks newStore's stores against the
// ports.RuleSetStore contract: versions round trip every field, the
// compare-and-set refuses stale and future versions and lets one of
// concurrent changers win, the history pages newest first, accounts stay
// apart, and two replicas of the ingest path on one store apply a new
// version within their poll interval (and at once on the replica that saved
// it). Each subtest gets a fresh store.
func RunRuleSetStoreTests(t *testing.T, newStore RuleSetStoreMaker) {
	runOnFreshStores(t, "RuleSetStoreMaker", newStore, []storeCase[ports.RuleSetStore]{
		{"NoneSavedIsVersionZero", testRuleSetNone},
		{"RoundTripEveryField", testRuleSetRoundTrip},
		{"CompareAndSet", testRuleSetCompareAndSet},
		{"ConcurrentReplacesOneWins", testRuleSetConcurrentReplaces},
		{"HistoryNewestFirst", testRuleSetHistory},
		{"AccountsApart", testRuleSetAccounts},
		{"ReturnedVersionsBelongToCaller", testRuleSetCopies},
		{"ReplicasApplyNewVersion", testRuleSetReplicas},
	})
}

// fullRuleSet sets every field of every kind of rule to something other than
// its default.
func fullRuleSet() rules.RuleSet {
	minMS, maxMS, value := 250.5, 9000.0, "synthetic ü \"probe\""
	everyScope := rules.Scope{Domains: []string{"live"}, Applications: []string{"shop", "pay"}, Methods: []string{"POST"},
		Paths: []string{"/v1/users/**"}, Routes: []string{"/v1/users/{id}"}, Sources: []rules.Source{rules.SourceAPI, rules.SourceProxy}}
	return rules.RuleSet{
		Privacy: []rules.PrivacyRule{
			{ID: "emails", Scope: everyScope, Select: []string{"request.body.**", `body."a.b"`}, Except: []string{"request.body.public"},
				Match: rules.Match{Detector: "email"}, Action: rules.Action{Type: rules.ActionMask}},
			{ID: "order-ids", Select: []string{"path"}, Match: rules.Match{Pattern: `/orders/(\d+)`, Group: 1},
				Action: rules.Action{Type: rules.ActionReplace, With: "{id}"}, Mode: rules.ModeDryRun},
			{ID: "cards", Select: []string{"**"}, Match: rules.Match{Detector: "card_number"},
				Action: rules.Action{Type: rules.ActionPartial, KeepFirst: 2, KeepLast: 4}, Mode: rules.ModeEnforce},
		},
		Ingest: []rules.IngestRule{
			{ID: "probes", Scope: rules.Scope{Paths: []string{"/healthz"}}, Status: []string{"2xx", "304"},
				MinDurationMS: &minMS, MaxDurationMS: &maxMS, Header: &rules.HeaderIs{Name: "User-Agent", Value: &value}, Action: rules.IngestDrop},
			{ID: "search", Scope: rules.Scope{Routes: []string{"/v1/search"}}, Action: rules.IngestSample, SampleRate: 10, Mode: rules.ModeDryRun},
		},
		Retention: []rules.RetentionRule{{ID: "payments", Scope: rules.Scope{Applications: []string{"pay"}}, Keep: "7d", Bodies: "2d"}},
		Subjects:  []rules.SubjectKey{{ID: "user", Select: []string{"request.headers.x-user-id"}}, {ID: "mail", Detector: "email"}},
	}
}

// ruleVersion is a version of account's rules to save, at a whole microsecond.
func ruleVersion(account string, rs rules.RuleSet, reason string) rules.Version {
	return rules.Version{Account: account, Rules: rs, KeyID: "key_0123456789ab", Reason: reason, At: domain.Micro(time.Now())}
}

// oneRule is a rule set of one masking rule named id.
func oneRule(id string) rules.RuleSet {
	return rules.RuleSet{Privacy: []rules.PrivacyRule{{ID: id, Select: []string{"query." + id}, Action: rules.Action{Type: rules.ActionMask}}}}
}

func mustReplaceRuleSet(t testing.TB, s ports.RuleSetStore, v rules.Version, expected int64) rules.Version {
	t.Helper()
	saved, err := s.ReplaceRuleSet(t.Context(), v, expected)
	if err != nil {
		t.Fatalf("ReplaceRuleSet(%s, expected %d): %v", v.Account, expected, err)
	}
	return saved
}

func mustRuleSet(t testing.TB, s ports.RuleSetStore, account string) rules.Version {
	t.Helper()
	v, err := s.RuleSet(t.Context(), account)
	if err != nil {
		t.Fatalf("RuleSet(%s): %v", account, err)
	}
	return v
}

func testRuleSetNone(t *testing.T, s ports.RuleSetStore) {
	ctx := t.Context()
	if v := mustRuleSet(t, s, "acme"); v.Number != 0 || v.Account != "acme" || len(v.Rules.Privacy)+len(v.Rules.Ingest)+len(v.Rules.Retention)+len(v.Rules.Subjects) != 0 {
		t.Errorf("an account that never saved rules: %+v, want version 0 of acme without rules", v)
	}
	if h, err := s.RuleSetHistory(ctx, "acme", 0, 10); err != nil || len(h) != 0 {
		t.Errorf("history without versions: %v (%v), want none", h, err)
	}
	if vs, err := s.RuleSetVersions(ctx); err != nil || len(vs) != 0 {
		t.Errorf("versions of an empty store: %v (%v), want none", vs, err)
	}
}

func testRuleSetRoundTrip(t *testing.T, s ports.RuleSetStore) {
	want := ruleVersion("acme", fullRuleSet(), "mask e-mails, drop probes (TICKET-42) ‰")
	saved := mustReplaceRuleSet(t, s, want, 0)
	want.Number = 1
	assertSame(t, "the saved version", want, saved)
	assertSame(t, "the current version", want, mustRuleSet(t, s, "acme"))
	h, err := s.RuleSetHistory(t.Context(), "acme", 0, 10)
	if err != nil || len(h) != 1 {
		t.Fatalf("history: %v (%v), want the one version", h, err)
	}
	assertSame(t, "the history's version", want, h[0])
	if _, err := rules.Compile(h[0].Rules, []byte("key")); err != nil {
		t.Errorf("the stored rules no longer compile: %v", err)
	}
}

func testRuleSetCompareAndSet(t *testing.T, s ports.RuleSetStore) {
	ctx := t.Context()
	if _, err := s.ReplaceRuleSet(ctx, ruleVersion("acme", oneRule("a"), "first"), 1); !errors.Is(err, ports.ErrStale) {
		t.Errorf("expecting version 1 of an account at 0: %v, want ErrStale", err)
	}
	if v := mustReplaceRuleSet(t, s, ruleVersion("acme", oneRule("a"), "first"), 0); v.Number != 1 {
		t.Errorf("first version numbered %d, want 1", v.Number)
	}
	for _, expected := range []int64{0, 2, 7} {
		if _, err := s.ReplaceRuleSet(ctx, ruleVersion("acme", oneRule("x"), "stale"), expected); !errors.Is(err, ports.ErrStale) {
			t.Errorf("expecting version %d of an account at 1: %v, want ErrStale", expected, err)
		}
	}
	if v := mustRuleSet(t, s, "acme"); v.Number != 1 || v.Rules.Privacy[0].ID != "a" || v.Reason != "first" {
		t.Errorf("after refused replacements: %+v, want version 1 unchanged", v)
	}
	if v := mustReplaceRuleSet(t, s, ruleVersion("acme", oneRule("b"), "second"), 1); v.Number != 2 {
		t.Errorf("second version numbered %d, want 2", v.Number)
	}
	if v := mustRuleSet(t, s, "acme"); v.Number != 2 || v.Rules.Privacy[0].ID != "b" {
		t.Errorf("current %+v, want version 2", v)
	}
}

// Changers racing from the same version: one wins each round, the others
// are told they are stale, and the history holds each version once.
func testRuleSetConcurrentReplaces(t *testing.T, s ports.RuleSetStore) {
	const changers, rounds = 6, 4
	ctx := t.Context()
	for round := range int64(rounds) {
		var wg sync.WaitGroup
		errs := make([]error, changers)
		for i := range changers {
			wg.Go(func() {
				_, errs[i] = s.ReplaceRuleSet(ctx, ruleVersion("acme", oneRule(fmt.Sprintf("r%d-c%d", round, i)), "race"), round)
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ports.ErrStale):
				t.Fatalf("round %d: %v, want nil or ErrStale", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d changers won, want exactly 1", round, won)
		}
	}
	h, err := s.RuleSetHistory(ctx, "acme", 0, 100)
	if err != nil || len(h) != rounds {
		t.Fatalf("history: %d versions (%v), want %d", len(h), err, rounds)
	}
	for i, v := range h {
		if v.Number != int64(rounds-i) {
			t.Errorf("history[%d] is version %d, want %d", i, v.Number, rounds-i)
		}
	}
}

func testRuleSetHistory(t *testing.T, s ports.RuleSetStore) {
	ctx := t.Context()
	for i := range int64(5) {
		mustReplaceRuleSet(t, s, ruleVersion("acme", oneRule(fmt.Sprintf("v%d", i+1)), fmt.Sprintf("reason %d", i+1)), i)
	}
	numbers := func(before int64, limit int) []int64 {
		t.Helper()
		h, err := s.RuleSetHistory(ctx, "acme", before, limit)
		if err != nil {
			t.Fatalf("RuleSetHistory(before %d, limit %d): %v", before, limit, err)
		}
		var out []int64
		for _, v := range h {
			if v.Reason != fmt.Sprintf("reason %d", v.Number) || v.Rules.Privacy[0].ID != fmt.Sprintf("v%d", v.Number) {
				t.Errorf("version %d holds %+v, not what was saved as it", v.Number, v)
			}
			out = append(out, v.Number)
		}
		return out
	}
	for _, tc := range []struct {
		before int64
		limit  int
		want   []int64
	}{
		{0, 2, []int64{5, 4}},
		{4, 2, []int64{3, 2}},
		{2, 10, []int64{1}},
		{1, 10, nil},
		{0, 10, []int64{5, 4, 3, 2, 1}},
		{99, 1, []int64{5}},
	} {
		if got := numbers(tc.before, tc.limit); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("history before %d, limit %d: %v, want %v", tc.before, tc.limit, got, tc.want)
		}
	}
}

func testRuleSetAccounts(t *testing.T, s ports.RuleSetStore) {
	ctx := t.Context()
	mustReplaceRuleSet(t, s, ruleVersion("acme", oneRule("a1"), "acme 1"), 0)
	mustReplaceRuleSet(t, s, ruleVersion("acme", oneRule("a2"), "acme 2"), 1)
	mustReplaceRuleSet(t, s, ruleVersion("globex", oneRule("g1"), "globex 1"), 0)
	if _, err := s.ReplaceRuleSet(ctx, ruleVersion("globex", oneRule("g2"), "globex from acme's version"), 2); !errors.Is(err, ports.ErrStale) {
		t.Errorf("globex at 1 replaced expecting acme's version 2: %v, want ErrStale", err)
	}
	if v := mustRuleSet(t, s, "globex"); v.Number != 1 || v.Rules.Privacy[0].ID != "g1" {
		t.Errorf("globex: %+v, want its version 1", v)
	}
	if h, err := s.RuleSetHistory(ctx, "globex", 0, 10); err != nil || len(h) != 1 || h[0].Account != "globex" {
		t.Errorf("globex's history: %+v (%v), want its one version", h, err)
	}
	vs, err := s.RuleSetVersions(ctx)
	if err != nil || len(vs) != 2 || vs["acme"] != 2 || vs["globex"] != 1 {
		t.Errorf("versions %v (%v), want acme 2 and globex 1", vs, err)
	}
	if v := mustRuleSet(t, s, "acm"); v.Number != 0 {
		t.Errorf("an account named like another: version %d, want 0", v.Number)
	}
}

func testRuleSetCopies(t *testing.T, s ports.RuleSetStore) {
	v := ruleVersion("acme", fullRuleSet(), "copies")
	saved := mustReplaceRuleSet(t, s, v, 0)
	v.Rules.Privacy[0].Select[0] = "changed by the caller after saving"
	saved.Rules.Privacy[0].Select[0] = "changed in the saved copy"
	got := mustRuleSet(t, s, "acme")
	got.Rules.Ingest[0].Status[0] = "changed in the returned copy"
	again := mustRuleSet(t, s, "acme")
	if again.Rules.Privacy[0].Select[0] != "request.body.**" || again.Rules.Ingest[0].Status[0] != "2xx" {
		t.Errorf("the store shares memory with its callers: %+v", again.Rules)
	}
}
