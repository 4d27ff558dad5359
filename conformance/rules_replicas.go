package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// writtenMessages is a message writer that keeps what it is given: the
// replica tests are about the rule set store, not the message store.
type writtenMessages struct {
	mu   sync.Mutex
	msgs []domain.Message
}

var (
	_ ports.MessageWriter = (*writtenMessages)(nil)
	_ ports.MessageLookup = (*writtenMessages)(nil)
)

func (w *writtenMessages) Append(_ context.Context, msgs []domain.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range msgs {
		w.msgs = append(w.msgs, m.Clone())
	}
	return nil
}

func (w *writtenMessages) Lookup(context.Context, domain.Scope, []string) ([]domain.Message, error) {
	return nil, nil
}

func (w *writtenMessages) path(id string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if m.ID == id {
			return m.Path, true
		}
	}
	return "", false
}

// ruleReplica is one service's ingest path and rule set use case, on the
// shared rule set store and message writer.
type ruleReplica struct {
	book   *app.RuleBook
	rules  *app.RuleSets
	ingest *app.Ingester
	out    *writtenMessages
}

// rulesReplicaPoll is the replicas' poll interval: short, so the polling
// loop's part of the test ends soon.
const rulesReplicaPoll = 20 * time.Millisecond

func newRuleReplica(t *testing.T, s ports.RuleSetStore, out *writtenMessages) ruleReplica {
	t.Helper()
	cfg := app.DefaultRulesConfig()
	cfg.Poll, cfg.HashKey = rulesReplicaPoll, []byte("replica-shared-hash-key")
	book, err := app.NewRuleBook(s, cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	policy, clock := domain.DefaultPolicy(), app.SystemClock{}
	ingest, err := app.NewIngesterWith(app.IngestPorts{Store: out, Lookup: out, Clock: clock, Rules: book}, policy, app.DefaultAdmissionOptions())
	if err != nil {
		t.Fatal(err)
	}
	return ruleReplica{book: book, rules: app.NewRuleSets(s, book, nil, policy, clock), ingest: ingest, out: out}
}

var ruleKey = domain.Principal{Scope: scopeLive, KeyID: "key_0123456789ab"}

// submitToken writes one exchange whose query holds token through r and
// returns the path stored, "" when it was dropped.
func (r ruleReplica) submitToken(t *testing.T, token string) string {
	t.Helper()
	ex := domain.Exchange{Name: "signup", CreatedAt: time.Now().Add(-time.Second), Method: "GET", Path: "/v1/reset?token=" + token + "&page=2",
		Response: domain.ExchangeResponse{StatusCode: 200}}
	result, err := r.ingest.Submit(t.Context(), ruleKey, domain.DraftsOf([]domain.Exchange{ex}), "")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if result.Identities[0].Dropped {
		return ""
	}
	path, ok := r.out.path(result.Identities[0].ID)
	if !ok {
		t.Fatalf("message %s neither dropped nor written", result.Identities[0].ID)
	}
	return path
}

// ruleDoc is a rule set that treats the token query parameter with action.
func ruleDoc(action string) []byte {
	return fmt.Appendf(nil, `{"privacy": [{"id": "token", "select": ["query.token"], "action": {"type": %q}}]}`, action)
}

// Two replicas on one store: the one that saves a version writes under it at
// once; the other after one poll, and its polling loop gets there by
// itself. A stale replace changes nothing anywhere.
func testRuleSetReplicas(t *testing.T, s ports.RuleSetStore) {
	out := &writtenMessages{}
	a, b := newRuleReplica(t, s, out), newRuleReplica(t, s, out)
	ctx := t.Context()
	for _, r := range []ruleReplica{a, b} {
		if got := r.submitToken(t, "canary-0"); !strings.Contains(got, "canary-0") {
			t.Fatalf("without rules the path is stored as sent; got %q", got)
		}
	}

	if _, err := a.rules.Replace(ctx, ruleKey, ruleDoc(rules.ActionRemove), "drop reset tokens", 0); err != nil {
		t.Fatal(err)
	}
	if got := a.submitToken(t, "canary-1"); got != "/v1/reset?page=2" {
		t.Errorf("the replica that saved version 1 wrote %q right after; want the token removed", got)
	}
	if err := b.book.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.submitToken(t, "canary-2"); got != "/v1/reset?page=2" {
		t.Errorf("the other replica, after one poll, wrote %q; want the token removed", got)
	}

	// Version 2 from b: a learns of it by its own polling loop.
	a.book.Start()
	t.Cleanup(func() { _ = a.book.Stop(context.Background()) })
	if _, err := b.rules.Replace(ctx, ruleKey, ruleDoc(rules.ActionMask), "mask rather than remove", 1); err != nil {
		t.Fatal(err)
	}
	masked := "/v1/reset?token=" + strings.ReplaceAll(domain.Mask, "*", "%2A") + "&page=2"
	if got := b.submitToken(t, "canary-3"); got != masked {
		t.Errorf("b wrote %q under its own version 2, want %q", got, masked)
	}
	deadline := time.NewTimer(30 * time.Second) // generous: the loop polls every 20 ms
	defer deadline.Stop()
	tick := time.NewTicker(rulesReplicaPoll / 2)
	defer tick.Stop()
	for i := 0; ; i++ {
		if got := a.submitToken(t, fmt.Sprintf("canary-a%d", i)); got == masked {
			break
		} else if strings.Contains(got, "canary") {
			t.Fatalf("a stored the token while on version 1 or 2: %q", got)
		}
		select {
		case <-deadline.C:
			t.Fatal("replica a never applied version 2 by polling")
		case <-tick.C:
		}
	}

	if _, err := a.rules.Replace(ctx, ruleKey, ruleDoc(rules.ActionReplace), "stale", 1); !errors.Is(err, ports.ErrStale) {
		t.Fatalf("a replace expecting version 1 of 2: %v, want ErrStale", err)
	}
	for _, r := range []ruleReplica{a, b} {
		if err := r.book.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := r.submitToken(t, "canary-4"); got != masked {
			t.Errorf("after a refused replace a replica wrote %q; want version 2's %q", got, masked)
		}
	}
}
