package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// erasureFixture is a core on a memory store whose account acme has subject
// keys: the X-User-Id header and e-mail addresses anywhere.
type erasureFixture struct {
	core     *app.Core
	store    *memory.Store
	journal  *memory.ErasureJournal
	ruleSets *memory.RuleSetStore
}

func newErasureFixture(t *testing.T) erasureFixture {
	t.Helper()
	return newErasureFixtureOf(t, rules.RuleSet{})
}

// newErasureFixtureOf is newErasureFixture under rs's ingest rules too.
func newErasureFixtureOf(t *testing.T, rs rules.RuleSet) erasureFixture {
	t.Helper()
	f := erasureFixture{store: memory.New(), journal: memory.NewErasureJournal(), ruleSets: memory.NewRuleSetStore()}
	rs.Subjects = []rules.SubjectKey{{ID: "user", Select: []string{"request.headers.x-user-id"}}, {ID: "emails", Detector: "email"}}
	if _, err := f.ruleSets.ReplaceRuleSet(t.Context(), rules.Version{Account: "acme", Rules: rs, At: testNow}, 0); err != nil {
		t.Fatal(err)
	}
	f.core = f.coreWithKeys(t, rulesHash, nil)
	return f
}

// coreWithKeys is a core on f's stores with these rules' hash keys.
func (f erasureFixture) coreWithKeys(t *testing.T, hashKey, previous []byte) *app.Core {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	cfg.GroupCommit.Enabled = false
	cfg.Rules.HashKey, cfg.Rules.PreviousHashKey = hashKey, previous
	cfg.Rules.Poll = 10 * time.Millisecond // the tombstones' lease: how long Erase waits
	core, err := app.NewCore(cfg, app.CoreDeps{Store: f.store, Clock: rulesClock, RuleSets: f.ruleSets, Erasures: f.journal})
	if err != nil {
		t.Fatal(err)
	}
	return core
}

// subjectExchange is a submission's JSON of one exchange with the header and body.
func subjectExchange(userID, body string) string {
	header := `{}`
	if userID != "" {
		header = `{"x-user-id": "` + userID + `"}`
	}
	return `{"name":"shop","created_at":1714564800,"method":"post","path":"/orders",
		"request":{"header":` + header + `,"body":` + quote(body) + `},"response":{"status_code":201}}`
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func (f erasureFixture) submit(t *testing.T, body string) domain.Identity {
	t.Helper()
	res, err := f.core.Ingester.Submit(t.Context(), ruleKey, draftsOf(body), "")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return res.Identities[0]
}

// readable lists the ids of acme's live messages a reader sees now.
func (f erasureFixture) readable(t *testing.T) map[string]bool {
	t.Helper()
	page, err := f.core.Reader.List(t.Context(), ruleKey, domain.Query{Scope: ruleKey.Scope, Limit: domain.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range page.Messages {
		ids[m.ID] = true
	}
	return ids
}

func TestAnErasureHidesAtOnceThenTheJobDeletes(t *testing.T) {
	f := newErasureFixture(t)
	byID := f.submit(t, subjectExchange("U-1", `{"note":"first"}`))
	byMail := f.submit(t, subjectExchange("", `{"email":"Ana@Example.com"}`))
	bob := f.submit(t, subjectExchange("u-2", `{"email":"bob@example.com"}`))
	ctx := t.Context()

	if n, err := f.core.Erasures.Count(ctx, ruleKey, erasure.Request{Subjects: []string{"u-1", "ana@example.com"}}); err != nil || n != 2 {
		t.Errorf("a dry run counts %d, %v; want 2", n, err)
	}
	if got := f.readable(t); len(got) != 3 {
		t.Fatalf("a dry run hid messages: %d readable, want 3", len(got))
	}
	e, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{Subjects: []string{" u-1 ", "ana@example.com"}, Reason: "ticket 7"})
	if err != nil {
		t.Fatal(err)
	}
	if e.State != erasure.StatePending || e.Hidden != 0 || e.KeyID != ruleKey.KeyID || e.Subjects != 2 {
		t.Errorf("the erasure = %+v; want pending, none hidden yet, asked by %s", e, ruleKey.KeyID)
	}
	if got := f.readable(t); got[byID.ID] || got[byMail.ID] || !got[bob.ID] {
		t.Errorf("readable after the erasure: %v; want bob's alone", got)
	}
	if _, err := f.core.Reader.Get(ctx, ruleKey, byMail.Reference); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get of an erased message: %v, want not found", err)
	}
	if err := f.core.HidePendingNow(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := f.core.Erasures.Erasure(ctx, ruleKey, e.ID); err != nil || got.State != erasure.StateHidden || got.Hidden != 2 || got.HiddenAt.IsZero() {
		t.Errorf("the erasure once hidden = %+v, %v; want hidden, 2", got, err)
	}
	if got := f.readable(t); got[byID.ID] || got[byMail.ID] || !got[bob.ID] {
		t.Errorf("readable once hidden: %v; want bob's alone", got)
	}

	if err := f.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	got, err := f.core.Erasures.Erasure(ctx, ruleKey, e.ID)
	if err != nil || got.State != erasure.StateDeleted || got.Deleted != 2 || got.DeletedAt.IsZero() {
		t.Errorf("the erasure after the job = %+v, %v; want deleted, 2", got, err)
	}
	if found, _ := f.store.Lookup(ctx, ruleKey.Scope, []string{byID.ID, byMail.ID, bob.ID}); len(found) != 1 || found[0].ID != bob.ID {
		t.Errorf("stored after the job: %d messages; want bob's alone", len(found))
	}
	list, more, err := f.core.Erasures.List(ctx, ruleKey, "", 10)
	if err != nil || len(list) != 1 || more || list[0].ID != e.ID {
		t.Errorf("the audit list = %+v, %v, %v; want the one erasure", list, more, err)
	}
}

func TestErasuresRefuseAndScope(t *testing.T) {
	f := newErasureFixture(t)
	ctx := t.Context()
	portal := domain.Principal{Scope: ruleKey.Scope, Name: "shop", ReadOnly: true}
	if _, err := f.core.Erasures.Erase(ctx, portal, erasure.Request{Subjects: []string{"u-1"}}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a portal session's erasure: %v, want forbidden", err)
	}
	var invalid *domain.ValidationError
	if _, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{}); !errors.As(err, &invalid) || invalid.Fields[0].Field != "subjects" {
		t.Errorf("an erasure naming no subject: %v, want a 400 naming subjects", err)
	}
	e, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{Subjects: []string{"u-1"}})
	if err != nil {
		t.Fatal(err)
	}
	other := domain.Principal{Scope: domain.Scope{Account: "globex", Domain: domain.DomainLive}, KeyID: "key_globex"}
	if _, err := f.core.Erasures.Erasure(ctx, other, e.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another account's erasure: %v, want not found", err)
	}
	if all, _ := f.journal.AllErasures(ctx); len(all) != 1 {
		t.Errorf("the journal holds %d erasures after two refusals and one erasure; want 1", len(all))
	}
}

func TestAnErasureKeepsForgetting(t *testing.T) {
	f := newErasureFixture(t)
	ctx := t.Context()
	for _, req := range []erasure.Request{
		{Subjects: []string{"carol@example.com"}, Future: erasure.FutureDrop},
		{Subjects: []string{"u-4"}, Future: erasure.FutureRedact},
	} {
		if _, err := f.core.Erasures.Erase(ctx, ruleKey, req); err != nil {
			t.Fatal(err)
		}
	}
	if id := f.submit(t, subjectExchange("", `{"email":"carol@example.com"}`)); !id.Dropped {
		t.Errorf("carol's exchange after her erasure was stored")
	}
	dave := f.submit(t, subjectExchange("U-4", `{"email":"dave@example.com"}`))
	m, err := f.core.Reader.Get(ctx, ruleKey, dave.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Request.Header["X-User-Id"]; len(got) != 1 || got[0] != rules.Redacted {
		t.Errorf("u-4's header after its erasure = %v, want %s", got, rules.Redacted)
	}
	// The redacted subject is no longer indexed; the other one is.
	page, err := f.core.Erasures.SubjectMessages(ctx, ruleKey, "dave@example.com", nil, 10)
	if err != nil || len(page.Messages) != 1 || page.Messages[0].ID != dave.ID {
		t.Errorf("dave's messages = %d, %v; want his one", len(page.Messages), err)
	}
	if page, err := f.core.Erasures.SubjectMessages(ctx, ruleKey, "u-4", nil, 10); err != nil || len(page.Messages) != 0 {
		t.Errorf("u-4's messages after its erasure = %d, %v; want none", len(page.Messages), err)
	}
}

func TestSubjectMessagesPages(t *testing.T) {
	f := newErasureFixture(t)
	var want []string
	for range 5 {
		want = append(want, f.submit(t, subjectExchange("u-9", "{}")).ID)
	}
	f.submit(t, subjectExchange("u-10", "{}"))
	var got []string
	var after *domain.Cursor
	for range 5 {
		page, err := f.core.Erasures.SubjectMessages(context.Background(), ruleKey, "U-9", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			got = append(got, m.ID)
		}
		if !page.HasMore {
			break
		}
		last := page.Messages[len(page.Messages)-1]
		after = &domain.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if len(got) != len(want) {
		t.Errorf("u-9's messages by pages of 2: %d, want %d", len(got), len(want))
	}
}

// A dropped exchange is kept as a tally with its subject hashes (its path
// may hold the subject's value): the erasure job deletes the subject's
// tallies with its messages, and no other's.
func TestTheErasureJobDeletesTheSubjectsTallies(t *testing.T) {
	f := newErasureFixtureOf(t, rules.RuleSet{
		Ingest: []rules.IngestRule{{ID: "no-deletes", Scope: rules.Scope{Methods: []string{"DELETE"}}, Action: rules.IngestDrop}},
	})
	ctx := t.Context()
	exchange := func(method, email string) string {
		return `{"name":"shop","created_at":1714564800,"method":"` + method + `","path":"/users/` + email + `","request":{"header":{},"body":""},"response":{"status_code":204}}`
	}
	if id := f.submit(t, exchange("delete", "ana@example.com")); !id.Dropped {
		t.Fatalf("ana's DELETE = %+v, want dropped (a tally)", id)
	}
	if id := f.submit(t, exchange("delete", "bob@example.com")); !id.Dropped {
		t.Fatalf("bob's DELETE = %+v, want dropped (a tally)", id)
	}
	f.submit(t, exchange("get", "ana@example.com"))
	if _, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{Subjects: []string{"ana@example.com"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	erased := func(subject string) int64 {
		n, err := f.store.EraseTallies(ctx, ports.SubjectQuery{Account: "acme", Hashes: []string{rules.SubjectHash(rulesHash, subject)}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := erased("ana@example.com"); n != 0 {
		t.Errorf("ana's tallies left after the job: %d, want none", n)
	}
	if n := erased("bob@example.com"); n != 1 {
		t.Errorf("bob's tallies after ana's erasure: %d, want his 1", n)
	}
}

func TestAnErasureByMessageIDErasesItWithItsSubjects(t *testing.T) {
	f := newErasureFixture(t)
	ctx := t.Context()
	asked := f.submit(t, subjectExchange("U-1", `{"email":"ana@example.com"}`))
	byUser := f.submit(t, subjectExchange("u-1", `{"note":"second"}`))
	byMail := f.submit(t, subjectExchange("U-3", `{"email":"Ana@example.com"}`))
	otherOfU3 := f.submit(t, subjectExchange("u-3", `{"note":"not ana's"}`))
	bob := f.submit(t, subjectExchange("u-2", `{"email":"bob@example.com"}`))

	if n, err := f.core.Erasures.Count(ctx, ruleKey, erasure.Request{MessageID: asked.ID, DryRun: true}); err != nil || n != 3 {
		t.Errorf("a dry run by message id counts %d, %v; want 3", n, err)
	}
	e, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{MessageID: asked.ID})
	if err != nil {
		t.Fatal(err)
	}
	if e.State != erasure.StatePending || e.Message == nil || e.Message.ID != asked.ID || len(e.Hashes) != 2 {
		t.Errorf("the erasure = %+v; want pending, by %s, its 2 subjects", e, asked.ID)
	}
	got := f.readable(t)
	for _, gone := range []domain.Identity{asked, byUser, byMail} {
		if got[gone.ID] {
			t.Errorf("%s is readable after the erasure by message id", gone.ID)
		}
	}
	if !got[otherOfU3.ID] || !got[bob.ID] {
		t.Errorf("readable after the erasure: %v; want u-3's other message and bob's (subjects are not followed further)", got)
	}
	if err := f.core.HidePendingNow(ctx); err != nil {
		t.Fatal(err)
	}
	if e, err = f.core.Erasures.Erasure(ctx, ruleKey, e.ID); err != nil || e.State != erasure.StateHidden || e.Hidden != 3 {
		t.Errorf("the erasure once hidden = %+v, %v; want hidden, 3", e, err)
	}
	if err := f.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	if e, err = f.core.Erasures.Erasure(ctx, ruleKey, e.ID); err != nil || e.State != erasure.StateDeleted || e.Deleted != 3 {
		t.Errorf("the erasure after the job = %+v, %v; want deleted, 3", e, err)
	}
}

func TestAnErasureByMessageIDOfAMessageWithoutSubjects(t *testing.T) {
	f := newErasureFixture(t)
	ctx := t.Context()
	plain := f.submit(t, subjectExchange("", `{"note":"nobody"}`))
	other := f.submit(t, subjectExchange("", `{"note":"nobody either"}`))
	e, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{MessageID: plain.ID})
	if err != nil || e.State != erasure.StatePending {
		t.Fatalf("the erasure = %+v, %v; want pending", e, err)
	}
	if got := f.readable(t); got[plain.ID] || !got[other.ID] {
		t.Errorf("readable after the erasure: %v; want %s alone", got, other.ID)
	}
	if err := f.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	if found, _ := f.store.Lookup(ctx, ruleKey.Scope, []string{plain.ID, other.ID}); len(found) != 1 || found[0].ID != other.ID {
		t.Errorf("stored after the job: %d messages; want %s alone", len(found), other.ID)
	}
}

func TestAnErasureByMessageIDRefusesWithoutLeaking(t *testing.T) {
	f := newErasureFixture(t)
	ctx := t.Context()
	mine := f.submit(t, subjectExchange("U-1", ""))
	var invalid *domain.ValidationError
	if _, err := f.core.Erasures.Erase(ctx, ruleKey, erasure.Request{MessageID: "not-an-id"}); !errors.As(err, &invalid) ||
		invalid.Fields[0].Field != "message_id" {
		t.Errorf("a malformed message id: %v, want a 400 naming message_id", err)
	}
	other := domain.Principal{Scope: domain.Scope{Account: "globex", Domain: domain.DomainLive}, KeyID: "key_globex"}
	for _, id := range []string{mine.ID, "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"} {
		_, err := f.core.Erasures.Erase(ctx, other, erasure.Request{MessageID: id})
		if !errors.Is(err, app.ErrMessageNotFound) {
			t.Errorf("globex erasing by message id %s: %v, want message not found", id, err)
		}
	}
	if all, _ := f.journal.AllErasures(ctx); len(all) != 0 {
		t.Errorf("the journal holds %d erasures after refusals; want none", len(all))
	}
	if got := f.readable(t); !got[mine.ID] {
		t.Errorf("acme's message was hidden by another account's erasure")
	}
}

// After the hash key is rotated, the subjects indexed under the old one are
// found only with it as the previous key: by an access request, a dry run
// and an erasure, which hides them.
func TestARotatedHashKeyFindsSubjectsUnderThePreviousOne(t *testing.T) {
	f := newErasureFixture(t)
	before := f.submit(t, subjectExchange("u-1", `{"note":"before the rotation"}`))
	ctx := t.Context()
	rotatedKey := []byte("the-rotated-rules-hash-key")
	ana := erasure.Request{Subjects: []string{"u-1"}}

	orphaned := f.coreWithKeys(t, rotatedKey, nil)
	if n, err := orphaned.Erasures.Count(ctx, ruleKey, ana); err != nil || n != 0 {
		t.Fatalf("a dry run under the new key alone counts %d, %v; want 0 (the test proves nothing)", n, err)
	}

	rotated := f.coreWithKeys(t, rotatedKey, rulesHash)
	after, err := rotated.Ingester.Submit(ctx, ruleKey, draftsOf(subjectExchange("u-1", `{"note":"after"}`)), "")
	if err != nil {
		t.Fatal(err)
	}
	page, err := rotated.Erasures.SubjectMessages(ctx, ruleKey, "u-1", nil, 10)
	if err != nil || len(page.Messages) != 2 {
		t.Errorf("the subject's messages with the previous key = %d, %v; want the one before the rotation and the one after", len(page.Messages), err)
	}
	if n, err := rotated.Erasures.Count(ctx, ruleKey, ana); err != nil || n != 2 {
		t.Errorf("a dry run with the previous key counts %d, %v; want 2", n, err)
	}
	e, err := rotated.Erasures.Erase(ctx, ruleKey, ana)
	if err != nil || e.State != erasure.StatePending || e.Subjects != 1 {
		t.Fatalf("the erasure = %+v, %v; want pending, 1 subject", e, err)
	}
	if found, _ := f.store.Lookup(ctx, ruleKey.Scope, []string{before.ID, after.Identities[0].ID}); len(found) != 2 {
		t.Fatalf("stored before the job: %d", len(found))
	}
	if _, err := rotated.Reader.Get(ctx, ruleKey, before.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get of the message indexed under the previous key after the erasure: %v; want not found", err)
	}
	if err := rotated.HidePendingNow(ctx); err != nil {
		t.Fatal(err)
	}
	if e, err = rotated.Erasures.Erasure(ctx, ruleKey, e.ID); err != nil || e.Hidden != 2 {
		t.Errorf("the erasure once hidden = %+v, %v; want 2 hidden", e, err)
	}
}
