package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var erasureKey = domain.Principal{Scope: scope, KeyID: "key_erasure_test"}

// erasingService is a core on a SQLite data directory with its alert file
// (rule sets, the journal), account acme's subject keys being e-mail
// addresses; Close stops and closes all of it.
type erasingService struct {
	core   *app.Core
	store  *sqlite.Store
	alerts *sqlitealert.AlertStore
}

func openErasingService(t *testing.T, dir string, cfg app.ErasureConfig, wrap func(ports.MessageStore) ports.MessageStore) *erasingService {
	t.Helper()
	ctx := opCtx(t)
	store, err := sqlite.New(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := sqlite.NewAlertStore(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := alerts.RuleSet(ctx, "acme"); err != nil {
		t.Fatal(err)
	} else if v.Number == 0 {
		rs := rules.RuleSet{Subjects: []rules.SubjectKey{{ID: "emails", Detector: "email"}}}
		if _, err := alerts.ReplaceRuleSet(ctx, rules.Version{Account: "acme", Rules: rs, At: time.Now()}, 0); err != nil {
			t.Fatal(err)
		}
	}
	c := app.DefaultConfig()
	c.VisibilityDelay, c.GroupCommit.Enabled, c.Rules.HashKey, c.Erasure = 0, false, []byte("sqlite-erasure-test-key"), cfg
	c.Rules.Poll = 20 * time.Millisecond // the tombstones' lease, which an erasure's answer waits
	var messages ports.MessageStore = store
	if wrap != nil {
		messages = wrap(store)
	}
	core, err := app.NewCore(c, app.CoreDeps{Store: messages, RuleSets: alerts, Erasures: alerts})
	if err != nil {
		t.Fatal(err)
	}
	s := &erasingService{core: core, store: store, alerts: alerts}
	t.Cleanup(func() { s.close(t) })
	return s
}

func (s *erasingService) close(t *testing.T) {
	t.Helper()
	if s.core == nil {
		return
	}
	if err := errors.Join(s.core.Stop(opCtx(t)), s.alerts.Close(), s.store.Close()); err != nil {
		t.Errorf("closing the service: %v", err)
	}
	s.core = nil
}

// submitMail submits n exchanges naming address in their bodies.
func (s *erasingService) submitMail(t *testing.T, address string, n int) []string {
	t.Helper()
	return s.submitMailAt(t, address, time.Now().Add(-time.Minute), n)
}

// submitMailAt is submitMail of exchanges created at.
func (s *erasingService) submitMailAt(t *testing.T, address string, at time.Time, n int) []string {
	t.Helper()
	exchanges := make([]domain.Exchange, n)
	for i := range exchanges {
		exchanges[i] = domain.Exchange{Name: "shop", CreatedAt: at, Method: "POST", Path: "/signup",
			Request: domain.ExchangeRequest{Body: `{"email":"` + address + `","note":"` + strings.Repeat("z", i*700) + `"}`}, Response: domain.ExchangeResponse{StatusCode: 201}}
	}
	res, err := s.core.Ingester.Submit(opCtx(t), erasureKey, domain.DraftsOf(exchanges), "")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, id := range res.Identities {
		ids[i] = id.ID
	}
	return ids
}

// stored counts acme's messages in the store, readable now.
func (s *erasingService) stored(t *testing.T) int {
	t.Helper()
	return countListed(t, s.store, domain.Filter{}, time.Now().Add(time.Second))
}

// copyDayFiles copies the day files of from into to (their -wal and -shm
// left out: the service that wrote them is closed, its WAL checkpointed).
func copyDayFiles(t *testing.T, from, to string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(from, "messages-*.db"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no day files in %s: %v", from, err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if err := os.Remove(filepath.Join(to, filepath.Base(name)+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(name)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// An erasure is journaled in the data directory's alert file; day files
// restored from a copy older than it are erased again at the next start,
// and the canary leaves every byte of the directory again.
func TestAStartErasesRestoredDataAgain(t *testing.T) {
	dir, backup := t.TempDir(), t.TempDir()
	const canary = "restored.canary@example.com"
	svc := openErasingService(t, dir, app.ErasureConfig{}, nil)
	svc.submitMail(t, canary, 3)
	svc.submitMail(t, "other@example.com", 4)
	svc.close(t)
	copyDayFiles(t, dir, backup)

	svc = openErasingService(t, dir, app.ErasureConfig{}, nil)
	ctx := opCtx(t)
	e, err := svc.core.Erasures.Erase(ctx, erasureKey, erasure.Request{Subjects: []string{canary}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := svc.stored(t); got != 4 {
		t.Fatalf("after the erasure %d messages are stored, want the 4 others", got)
	}
	svc.close(t)
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) > 0 {
		t.Fatalf("after the erasure the canary is in %v", holding)
	}

	copyDayFiles(t, backup, dir) // the day files restored; the alert file kept
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) == 0 {
		t.Fatal("the restored copy does not hold the canary: the test proves nothing")
	}
	startErasesAgain(t, dir, e.ID, canary, 3, 4)
}

// startErasesAgain starts a service on dir and waits for its erasure job
// to erase again the reapplied messages of erasure id, restored; then the
// others are stored and the canary is in no byte of dir.
func startErasesAgain(t *testing.T, dir, id, canary string, reapplied int64, others int) {
	t.Helper()
	svc := openErasingService(t, dir, app.ErasureConfig{}, nil)
	svc.core.Start()
	deadline := time.Now().Add(opTimeout)
	for {
		got, err := svc.core.Erasures.Erasure(opCtx(t), erasureKey, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Reapplied == reapplied {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start did not erase the restored messages again: %+v", got)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	if got := svc.stored(t); got != others {
		t.Errorf("after the start %d messages are stored, want the %d others", got, others)
	}
	svc.close(t)
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) > 0 {
		t.Errorf("after the start the canary is in %v", holding)
	}
}

// A restore of a backup taken before an erasure keeps, with ErasuresFrom,
// the journal of the data directory it replaces: the next start erases
// the subject again from the restored day files. Without it the restored
// alert file does not know of the erasure.
func TestARestoreKeepsTheNewerJournalOfErasures(t *testing.T) {
	dir, backup := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	const canary = "backed.up.canary@example.com"
	svc := openErasingService(t, dir, app.ErasureConfig{}, nil)
	svc.submitMail(t, canary, 3)
	svc.submitMail(t, "other@example.com", 4)
	svc.close(t)
	ctx := opCtx(t)
	if _, err := sqlite.Backup(ctx, dir, backup, time.Second); err != nil {
		t.Fatal(err)
	}

	svc = openErasingService(t, dir, app.ErasureConfig{}, nil)
	e, err := svc.core.Erasures.Erase(ctx, erasureKey, erasure.Request{Subjects: []string{canary}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	svc.close(t)
	aside := dir + ".aside"
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}

	forgot := filepath.Join(t.TempDir(), "forgot")
	if err := sqlite.Restore(ctx, backup, forgot, sqlite.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	svc = openErasingService(t, forgot, app.ErasureConfig{}, nil)
	if _, err := svc.core.Erasures.Erasure(ctx, erasureKey, e.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("the erasure after a restore without ErasuresFrom: %v; want not found (the backup's journal)", err)
	}
	svc.close(t)

	if err := sqlite.Restore(ctx, backup, dir, sqlite.RestoreOptions{ErasuresFrom: aside}); err != nil {
		t.Fatal(err)
	}
	if holding := conformance.FilesHolding(t, dir, canary); len(holding) == 0 {
		t.Fatal("the restored backup does not hold the canary: the test proves nothing")
	}
	startErasesAgain(t, dir, e.ID, canary, 3, 4)
}

// failingDeletes is a store whose Delete fails after its first calls, as a
// process killed midway would stop.
type failingDeletes struct {
	*sqlite.Store
	left int
}

func (f *failingDeletes) Delete(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	if f.left == 0 {
		return 0, errors.New("killed")
	}
	f.left--
	return f.Store.Delete(ctx, account, refs)
}

// The deletion goes a step at a time, each journaled: stopped after two
// steps, the next run finishes it, and the other subjects' messages are
// untouched (counted before and after).
func TestAnInterruptedDeletionResumes(t *testing.T) {
	dir := t.TempDir()
	cfg := app.ErasureConfig{Step: 2}
	svc := openErasingService(t, dir, cfg, func(s ports.MessageStore) ports.MessageStore {
		return &failingDeletes{Store: s.(*sqlite.Store), left: 2}
	})
	svc.submitMail(t, "gone@example.com", 7)
	svc.submitMail(t, "kept@example.com", 5)
	before := svc.stored(t)
	ctx := opCtx(t)
	e, err := svc.core.Erasures.Erase(ctx, erasureKey, erasure.Request{Subjects: []string{"gone@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.core.EraseNow(ctx, false); err == nil {
		t.Fatal("the interrupted run reported no error")
	}
	got, err := svc.core.Erasures.Erasure(ctx, erasureKey, e.ID)
	if err != nil || got.State != erasure.StateHidden || got.Deleted != 4 {
		t.Fatalf("after the interrupted run: %+v, %v; want hidden, 4 deleted", got, err)
	}
	svc.close(t)

	svc = openErasingService(t, dir, cfg, nil)
	if err := svc.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	got, err = svc.core.Erasures.Erasure(ctx, erasureKey, e.ID)
	if err != nil || got.State != erasure.StateDeleted || got.Deleted != 7 {
		t.Errorf("after the next run: %+v, %v; want deleted, 7", got, err)
	}
	if after := svc.stored(t); before != 12 || after != 5 {
		t.Errorf("stored: %d before, %d after; want 12, then the 5 others", before, after)
	}
}
