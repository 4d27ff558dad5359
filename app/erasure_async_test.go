package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// heldHides is a memory store whose Hide waits until release is closed,
// counting the messages it hid: what a hide of a large subject looks like
// to the request that asked for it.
type heldHides struct {
	*memory.Store
	entered chan struct{} // closed at the first Hide
	release chan struct{}
	once    atomic.Bool
	hidden  atomic.Int64
}

func (s *heldHides) Hide(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if s.once.CompareAndSwap(false, true) {
		close(s.entered)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	n, err := s.Store.Hide(ctx, account, refs)
	s.hidden.Add(n)
	return n, err
}

// coreOn is a core over store with f's rule sets and journal: another
// replica, or the same server after a restart.
func (f erasureFixture) coreOn(t *testing.T, store ports.MessageStore) *app.Core {
	t.Helper()
	return f.coreAt(t, store, rulesClock)
}

// coreAt is coreOn at clock, whose visibility delay is the store's read lag.
func (f erasureFixture) coreAt(t *testing.T, store ports.MessageStore, clock ports.Clock) *app.Core {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = store.ReadLag()
	cfg.GroupCommit.Enabled = false
	cfg.Rules.HashKey = rulesHash
	cfg.Rules.Poll = 10 * time.Millisecond
	cfg.Erasure.Step = 100
	core, err := app.NewCore(cfg, app.CoreDeps{Store: store, Clock: clock, RuleSets: f.ruleSets, Erasures: f.journal})
	if err != nil {
		t.Fatal(err)
	}
	return core
}

// submitMany submits n exchanges of user (X-User-Id) in batches, returning
// their ids.
func submitMany(t *testing.T, core *app.Core, user string, n int) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for len(ids) < n {
		batch := make([]string, min(n-len(ids), 500))
		for i := range batch {
			batch[i] = subjectExchange(user, fmt.Sprintf(`{"note":"canary %d"}`, len(ids)+i))
		}
		res, err := core.Ingester.Submit(t.Context(), ruleKey, draftsOf("["+strings.Join(batch, ",")+"]"), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range res.Identities {
			ids[id.ID] = true
		}
	}
	return ids
}

// readsOf is every read of acme's live messages on core: the ids listed,
// searched (q=canary) and exported, and the messages the statistics of
// q=canary count (every message of submitMany holds it).
type readsOf struct {
	listed, searched, exported map[string]bool
	counted                    int64
}

func readAll(t *testing.T, core *app.Core) readsOf {
	t.Helper()
	ctx := t.Context()
	r := readsOf{listed: map[string]bool{}, searched: map[string]bool{}, exported: map[string]bool{}}
	for _, c := range []struct {
		ids    map[string]bool
		filter domain.Filter
	}{{r.listed, domain.Filter{}}, {r.searched, domain.Filter{Text: "canary"}}} {
		q := domain.Query{Scope: ruleKey.Scope, Filter: c.filter, Limit: domain.MaxLimit}
		for {
			page, err := core.Reader.List(ctx, ruleKey, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Messages {
				c.ids[m.ID] = true
			}
			if q.After = page.Next(); q.After == nil {
				break
			}
		}
	}
	_, err := core.Exporter.Export(ctx, ruleKey, domain.ExportQuery{}, func(msgs []domain.Message) error {
		for _, m := range msgs {
			r.exported[m.ID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A q reads messages: the rollups answer no query with one.
	q := stats.Query{From: testNow.Add(-time.Hour), To: testNow.Add(time.Hour), Filter: domain.Filter{Text: "canary"}}
	for _, iv := range stats.Intervals {
		if iv.Name == "1h" {
			q.Interval = iv
		}
	}
	st, err := core.Statistics.Compute(ctx, ruleKey, q)
	if err != nil {
		t.Fatal(err)
	}
	r.counted = st.Total.Count
	return r
}

// assertReads fails unless every read of core returns want's messages and
// none of gone's (nor Get them).
func assertReads(t *testing.T, when string, core *app.Core, gone, want map[string]bool) {
	t.Helper()
	r := readAll(t, core)
	for what, ids := range map[string]map[string]bool{"listed": r.listed, "exported": r.exported} {
		if len(ids) != len(want) {
			t.Errorf("%s: %d messages %s, want %d", when, len(ids), what, len(want))
		}
		for id := range gone {
			if ids[id] {
				t.Errorf("%s: the erased %s is %s", when, id, what)
				break
			}
		}
	}
	for id := range r.searched {
		if gone[id] {
			t.Errorf("%s: q=canary finds the erased %s", when, id)
			break
		}
	}
	if r.counted != int64(len(want)) {
		t.Errorf("%s: the statistics count %d messages, want %d", when, r.counted, len(want))
	}
	for id := range gone {
		if _, err := core.Reader.Get(t.Context(), ruleKey, id); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("%s: Get of the erased %s: %v, want not found", when, id, err)
		}
		break
	}
	for id := range want {
		if _, err := core.Reader.Get(t.Context(), ruleKey, id); err != nil {
			t.Errorf("%s: Get of %s: %v", when, id, err)
		}
		break
	}
}

// waitForState polls the journal until the erasure id is in state or
// past it: a job's run that began before the erasure was journaled may
// carry it from pending to deleted between two polls.
func waitForState(t *testing.T, core *app.Core, id string, state erasure.State) erasure.Erasure {
	t.Helper()
	order := []erasure.State{erasure.StatePending, erasure.StateHidden, erasure.StateDeleted}
	var e erasure.Erasure
	conformance.WaitFor(t, "the erasure "+string(state), func() bool {
		var err error
		e, err = core.Erasures.Erasure(t.Context(), ruleKey, id)
		return err == nil && slices.Index(order, e.State) >= slices.Index(order, state)
	})
	return e
}

// An erasure is answered while its hide has not begun to hide anything:
// the store's Hide is held until after the answer. From the answer on no
// read returns a message of the subject (list, search, Get, export,
// statistics); the job hides them in the background, a step at a time,
// and journals the erasure hidden; other subjects' messages read as
// before all along.
func TestAnErasureIsAnsweredBeforeItsHide(t *testing.T) {
	f := newErasureFixture(t)
	store := &heldHides{Store: f.store, entered: make(chan struct{}), release: make(chan struct{})}
	core := f.coreOn(t, store)
	ana := submitMany(t, core, "u-1", 450)
	bob := submitMany(t, core, "u-2", 30)
	assertReads(t, "before the erasure", core, nil, union(ana, bob))
	core.Start()
	t.Cleanup(func() { _ = core.Stop(context.Background()) })

	e, err := core.Erasures.Erase(t.Context(), ruleKey, erasure.Request{Subjects: []string{"u-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := store.hidden.Load(); e.State != erasure.StatePending || e.Hidden != 0 || n != 0 {
		t.Fatalf("the erasure answered %s, %d hidden, the store having hidden %d; want pending, none hidden yet", e.State, e.Hidden, n)
	}
	assertReads(t, "at the answer", core, ana, bob)
	if got, err := core.Erasures.SubjectMessages(t.Context(), ruleKey, "u-1", nil, 10); err != nil || len(got.Messages) != 10 {
		t.Errorf("the subject's messages while pending = %d, %v; want the subject's 10 first (an access request still finds them)", len(got.Messages), err)
	}

	<-store.entered // the job began to hide in the background
	close(store.release)
	done := waitForState(t, core, e.ID, erasure.StateHidden)
	if done.Hidden != int64(len(ana)) || store.hidden.Load() != int64(len(ana)) {
		t.Errorf("the erasure once hidden counts %d, the store hid %d; want %d", done.Hidden, store.hidden.Load(), len(ana))
	}
	assertReads(t, "once hidden", core, ana, bob)
}

// Another replica over the same store and journal leaves a pending
// erasure's messages out from its answer on, though it read the journal
// before and runs no job: its read of the journal is older than the lease
// the answer waited.
func TestAnotherReplicaLeavesAPendingErasureOut(t *testing.T) {
	f := newErasureFixture(t)
	asking, other := f.coreOn(t, f.store), f.coreOn(t, f.store)
	ana := submitMany(t, asking, "u-1", 120)
	bob := submitMany(t, asking, "u-2", 5)
	assertReads(t, "the other replica before the erasure", other, nil, union(ana, bob))

	e, err := asking.Erasures.Erase(t.Context(), ruleKey, erasure.Request{Subjects: []string{"U-1"}})
	if err != nil || e.State != erasure.StatePending {
		t.Fatalf("the erasure = %+v, %v; want pending", e, err)
	}
	assertReads(t, "the other replica at the answer", other, ana, bob)
	assertReads(t, "the asking replica at the answer", asking, ana, bob)
	if err := other.HidePendingNow(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, err := asking.Erasures.Erasure(t.Context(), ruleKey, e.ID); err != nil || got.State != erasure.StateHidden || got.Hidden != int64(len(ana)) {
		t.Errorf("the erasure hidden by the other replica = %+v, %v; want hidden, %d", got, err, len(ana))
	}
	assertReads(t, "the asking replica once hidden", asking, ana, bob)
}

// A server stopped between the answer and the hide hides the erasure at
// its next start, from the journal: its messages are never read again.
func TestARestartBetweenTheAnswerAndTheHideStillHides(t *testing.T) {
	f := newErasureFixture(t)
	before := f.coreOn(t, f.store) // never started: its job never runs
	ana := submitMany(t, before, "u-1", 150)
	bob := submitMany(t, before, "u-2", 5)
	e, err := before.Erasures.Erase(t.Context(), ruleKey, erasure.Request{Subjects: []string{"u-1"}})
	if err != nil || e.State != erasure.StatePending {
		t.Fatalf("the erasure = %+v, %v; want pending", e, err)
	}

	after := f.coreOn(t, f.store)
	assertReads(t, "after the restart, before the job", after, ana, bob)
	after.Start()
	t.Cleanup(func() { _ = after.Stop(context.Background()) })
	done := waitForState(t, after, e.ID, erasure.StateDeleted)
	if done.Hidden != int64(len(ana)) || done.Deleted != int64(len(ana)) {
		t.Errorf("the erasure after the restart = %+v; want %d hidden and deleted", done, len(ana))
	}
	assertReads(t, "after the restart's job", after, ana, bob)
	if found, _ := f.store.Lookup(t.Context(), ruleKey.Scope, keys(union(ana, bob))); len(found) != len(bob) {
		t.Errorf("stored after the job: %d messages; want bob's %d", len(found), len(bob))
	}
}

func union(sets ...map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, s := range sets {
		for id := range s {
			out[id] = true
		}
	}
	return out
}

func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	return out
}

// laggingHides is a memory store whose Hide and Delete are seen by reads
// only lag after they return, as Elasticsearch's refresh shows an update
// (ReadLag).
type laggingHides struct {
	*memory.Store
	lag time.Duration

	mu      sync.Mutex
	pending []laggingChange
}

type laggingChange struct {
	due    time.Time
	change func(context.Context) error
}

func (s *laggingHides) ReadLag() time.Duration { return s.lag }

func (s *laggingHides) later(change func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, laggingChange{time.Now().Add(s.lag), change})
}

func (s *laggingHides) Hide(_ context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	refs = slices.Clone(refs)
	s.later(func(ctx context.Context) error { _, err := s.Store.Hide(ctx, account, refs); return err })
	return int64(len(refs)), nil
}

func (s *laggingHides) Delete(_ context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	refs = slices.Clone(refs)
	s.later(func(ctx context.Context) error { _, err := s.Store.Delete(ctx, account, refs); return err })
	return int64(len(refs)), nil
}

// advancingClock is testNow, going on from when it was made.
type advancingClock struct{ start time.Time }

func (c advancingClock) Now() time.Time { return testNow.Add(time.Since(c.start)) }

// seen applies the changes that are due and reports whether none is left.
func (s *laggingHides) seen(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 && !s.pending[0].due.After(time.Now()) {
		if err := s.pending[0].change(ctx); err != nil {
			panic(err)
		}
		s.pending = s.pending[1:]
	}
	return len(s.pending) == 0
}

func (s *laggingHides) List(ctx context.Context, q domain.Query, now time.Time) (domain.Page, error) {
	s.seen(ctx)
	return s.Store.List(ctx, q, now)
}

func (s *laggingHides) Get(ctx context.Context, scope domain.Scope, key string, now time.Time) (domain.Message, error) {
	s.seen(ctx)
	return s.Store.Get(ctx, scope, key, now)
}

// An erasure's tombstone outlives its hide by the store's read lag: the job
// journals it hidden, which retires the tombstone, only once every read sees
// the hide. Reads polled from the answer until the store shows the hide
// never find the subject's messages (before, the tombstone retired while
// the hide was still unseen, and Get and List found them again).
func TestATombstoneOutlivesItsHideByTheReadLag(t *testing.T) {
	f := newErasureFixture(t)
	store := &laggingHides{Store: f.store, lag: 300 * time.Millisecond}
	core := f.coreAt(t, store, advancingClock{time.Now()})
	ana := submitMany(t, core, "u-1", 20)
	bob := submitMany(t, core, "u-2", 5)
	conformance.WaitFor(t, "the messages visible", func() bool {
		page, err := core.Reader.List(t.Context(), ruleKey, domain.Query{Limit: 100})
		return err == nil && len(page.Messages) == len(ana)+len(bob)
	})
	core.Start()
	t.Cleanup(func() { _ = core.Stop(context.Background()) })

	e, err := core.Erasures.Erase(t.Context(), ruleKey, erasure.Request{Subjects: []string{"u-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var anaID string
	for id := range ana {
		anaID = id
		break
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := core.Reader.List(t.Context(), ruleKey, domain.Query{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			if ana[m.ID] {
				t.Fatalf("listed the erased %s while its hide was unseen", m.ID)
			}
		}
		if _, err := core.Reader.Get(t.Context(), ruleKey, anaID); !errors.Is(err, ports.ErrNotFound) {
			t.Fatalf("Get of the erased %s while its hide was unseen: %v, want not found", anaID, err)
		}
		if len(page.Messages) != len(bob) {
			t.Fatalf("listed %d messages, want bob's %d", len(page.Messages), len(bob))
		}
		got, err := core.Erasures.Erasure(t.Context(), ruleKey, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != erasure.StatePending && store.seen(t.Context()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the erasure is %s after 10 s", got.State)
		}
	}
}

// Two replicas' jobs over one store and journal take turns by the
// journal's lease: the one that began keeps the work, the other leaves it
// to it, and the receipt counts every message once. Without the lease the
// second carried the erasure out meanwhile and the first, resuming, wrote
// its stale progress over it: hidden again, then deleted with none counted.
func TestReplicasJobsTakeTurnsOnAnErasure(t *testing.T) {
	f := newErasureFixture(t)
	held := &heldHides{Store: f.store, entered: make(chan struct{}), release: make(chan struct{})}
	first, second := f.coreOn(t, held), f.coreOn(t, f.store)
	ana := submitMany(t, first, "u-1", 200)
	bob := submitMany(t, first, "u-2", 5)
	e, err := first.Erasures.Erase(t.Context(), ruleKey, erasure.Request{Subjects: []string{"u-1"}})
	if err != nil {
		t.Fatal(err)
	}
	firstRun := make(chan error, 1)
	go func() { firstRun <- first.EraseNow(t.Context(), false) }()
	<-held.entered // the first replica's job is hiding, its lease held

	if err := second.EraseNow(t.Context(), false); !errors.Is(err, app.ErrErasureLeaseElsewhere) {
		t.Errorf("the second replica's run while the first works = %v; want ErrErasureLeaseElsewhere", err)
	}
	if err := second.HidePendingNow(t.Context()); !errors.Is(err, app.ErrErasureLeaseElsewhere) {
		t.Errorf("the second replica's hide while the first works = %v; want ErrErasureLeaseElsewhere", err)
	}
	close(held.release)
	if err := <-firstRun; err != nil {
		t.Fatal(err)
	}
	got, err := second.Erasures.Erasure(t.Context(), ruleKey, e.ID)
	if err != nil || got.State != erasure.StateDeleted || got.Hidden != int64(len(ana)) || got.Deleted != int64(len(ana)) {
		t.Errorf("the receipt = %+v, %v; want deleted, %d hidden and deleted", got, err, len(ana))
	}
	if found, _ := f.store.Lookup(t.Context(), ruleKey.Scope, keys(union(ana, bob))); len(found) != len(bob) {
		t.Errorf("stored after the job: %d messages; want bob's %d", len(found), len(bob))
	}
}

// purgedFirst is a memory store whose first Delete finds its messages gone:
// a class's retention purged them between the job's search and its delete.
type purgedFirst struct {
	*memory.Store
	purged atomic.Bool
}

func (s *purgedFirst) Delete(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if s.purged.CompareAndSwap(false, true) {
		if _, err := s.Store.Delete(ctx, account, refs); err != nil {
			return 0, err
		}
	}
	return s.Store.Delete(ctx, account, refs)
}

// A step whose messages something else deleted first is no failure: the
// job searches again and carries on, and fails only when a search finds
// the same messages it could not delete.
func TestTheErasureJobCarriesOnPastMessagesDeletedBeforeIt(t *testing.T) {
	f := newErasureFixture(t)
	store := &purgedFirst{Store: f.store}
	core := f.coreOn(t, store)
	ana := submitMany(t, core, "u-1", 250)
	bob := submitMany(t, core, "u-2", 5)
	e, err := core.Erasures.Erase(t.Context(), ruleKey, erasure.Request{Subjects: []string{"u-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := core.EraseNow(t.Context(), false); err != nil {
		t.Fatalf("the run whose first step found its messages gone: %v", err)
	}
	got, err := core.Erasures.Erasure(t.Context(), ruleKey, e.ID)
	if err != nil || got.State != erasure.StateDeleted || got.Deleted != int64(len(ana))-100 {
		t.Errorf("the receipt = %+v, %v; want deleted, the %d the job deleted", got, err, len(ana)-100)
	}
	if found, _ := f.store.Lookup(t.Context(), ruleKey.Scope, keys(union(ana, bob))); len(found) != len(bob) {
		t.Errorf("stored after the job: %d messages; want bob's %d", len(found), len(bob))
	}
}
