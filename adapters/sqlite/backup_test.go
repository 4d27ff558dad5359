package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitealert"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// alertingData is what an account keeps in the alert file: a rule, an
// endpoint with its webhook secret, the rule's state and a rule set.
type alertingData struct {
	rules     []alerting.Rule
	endpoints []alerting.Endpoint
	states    []alerting.State
	ruleSet   rules.Version
}

// keepAlerting stores a rule, an endpoint, a state and a rule set in a.
func keepAlerting(t *testing.T, a *sqlitealert.AlertStore) {
	t.Helper()
	at := domain.Micro(time.Now())
	r := alerting.DefaultRule()
	r.ID, r.Scope, r.Metric, r.Title, r.CreatedAt, r.UpdatedAt = "alr_0123456789abcdef", scope, alerting.MetricErrorRate, "errors", at, at
	e := alerting.Endpoint{ID: "whe_0123456789abcdef", Scope: scope, URL: "https://hooks.example.com/reqlog", Format: alerting.FormatStandard,
		Enabled: true, Secrets: []alerting.WebhookSecret{{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: at}}, CreatedAt: at, UpdatedAt: at}
	r.EndpointIDs = []string{e.ID}
	if err := a.CreateEndpoint(opCtx(t), e); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRule(opCtx(t), r); err != nil {
		t.Fatal(err)
	}
	if err := a.SwapState(opCtx(t), alerting.State{RuleID: r.ID, Scope: scope, Status: alerting.Firing, Since: at, EvaluatedAt: at}, 0); err != nil {
		t.Fatal(err)
	}
	rs := rules.RuleSet{Retention: []rules.RetentionRule{{ID: "short", Scope: rules.Scope{Applications: []string{"shop"}}, Keep: "7d"}}}
	if _, err := a.ReplaceRuleSet(opCtx(t), rules.Version{Account: scope.Account, Rules: rs, KeyID: "key", Reason: "test", At: at}, 0); err != nil {
		t.Fatal(err)
	}
}

// alertingOf reads back what keepAlerting stores.
func alertingOf(t *testing.T, a *sqlitealert.AlertStore) alertingData {
	t.Helper()
	var d alertingData
	var err error
	if d.rules, err = a.Rules(opCtx(t), scope); err != nil {
		t.Fatal(err)
	}
	if d.endpoints, err = a.Endpoints(opCtx(t), scope); err != nil {
		t.Fatal(err)
	}
	if d.states, err = a.States(opCtx(t), scope); err != nil {
		t.Fatal(err)
	}
	if d.ruleSet, err = a.RuleSet(opCtx(t), scope.Account); err != nil {
		t.Fatal(err)
	}
	return d
}

// A backup taken under ingest, restored into an empty directory, opens
// with every message acknowledged before it began, each batch acknowledged
// while it ran whole or not at all (a snapshot: the batches stored are the
// first ones), every day before today, the alert rules, endpoints with
// their secrets, states and rule sets, and the other files of the data
// directory, all mode 0600 in the backup and once restored. A second backup
// into the same directory copies the days written since and leaves the
// others (incremental), and a day retention dropped leaves the backup.
func TestBackupUnderIngestRestores(t *testing.T) {
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	s := mustOpen(t, sqlite.Config{Dir: dir})
	a, err := openAlertStore(opCtx(t), t, s)
	if err != nil {
		t.Fatal(err)
	}
	keepAlerting(t, a)
	writeFile(t, filepath.Join(dir, "portal-secret"), []byte("a kept secret of at least thirty-two bytes"))
	now := time.Now().UTC()
	var past []domain.Message
	for days := 1; days <= 3; days++ {
		m := newMessage(t, now.Add(-time.Duration(days)*24*time.Hour), 300)
		if days == 3 {
			m.ExpiresAt = now.Add(time.Minute) // dropped between the two backups
		}
		past = append(past, m)
	}
	if err := s.Append(opCtx(t), past); err != nil {
		t.Fatal(err)
	}

	const batchSize = 2
	var (
		mu      sync.Mutex
		acked   []domain.Message
		stop    = make(chan struct{})
		writing sync.WaitGroup
	)
	writing.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			var batch []domain.Message
			for range batchSize {
				batch = append(batch, newMessage(t, time.Now(), 2000))
			}
			if err := s.Append(opCtx(t), batch); err != nil {
				t.Errorf("Append under the backup: %v", err)
				return
			}
			mu.Lock()
			acked = append(acked, batch...)
			mu.Unlock()
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 20; {
		if time.Now().After(deadline) {
			t.Fatal("no ingest within 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
		mu.Lock()
		n = len(acked)
		mu.Unlock()
	}
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	report, err := sqlite.Backup(opCtx(t), dir, dest, time.Second)
	close(stop)
	writing.Wait()
	if err != nil {
		t.Fatalf("Backup under ingest: %v", err)
	}
	if len(report.Copied) != 8 || len(report.Unchanged) != 0 {
		t.Errorf("first backup: copied %q, unchanged %q; want the 4 day files, the alert file, the rollups file, reqlog-store.json and portal-secret", report.Copied, report.Unchanged)
	}
	assertPrivate(t, dest)

	underIngest := restoreInto(t, dest)
	assertPrivate(t, underIngest)
	assertIntegrity(t, underIngest)
	back := mustOpen(t, sqlite.Config{Dir: underIngest})
	assertStored(t, back, append(slices.Clone(acked[:before]), past[:2]...), "after a restore of the backup taken under ingest")
	if _, err := back.Get(opCtx(t), scope, past[2].ID, now); err != nil {
		t.Errorf("the message of the day retention drops later, after a restore of the backup taken before: %v", err)
	}
	stored := storedPrefix(t, back, acked)
	if stored < before || stored%batchSize != 0 {
		t.Errorf("the backup taken under ingest holds the first %d of %d acknowledged messages; want at least the %d acknowledged before it began, in whole batches of %d",
			stored, len(acked), before, batchSize)
	}
	t.Logf("the backup taken under ingest holds %d of the %d messages acknowledged, %d of them before it began", stored, len(acked), before)
	backAlerts, err := openAlertStore(opCtx(t), t, back)
	if err != nil {
		t.Fatal(err)
	}
	want := alertingOf(t, a)
	if got := alertingOf(t, backAlerts); !reflect.DeepEqual(got, want) {
		t.Errorf("alerting after a restore:\n%+v\nwant\n%+v", got, want)
	}
	if data, err := os.ReadFile(filepath.Join(underIngest, "portal-secret")); err != nil || string(data) != "a kept secret of at least thirty-two bytes" {
		t.Errorf("the kept secret after a restore: %q, %v", data, err)
	}

	if _, err := s.PurgeExpired(opCtx(t), now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(opCtx(t), []domain.Message{newMessage(t, time.Now(), 100)}); err != nil {
		t.Fatal(err)
	}
	report, err = sqlite.Backup(opCtx(t), dir, dest, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dayName := func(m domain.Message) string { return "messages-" + m.CreatedAt.UTC().Format("2006-01-02") + ".db" }
	if want := []string{dayName(past[1]), dayName(past[0])}; !slices.Equal(report.Unchanged, want) ||
		!slices.Contains(report.Copied, dayName(acked[0])) || !slices.Equal(report.Removed, []string{dayName(past[2])}) {
		t.Errorf("second backup: copied %q, unchanged %q, removed %q; want today's copied, %q unchanged, %s removed",
			report.Copied, report.Unchanged, report.Removed, want, dayName(past[2]))
	}
	assertPrivate(t, dest)
	again := mustOpen(t, sqlite.Config{Dir: restoreInto(t, dest)})
	assertStored(t, again, append(slices.Clone(acked), past[:2]...), "after a restore of the second backup")
	if _, err := again.Get(opCtx(t), scope, past[2].ID, now); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a message of the day retention dropped, after a restore of the second backup: %v; want not found", err)
	}
}

// restoreInto restores the backup in dest into a new directory, which it
// returns.
func restoreInto(t *testing.T, dest string) string {
	t.Helper()
	restored := filepath.Join(t.TempDir(), "restored")
	if err := sqlite.Restore(opCtx(t), dest, restored, sqlite.RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return restored
}

// assertPrivate fails unless every file in dir is mode 0600.
func assertPrivate(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s in %s: %v, %v; want mode 0600", e.Name(), dir, info.Mode(), err)
		}
	}
}

// storedPrefix is how many of ms s holds, failing unless they are the first
// ones: a copy at one instant of an ingest that stored ms in order.
func storedPrefix(t *testing.T, s *sqlite.Store, ms []domain.Message) int {
	t.Helper()
	stored := 0
	for i, m := range ms {
		_, err := s.Get(opCtx(t), scope, m.ID, time.Now().Add(time.Hour))
		switch {
		case err == nil && stored == i:
			stored++
		case err == nil:
			t.Fatalf("message %d of those acknowledged is stored, but not message %d before it: not a copy at one instant", i, stored)
		case !errors.Is(err, ports.ErrNotFound):
			t.Fatalf("Get(%s): %v", m.ID, err)
		}
	}
	return stored
}

// Restore refuses a directory that holds data (a data directory, moved
// aside first), and a directory that is no backup; Backup refuses a
// destination that holds data but no backup of its own.
func TestRestoreAndBackupRefuseForeignDirectories(t *testing.T) {
	dir, day := seeded(t)
	dest := filepath.Join(t.TempDir(), "backup")
	if _, err := sqlite.Backup(opCtx(t), dir, dest, time.Second); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	err := sqlite.Restore(opCtx(t), dest, dir, sqlite.RestoreOptions{})
	wantNamed(t, err, dir)
	if after := snapshot(t, dir); after != before {
		t.Errorf("a refused restore changed the data directory:\nbefore %s\nafter  %s", before, after)
	}
	wantNamed(t, sqlite.Restore(opCtx(t), dir, t.TempDir(), sqlite.RestoreOptions{}), dir)
	_, err = sqlite.Backup(opCtx(t), dest, dir, time.Second)
	wantNamed(t, err, dir)
	if _, err := os.Stat(day); err != nil {
		t.Errorf("the day file after the refusals: %v", err)
	}
}

// A day file retention dropped and a late message made again holds as many
// messages as the one it replaces: the next backup copies it all the same,
// as it copies a day whose file changed in any way.
func TestBackupCopiesADayMadeAgain(t *testing.T) {
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	s := mustOpen(t, sqlite.Config{Dir: dir})
	now := time.Now().UTC()
	first := newMessage(t, now.Add(-24*time.Hour), 100)
	first.ExpiresAt = now.Add(time.Minute)
	if err := s.Append(opCtx(t), []domain.Message{first}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Backup(opCtx(t), dir, dest, time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeExpired(opCtx(t), now.Add(2*time.Minute)); err != nil || n != 1 {
		t.Fatalf("PurgeExpired = %d, %v; want the day dropped", n, err)
	}
	late := newMessage(t, first.CreatedAt, 100)
	if err := s.Append(opCtx(t), []domain.Message{late}); err != nil {
		t.Fatal(err)
	}
	report, err := sqlite.Backup(opCtx(t), dir, dest, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Unchanged) != 0 {
		t.Errorf("backup after the day was made again: unchanged %q; want it copied", report.Unchanged)
	}
	back := mustOpen(t, sqlite.Config{Dir: restoreInto(t, dest)})
	assertStored(t, back, []domain.Message{late}, "after a restore")
}
