package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var (
	ruleKey    = domain.Principal{Scope: acmeLive.Scope, KeyID: "key_00000000acme"}
	rulesHash  = []byte("app-test-hash-key")
	rulesClock = fixedClock{testNow}
)

// countedRules records what the rule book reports.
type countedRules struct {
	mu                sync.Mutex
	matches           map[string]int // "id action mode"
	dropped, withheld int
}

func (c *countedRules) ObserveRuleMatches(id, action string, dryRun bool, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mode := "enforce"
	if dryRun {
		mode = "dry_run"
	}
	c.matches[id+" "+action+" "+mode] += n
}

func (c *countedRules) ObserveRuleEffects(dropped, withheld int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropped += dropped
	c.withheld += withheld
}

// rulesFixture is an ingester and the rule set use case on one rule set
// store, writing to a recording store.
type rulesFixture struct {
	written *recordingStore
	store   ports.RuleSetStore
	book    *app.RuleBook
	rules   *app.RuleSets
	ingest  *app.Ingester
	counts  *countedRules
}

func newRulesFixture(t *testing.T, store ports.RuleSetStore, cfg app.RulesConfig) rulesFixture {
	t.Helper()
	f := rulesFixture{written: &recordingStore{}, store: store, counts: &countedRules{matches: map[string]int{}}}
	var err error
	if f.book, err = app.NewRuleBook(store, cfg, f.counts, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	policy := app.DefaultConfig().Policy()
	if f.ingest, err = app.NewIngesterWith(app.IngestPorts{Store: f.written, Lookup: f.written, Clock: rulesClock, Rules: f.book},
		policy, app.DefaultAdmissionOptions()); err != nil {
		t.Fatal(err)
	}
	f.rules = app.NewRuleSets(store, f.book, app.NewReader(f.written, policy, rulesClock), policy, rulesClock)
	return f
}

func withHashKey() app.RulesConfig {
	cfg := app.DefaultRulesConfig()
	cfg.HashKey = rulesHash
	return cfg
}

func (f rulesFixture) replace(t *testing.T, doc string, expected int64) {
	t.Helper()
	if _, err := f.rules.Replace(t.Context(), ruleKey, []byte(doc), "test", expected); err != nil {
		t.Fatalf("Replace: %v", err)
	}
}

const probesAndTokens = `{
	"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": "remove"}},
	            {"id": "would-mask-ip", "select": ["ip_address"], "action": {"type": "mask"}, "mode": "dry_run"}],
	"ingest": [{"id": "probes", "scope": {"paths": ["/healthz"]}, "action": "drop"}],
	"retention": [{"id": "short", "scope": {"applications": ["shop"]}, "keep": "7d"},
	              {"id": "long", "scope": {"applications": ["ledger"]}, "keep": "400d"}]}`

func item(name, path string) string {
	return fmt.Sprintf(`{"name":%q,"created_at":1714564800,"method":"GET","path":%q,"ip_address":"203.0.113.9","request":{},"response":{"status_code":200}}`, name, path)
}

// A dropped message is appended as a tally, and its identity says so; the others are
// scrubbed, their retention shortened by a rule but never lengthened past
// the policy's; every match is counted.
func TestIngestAppliesTheAccountsRules(t *testing.T) {
	f := newRulesFixture(t, memory.NewRuleSetStore(), withHashKey())
	f.replace(t, probesAndTokens, 0)
	body := "[" + item("shop", "/reset?token=s3cret&page=2") + "," + item("shop", "/healthz") + "," + item("ledger", "/entries") + "]"
	res, err := f.ingest.Submit(t.Context(), ruleKey, draftsOf(body), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Identities) != 3 || res.Identities[0].Dropped || !res.Identities[1].Dropped || res.Identities[2].Dropped {
		t.Fatalf("identities %+v: want three, the health check's dropped", res.Identities)
	}
	if len(f.written.appended) != 3 {
		t.Fatalf("appended %d messages, want the 2 kept and the tally of the one dropped, in one write", len(f.written.appended))
	}
	shop, probe, ledger := f.written.appended[0], f.written.appended[1], f.written.appended[2]
	if !probe.Tally || probe.ID != res.Identities[1].ID || shop.Tally || ledger.Tally {
		t.Errorf("appended %+v: want the health check as a tally, the others whole", f.written.appended)
	}
	if shop.ID != res.Identities[0].ID || shop.Path != "/reset?page=2" || shop.IPAddress != "203.0.113.9" {
		t.Errorf("stored %s %q from %s: want the first item, its token removed, its address kept (a dry run)", shop.ID, shop.Path, shop.IPAddress)
	}
	if want := shop.CreatedAt.Add(7 * 24 * time.Hour); !shop.ExpiresAt.Equal(want) {
		t.Errorf("shop expires %s, want 7 days after created_at", shop.ExpiresAt)
	}
	if want := ledger.CreatedAt.Add(domain.DefaultRetention); !ledger.ExpiresAt.Equal(want) {
		t.Errorf("ledger expires %s, want the policy's %s: reads keep to it", ledger.ExpiresAt, domain.DefaultRetention)
	}
	want := map[string]int{"token remove enforce": 1, "probes drop enforce": 1, "would-mask-ip mask dry_run": 3} // the tally is scrubbed too
	if fmt.Sprint(f.counts.matches) != fmt.Sprint(want) || f.counts.dropped != 1 {
		t.Errorf("counted %v and %d dropped, want %v and 1", f.counts.matches, f.counts.dropped, want)
	}

	// Every item dropped: its tally alone is written, every identity returned.
	res, err = f.ingest.Submit(t.Context(), ruleKey, draftsOf(item("shop", "/healthz")), "")
	if err != nil || len(res.Identities) != 1 || !res.Identities[0].Dropped || len(f.written.appended) != 4 || !f.written.appended[3].Tally {
		t.Errorf("a lone health check: %+v (%v), %d appended; want its identity, dropped, and its tally written", res, err, len(f.written.appended))
	}
	// Another account has no rules.
	globex := domain.Principal{Scope: domain.Scope{Account: "globex", Domain: "live"}}
	if res, err := f.ingest.Submit(t.Context(), globex, draftsOf(item("shop", "/healthz")), ""); err != nil || res.Identities[0].Dropped {
		t.Errorf("another account's health check: %+v (%v), want it stored", res, err)
	}
}

// Rules scoped to a source act on what that source captured alone.
func TestIngestPassesTheSource(t *testing.T) {
	f := newRulesFixture(t, memory.NewRuleSetStore(), withHashKey())
	f.replace(t, `{"ingest": [{"id": "proxied-probes", "scope": {"paths": ["/healthz"], "sources": ["proxy"]}, "action": "drop"}]}`, 0)
	ex := []domain.Exchange{{Name: "shop", CreatedAt: testNow.Add(-time.Minute), Method: "GET", Path: "/healthz", Response: domain.ExchangeResponse{StatusCode: 200}}}
	for src, dropped := range map[rules.Source]bool{rules.SourceProxy: true, rules.SourceAPI: false, "": false, rules.SourceOTLP: false} {
		ids, err := app.LocalSubmitter{Ingester: f.ingest, Principal: ruleKey, Source: src}.SubmitExchanges(t.Context(), ex)
		if err != nil || len(ids) != 1 || ids[0].Dropped != dropped {
			t.Errorf("source %q: %+v (%v), want dropped %v", src, ids, err, dropped)
		}
	}
}

// faultyRuleSets is a rule set store that fails while down is set.
type faultyRuleSets struct {
	ports.RuleSetStore
	mu   sync.Mutex
	down bool
}

func (s *faultyRuleSets) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *faultyRuleSets) RuleSetVersions(ctx context.Context) (map[string]int64, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return nil, fmt.Errorf("dial: %w", ports.ErrUnavailable)
	}
	return s.RuleSetStore.RuleSetVersions(ctx)
}

// A replica that cannot read the rule sets stores nothing: it never writes
// an exchange its rules may have had to scrub.
func TestIngestFailsClosedUntilTheRulesAreRead(t *testing.T) {
	store := &faultyRuleSets{RuleSetStore: memory.NewRuleSetStore(), down: true}
	f := newRulesFixture(t, store, withHashKey())
	_, err := f.ingest.Submit(t.Context(), ruleKey, draftsOf(submitted), "")
	if !errors.Is(err, ports.ErrUnavailable) || len(f.written.appended) != 0 {
		t.Fatalf("rules unreadable: %v with %d stored, want ErrUnavailable and nothing stored", err, len(f.written.appended))
	}
	store.setDown(false)
	if _, err := f.ingest.Submit(t.Context(), ruleKey, draftsOf(submitted), ""); err != nil || len(f.written.appended) != 1 {
		t.Errorf("rules readable again: %v with %d stored", err, len(f.written.appended))
	}
}

// Replace: the reason and key are kept; a stale version, a bad set, a set
// that hashes without a key and a portal session change nothing.
func TestReplaceRefusesAndChangesNothing(t *testing.T) {
	ctx := t.Context()
	f := newRulesFixture(t, memory.NewRuleSetStore(), app.DefaultRulesConfig()) // no hash key
	f.replace(t, probesAndTokens, 0)
	current, err := f.rules.Current(ctx, ruleKey)
	if err != nil || current.Version.Number != 1 || current.Version.KeyID != ruleKey.KeyID || current.Version.Reason != "test" ||
		!current.Version.At.Equal(testNow) || current.FileVersion != "" {
		t.Fatalf("current %+v (%v): want version 1 by the key, with its reason and time", current, err)
	}
	unknownDetector := `{"privacy": [{"id": "p", "select": ["**"], "match": {"detector": "dna"}, "action": {"type": "mask"}}]}`
	hashes := `{"privacy": [{"id": "m", "select": ["**"], "action": {"type": "mask"}}, {"id": "h", "select": ["query.user"], "action": {"type": "hash"}}]}`
	for _, tc := range []struct {
		name      string
		principal domain.Principal
		doc       string
		expected  int64
		want      error
		field     string
	}{
		{"stale", ruleKey, `{}`, 0, ports.ErrStale, ""},
		{"unknown detector", ruleKey, unknownDetector, 1, nil, "privacy[0].match.detector"},
		{"hash without a key", ruleKey, hashes, 1, nil, "privacy[1].action.type"},
		{"not JSON", ruleKey, `{"privacy": [`, 1, nil, ""},
		{"portal session", domain.Principal{Scope: acmeLive.Scope, ReadOnly: true}, `{}`, 1, ports.ErrForbidden, ""},
		{"portal session of an application", domain.Principal{Scope: acmeLive.Scope, Name: "shop"}, `{}`, 1, ports.ErrForbidden, ""},
	} {
		_, err := f.rules.Replace(ctx, tc.principal, []byte(tc.doc), "why", tc.expected)
		var invalid *domain.ValidationError
		switch {
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		case tc.want == nil && !errors.As(err, &invalid):
			t.Errorf("%s: %v, want a validation error", tc.name, err)
		case tc.field != "" && (len(invalid.Fields) == 0 || invalid.Fields[0].Field != tc.field):
			t.Errorf("%s: %v, want it to name %s", tc.name, err, tc.field)
		}
	}
	if v, err := f.store.RuleSet(ctx, "acme"); err != nil || v.Number != 1 {
		t.Errorf("after the refusals the store holds version %d (%v), want 1", v.Number, err)
	}
	if _, err := f.rules.Current(ctx, domain.Principal{Scope: acmeLive.Scope, ReadOnly: true}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a portal session read the rules: %v", err)
	}
	res, err := f.ingest.Submit(ctx, ruleKey, draftsOf(item("shop", "/healthz")), "")
	if err != nil || !res.Identities[0].Dropped {
		t.Errorf("version 1 stopped ruling after the refusals: %+v (%v)", res, err)
	}
}

func TestHistoryPagesWithDifferences(t *testing.T) {
	f := newRulesFixture(t, memory.NewRuleSetStore(), withHashKey())
	docs := []string{
		`{"privacy": [{"id": "a", "select": ["query.a"], "action": {"type": "mask"}}]}`,
		`{"privacy": [{"id": "a", "select": ["query.a"], "action": {"type": "hash"}}, {"id": "b", "select": ["query.b"], "action": {"type": "mask"}}]}`,
		`{"privacy": [{"id": "b", "select": ["query.b"], "action": {"type": "mask"}}]}`,
	}
	for i, doc := range docs {
		f.replace(t, doc, int64(i))
	}
	page, more, err := f.rules.History(t.Context(), ruleKey, 0, 2)
	if err != nil || !more || len(page) != 2 {
		t.Fatalf("first page: %d versions, more %v (%v); want 2 and more", len(page), more, err)
	}
	if d := page[0].Diff; page[0].Version.Number != 3 || fmt.Sprint(d.Removed) != "[a]" || len(d.Added)+len(d.Changed) != 0 {
		t.Errorf("version 3: %+v", page[0])
	}
	if d := page[1].Diff; page[1].Version.Number != 2 || fmt.Sprint(d.Added) != "[b]" || fmt.Sprint(d.Changed) != "[a]" {
		t.Errorf("version 2: %+v", page[1])
	}
	page, more, err = f.rules.History(t.Context(), ruleKey, 2, 2)
	if err != nil || more || len(page) != 1 || page[0].Version.Number != 1 || fmt.Sprint(page[0].Diff.Added) != "[a]" {
		t.Errorf("last page: %+v, more %v (%v); want version 1 adding a", page, more, err)
	}
}

// A rules file rules the accounts it names: their writes go through it, the
// API shows it and may not change it; other accounts use the store.
func TestRulesFileRulesItsAccounts(t *testing.T) {
	cfg := withHashKey()
	rs, err := rules.Parse([]byte(probesAndTokens))
	if err != nil {
		t.Fatal(err)
	}
	cfg.File = map[string]rules.RuleSet{"acme": rs}
	f := newRulesFixture(t, memory.NewRuleSetStore(), cfg)
	current, err := f.rules.Current(t.Context(), ruleKey)
	if err != nil || len(current.FileVersion) != 12 || current.Version.Number != 0 || len(current.Version.Rules.Ingest) != 1 {
		t.Fatalf("current %+v (%v): want the file's rules and version", current, err)
	}
	if _, err := f.rules.Replace(t.Context(), ruleKey, []byte(`{}`), "try", 0); !errors.Is(err, app.ErrRuledByFile) {
		t.Errorf("replacing a file's rules: %v, want ErrRuledByFile", err)
	}
	if res, err := f.ingest.Submit(t.Context(), ruleKey, draftsOf(item("shop", "/healthz")), ""); err != nil || !res.Identities[0].Dropped {
		t.Errorf("the file's ingest rule did not drop: %+v (%v)", res, err)
	}
	globex := domain.Principal{Scope: domain.Scope{Account: "globex", Domain: "live"}, KeyID: "key_globex"}
	if _, err := f.rules.Replace(t.Context(), globex, []byte(`{}`), "an account the file does not name", 0); err != nil {
		t.Errorf("an account the file does not name: %v", err)
	}
	bad := withHashKey()
	bad.File = map[string]rules.RuleSet{"acme": {Privacy: []rules.PrivacyRule{{ID: "x", Select: []string{"**"}, Match: rules.Match{Detector: "dna"}, Action: rules.Action{Type: "mask"}}}}}
	if _, err := app.NewRuleBook(nil, bad, nil, nil); err == nil || !strings.Contains(err.Error(), "acme") || !strings.Contains(err.Error(), "privacy[0].match.detector") {
		t.Errorf("a file that does not compile: %v, want an error naming the account and the field", err)
	}
}

func TestTryShowsWhatRulesWouldDo(t *testing.T) {
	f := newRulesFixture(t, memory.NewRuleSetStore(), withHashKey())
	f.replace(t, probesAndTokens, 0)
	ctx := t.Context()
	sample := draftsOf(item("shop", "/reset?token=s3cret"))
	got, err := f.rules.Try(ctx, ruleKey, app.TryInput{Exchange: &sample})
	if err != nil || got.Version != 1 || got.Message.Path != "/reset" || fmt.Sprint(got.Outcome.Changes) != "[{token query.token}]" {
		t.Errorf("current rules on a sample: %+v (%v)", got, err)
	}
	proposed := rules.RuleSet{Ingest: []rules.IngestRule{{ID: "all-get", Scope: rules.Scope{Methods: []string{"GET"}}, Action: rules.IngestDrop}}}
	if got, err := f.rules.Try(ctx, ruleKey, app.TryInput{Rules: &proposed, Exchange: &sample}); err != nil || got.Outcome.Stored || got.Version != 0 {
		t.Errorf("proposed rules on a sample: %+v (%v), want it dropped", got.Outcome, err)
	}
	if len(f.written.appended) != 0 {
		t.Errorf("trying stored %d messages", len(f.written.appended))
	}
	badRules := rules.RuleSet{Ingest: []rules.IngestRule{{ID: "x", Action: "archive"}}}
	for name, tc := range map[string]struct {
		in    app.TryInput
		field string
	}{
		"bad rules":     {app.TryInput{Rules: &badRules, Exchange: &sample}, "rules.ingest[0].action"},
		"bad exchange":  {app.TryInput{Exchange: ptr(draftsOf(`{"name":"shop"}`))}, "exchange.created_at"},
		"two exchanges": {app.TryInput{Exchange: ptr(draftsOf("[" + item("a", "/") + "," + item("b", "/") + "]"))}, "exchange"},
		"nothing":       {app.TryInput{}, "exchange"},
	} {
		_, err := f.rules.Try(ctx, ruleKey, tc.in)
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) || invalid.Fields[0].Field != tc.field {
			t.Errorf("%s: %v, want a validation error naming %s", name, err, tc.field)
		}
	}
}

func ptr[T any](v T) *T { return &v }
