package sqlite_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/adapters/sqlite/daystats"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/stats"
	"github.com/reqlog/reqlog/ports"
)

// classed sets the retention rule of a message, its class.
func classed(m domain.Message, rule string) domain.Message {
	m.RetentionRule = rule
	return m
}

// dayFiles lists the day files of dir of the day of t, by name.
func dayFiles(t *testing.T, dir string, day time.Time) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "messages-"+day.UTC().Format("2006-01-02")+"*.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}

// retentionOf answers the purge with rules: a class absent keeps its
// stamped expiry.
func retentionOf(rules map[domain.RetentionClass][2]time.Duration) ports.RetentionOf {
	return func(_ context.Context, c domain.RetentionClass) (keep, bodies time.Duration, ok bool, err error) {
		r, ok := rules[c]
		return r[0], r[1], ok, nil
	}
}

// A day's messages of three retention classes are three files, and every
// read sees them as one day: List in order across pages, Get, q, and the
// statistics (by rollups and by the word index).
func TestRetentionClassesAreOneDayToReads(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	base := time.Now().UTC().Add(-50 * time.Hour).Truncate(time.Hour)
	var all []domain.Message
	for i := range 90 {
		m := newMessage(t, base.Add(time.Duration(i)*37*time.Second), 100)
		if i%5 == 0 {
			m.Response.Body = "refund requested"
		}
		all = append(all, classed(m, []string{"", "payments", "search"}[i%3]))
	}
	if err := s.Append(opCtx(t), all); err != nil {
		t.Fatal(err)
	}
	if files := dayFiles(t, dir, base); len(files) != 3 {
		t.Fatalf("the day's files: %v, want three: the policy's and two classes'", files)
	}
	now := time.Now()
	want := slices.Clone(all)
	slices.SortFunc(want, func(a, b domain.Message) int {
		if domain.Precedes(a, b) {
			return -1
		}
		return 1
	})
	var got []string
	listAll(t, s, domain.Query{Scope: scope, Limit: 7}, now, func(m domain.Message) { got = append(got, m.ID) })
	if wantIDs := idsOf(want); !slices.Equal(got, wantIDs) {
		t.Fatalf("List across the classes in pages of 7:\n got %v\nwant %v", got, wantIDs)
	}
	for _, m := range all[:3] {
		if _, err := s.Get(opCtx(t), scope, m.ID, now); err != nil {
			t.Errorf("Get of a message of class %q: %v", m.RetentionRule, err)
		}
	}
	var refunds []string
	listAll(t, s, domain.Query{Scope: scope, Limit: 4, Filter: domain.Filter{Text: "refund"}}, now, func(m domain.Message) { refunds = append(refunds, m.ID) })
	if len(refunds) != 18 {
		t.Errorf("q refund found %d messages, want 18 of all classes", len(refunds))
	}
	day := base.Truncate(24 * time.Hour)
	values := map[string][]string{"from": {day.Format(time.RFC3339)}, "to": {day.Add(48 * time.Hour).Format(time.RFC3339)}}
	if got, _ := statsEqualRollupBuilder(t, s, all, now, values); got.Total.Count != 90 {
		t.Errorf("the statistics count %d messages, want 90", got.Total.Count)
	}
	values["q"] = []string{"refund"}
	if got, _ := statsEqualBuilders(t, s, all, now, values); got.Total.Count != 18 {
		t.Errorf("the statistics of q refund count %d messages, want 18", got.Total.Count)
	}
}

func idsOf(msgs []domain.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

// A class's bodies retention passed: the purge takes its bodies out of its
// files' bytes, and their space back, and leaves the other classes'.
func TestBodiesOfAClassLeaveItsFiles(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	created := time.Now().UTC().Add(-72 * time.Hour)
	const secret = "pan-4111111111111111-cvv"
	var payments, policy []domain.Message
	for i := range 300 {
		m := newMessage(t, created.Add(time.Duration(i)*time.Second), 0)
		m.Request.Body = `{"card":"` + secret + `"}`
		m.Response.Body = rand.Text() + rand.Text() + rand.Text() + rand.Text() // 104 bytes that do not compress
		m.BodiesExpireAt = m.CreatedAt.Add(24 * time.Hour)
		payments = append(payments, classed(m, "payments"))
	}
	for i := range 3 {
		m := newMessage(t, created.Add(time.Duration(i)*time.Second), 100)
		m.Request.Body = `{"card":"` + secret + `"}`
		policy = append(policy, m)
	}
	if err := s.Append(opCtx(t), slices.Concat(payments, policy)); err != nil {
		t.Fatal(err)
	}
	files := dayFiles(t, dir, created)
	classFile := filepath.Join(dir, files[slices.IndexFunc(files, func(n string) bool { return strings.Count(n, ".") == 2 })])
	before := fileBytes(t, classFile)

	now := time.Now()
	// Past their expiry the bodies' words are no longer found, though the
	// word index holds them until the purge: the class's file is read whole.
	countPan := func(when string, wantWhole int) {
		t.Helper()
		q, err := stats.ParseQuery(map[string][]string{"from": {created.Add(-time.Hour).Format(time.RFC3339)}, "q": {"pan"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		q.Scope = scope
		var trace daystats.Trace
		got, err := s.Stats(daystats.WithTrace(opCtx(t), &trace), q, now)
		if err != nil || got.Total.Count != int64(len(policy)) || trace.DaysWhole != wantWhole {
			t.Errorf("%s: a q of a word of the bodies counts %d (%v), %d files read whole; want the policy's %d, %d", when,
				got.Total.Count, err, trace.DaysWhole, len(policy), wantWhole)
		}
	}
	countPan("before the purge", 1)
	current := retentionOf(map[domain.RetentionClass][2]time.Duration{
		{Account: scope.Account, Rule: "payments"}: {30 * 24 * time.Hour, 24 * time.Hour}})
	if n, err := s.PurgeRetention(opCtx(t), now, current); err != nil || n != 0 {
		t.Fatalf("PurgeRetention = %d, %v; want no message purged", n, err)
	}
	after := fileBytes(t, classFile)
	t.Logf("the class's day file and its WAL: %d bytes before the bodies went, %d after", len(before), len(after))
	if bytes.Contains(after, []byte(secret)) || bytes.Contains(after, []byte(payments[0].Response.Body)) {
		t.Errorf("%s still holds a body's bytes", classFile)
	}
	if len(after) >= len(before) {
		t.Errorf("the class's files hold %d bytes after the bodies went, %d before: the space was not given back", len(after), len(before))
	}
	got, err := s.Get(opCtx(t), scope, payments[0].ID, now)
	if err != nil || got.Request.Body != "" || got.Response.Body != "" || got.Request.Header == nil {
		t.Errorf("Get of a payment after its bodies went = bodies %q %q, headers %v (%v); want no bodies, the headers", got.Request.Body, got.Response.Body, got.Request.Header, err)
	}
	if got, err := s.Get(opCtx(t), scope, policy[0].ID, now); err != nil || !strings.Contains(got.Request.Body, secret) {
		t.Errorf("the policy's class lost its bodies: %q (%v)", got.Request.Body, err)
	}
	found := listAll(t, s, domain.Query{Scope: scope, Limit: 100, Filter: domain.Filter{Text: "pan"}}, now, nil)
	if found != len(policy) {
		t.Errorf("q of a word of the bodies finds %d messages, want the policy's %d", found, len(policy))
	}
	countPan("after the purge", 0)
	if n, err := s.PurgeRetention(opCtx(t), now, current); err != nil || n != 0 {
		t.Errorf("PurgeRetention again = %d, %v", n, err)
	}
}

// fileBytes reads a day file and its WAL.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// A class shortened from 30 days to 1 while its days are being read and
// exported: each read completes or ends with a clear error, the class's
// old days are dropped whole and their space returned (no descriptor of
// the store holds them), and nothing of another class, or of another
// account's rule of that name, is dropped.
func TestShorteningAClassWhileReading(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	other := domain.Scope{Account: "globex", Domain: domain.DomainLive}
	now := time.Now().UTC()
	var shortened, kept []domain.Message
	for day := 2; day <= 4; day++ {
		for i := range 200 {
			created := now.Add(-time.Duration(day) * 24 * time.Hour).Add(time.Duration(i) * time.Second)
			m := newMessage(t, created, 1000)
			shortened = append(shortened, classed(m, "payments"))
			kept = append(kept, newMessage(t, created.Add(time.Millisecond), 1000))
			o := newMessage(t, created, 200)
			o.Account = other.Account
			kept = append(kept, classed(o, "payments"))
		}
	}
	recent := classed(newMessage(t, now.Add(-time.Hour), 100), "payments")
	kept = append(kept, recent)
	if err := s.Append(opCtx(t), slices.Concat(shortened, kept)); err != nil {
		t.Fatal(err)
	}
	classFiles := func() []string {
		var names []string
		for day := 2; day <= 4; day++ {
			for _, n := range dayFiles(t, dir, now.Add(-time.Duration(day)*24*time.Hour)) {
				if strings.Count(n, ".") == 2 {
					names = append(names, n)
				}
			}
		}
		return names
	}
	if n := len(classFiles()); n != 6 {
		t.Fatalf("%d class files of the three days, want 6 (acme's and globex's payments)", n)
	}

	var (
		readers  sync.WaitGroup
		stop     = make(chan struct{})
		mu       sync.Mutex
		readErrs []error
		reads    int
	)
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := exportAll(s, domain.Query{Scope: scope, Limit: 50}, now)
				mu.Lock()
				reads++
				if err != nil {
					readErrs = append(readErrs, err)
				}
				mu.Unlock()
			}
		})
	}
	current := retentionOf(map[domain.RetentionClass][2]time.Duration{
		{Account: scope.Account, Rule: "payments"}: {24 * time.Hour, 24 * time.Hour}})
	n, err := s.PurgeRetention(opCtx(t), now, current)
	close(stop)
	readers.Wait()
	if err != nil || n != int64(len(shortened)) {
		t.Fatalf("PurgeRetention = %d, %v; want %d, nil", n, err, len(shortened))
	}
	t.Logf("%d reads ran beside the purge, %d ended in an error", reads, len(readErrs))
	for _, err := range readErrs {
		if !errors.Is(err, ports.ErrUnavailable) && !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("a read during the purge ended with an error that says nothing: %v", err)
		}
	}
	if left := classFiles(); len(left) != 3 {
		t.Errorf("class files left: %v, want globex's three", left)
	}
	assertNoDeletedFileHeld(t, dir)
	for _, m := range shortened[:3] {
		if _, err := s.Get(opCtx(t), scope, m.ID, now); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Get of a message of the shortened class = %v, want ErrNotFound", err)
		}
	}
	byScope := map[domain.Scope]int{}
	for _, m := range kept {
		byScope[m.Scope()]++
	}
	for sc, want := range byScope {
		if got := listAll(t, s, domain.Query{Scope: sc, Limit: domain.MaxLimit}, now, nil); got != want {
			t.Errorf("%+v holds %d messages after the purge, want %d", sc, got, want)
		}
	}
}

// exportAll reads every page of q, as an export does.
func exportAll(s *sqlite.Store, q domain.Query, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for {
		page, err := s.List(ctx, q, now)
		if err != nil {
			return err
		}
		if q.After = page.Next(); q.After == nil {
			return nil
		}
	}
}

// assertNoDeletedFileHeld fails if the process holds a descriptor of a
// deleted file of dir: its space would not return to the file system.
func assertNoDeletedFileHeld(t *testing.T, dir string) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) && strings.HasSuffix(target, "(deleted)") {
			t.Errorf("descriptor %s holds %s: its space is not returned", fd.Name(), target)
		}
	}
}

// Batches over three classes appended at once by many callers, each with
// a retry of a batch before it (Appends meeting in each file's queue share
// its transactions): every message is stored once, in its class's file,
// and the statistics count each once.
func TestBatchesOfClassesAppendedAtOnceAreStoredOnce(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, sqlite.Config{Dir: dir})
	base := time.Now().UTC().Add(-50 * time.Hour).Truncate(time.Hour)
	const callers, batches, size = 8, 6, 9
	all := make([][]domain.Message, callers*batches)
	for b := range all {
		for i := range size {
			m := newMessage(t, base.Add(time.Duration(b*size+i)*time.Second), 200)
			all[b] = append(all[b], classed(m, []string{"", "payments", "audit"}[i%3]))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(all))
	for c := range callers {
		wg.Go(func() {
			for b := c * batches; b < (c+1)*batches; b++ {
				errs <- s.Append(opCtx(t), all[b])
				errs <- s.Append(opCtx(t), all[max(b-1, 0)]) // a retry: stored once
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if files := dayFiles(t, dir, base); len(files) != 3 {
		t.Fatalf("the day's files: %v, want three: the policy's and two classes'", files)
	}
	var flat []domain.Message
	for _, batch := range all {
		flat = append(flat, batch...)
	}
	now := time.Now()
	classOf := map[string]string{}
	for _, m := range flat {
		classOf[m.ID] = m.RetentionRule
	}
	listed := listAll(t, s, domain.Query{Scope: scope, Limit: 100}, now, func(m domain.Message) {
		if _, ok := classOf[m.ID]; !ok {
			t.Errorf("listed %s, not appended, or listed twice", m.ID)
		}
		delete(classOf, m.ID)
	})
	if listed != len(flat) || len(classOf) != 0 {
		t.Errorf("listed %d messages, want %d; %d never listed", listed, len(flat), len(classOf))
	}
	day := base.Truncate(24 * time.Hour)
	values := map[string][]string{"from": {day.Format(time.RFC3339)}, "to": {day.Add(48 * time.Hour).Format(time.RFC3339)}}
	if got, _ := statsEqualRollupBuilder(t, s, flat, now, values); got.Total.Count != int64(len(flat)) {
		t.Errorf("the statistics count %d messages, want %d", got.Total.Count, len(flat))
	}
}
