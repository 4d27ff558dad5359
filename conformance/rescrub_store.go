package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// RescrubJobStoreMaker returns a fresh, empty re-scrub job store for one
// subtest and registers its own cleanup with t.Cleanup, as StoreMaker does.
type RescrubJobStoreMaker func(ctx context.Context, t *testing.T) (ports.RescrubJobStore, error)

// RunRescrubJobStoreTests checks newStore's stores against the
// ports.RescrubJobStore contract: jobs are numbered per account and round
// trip every field; a second job while one runs is refused, and of
// concurrent creators one wins; a save is a compare-and-set on the
// revision; jobs list newest first, and the running ones of every account
// are found. Each subtest gets a fresh store.
func RunRescrubJobStoreTests(t *testing.T, newStore RescrubJobStoreMaker) {
	runOnFreshStores(t, "RescrubJobStoreMaker", newStore, []storeCase[ports.RescrubJobStore]{
		{"OneRunningJobPerAccount", testRescrubOneRunning},
		{"RoundTripEveryField", testRescrubRoundTrip},
		{"UpdateIsCompareAndSet", testRescrubCompareAndSet},
		{"ConcurrentCreatesOneWins", testRescrubConcurrentCreates},
		{"ListNewestFirstAndRunning", testRescrubLists},
	})
}

// newRescrubJob is a job of account over the last day, as a request makes it.
func newRescrubJob(account string) rules.RescrubJob {
	now := domain.Micro(time.Now())
	return rules.RescrubJob{Account: account, Version: 3, From: now.Add(-24 * time.Hour), To: now,
		KeyID: "key_0123456789ab", CreatedAt: now, UpdatedAt: now}
}

func mustCreateJob(t *testing.T, s ports.RescrubJobStore, job rules.RescrubJob) rules.RescrubJob {
	t.Helper()
	created, err := s.CreateRescrubJob(t.Context(), job)
	if err != nil {
		t.Fatalf("CreateRescrubJob(%s): %v", job.Account, err)
	}
	return created
}

func finishJob(t *testing.T, s ports.RescrubJobStore, job rules.RescrubJob) rules.RescrubJob {
	t.Helper()
	job.State, job.FinishedAt = rules.RescrubDone, domain.Micro(time.Now())
	done, err := s.UpdateRescrubJob(t.Context(), job)
	if err != nil {
		t.Fatalf("UpdateRescrubJob(%s %d, done): %v", job.Account, job.Number, err)
	}
	return done
}

func testRescrubOneRunning(t *testing.T, s ports.RescrubJobStore) {
	first := mustCreateJob(t, s, newRescrubJob("acme"))
	if first.Number != 1 || first.Revision != 1 || first.State != rules.RescrubRunning {
		t.Fatalf("the first job = number %d, revision %d, state %q; want 1, 1, running", first.Number, first.Revision, first.State)
	}
	if _, err := s.CreateRescrubJob(t.Context(), newRescrubJob("acme")); !errors.Is(err, ports.ErrBusy) {
		t.Fatalf("a second job while the first runs: %v, want an error wrapping ports.ErrBusy", err)
	}
	if other := mustCreateJob(t, s, newRescrubJob("globex")); other.Number != 1 {
		t.Errorf("another account's first job is number %d, want 1", other.Number)
	}
	finishJob(t, s, first)
	if second := mustCreateJob(t, s, newRescrubJob("acme")); second.Number != 2 {
		t.Errorf("the job after a finished one is number %d, want 2", second.Number)
	}
}

func testRescrubRoundTrip(t *testing.T, s ports.RescrubJobStore) {
	job := mustCreateJob(t, s, newRescrubJob("acme"))
	at := domain.Micro(time.Now()).Add(7 * time.Microsecond)
	job.Applications = []string{"shop", "Ünïcødé ☕"}
	job.Cursor = rules.RescrubCursor{Domain: domain.DomainTest, CreatedAt: at.Add(-time.Hour), ID: "0190b5f2-0000-7000-8000-000000000001"}
	job.Scanned, job.Changed, job.Skipped = 1234, 56, 78
	job.Error, job.Owner, job.LeaseUntil, job.UpdatedAt = "store unavailable", "replica-1", at.Add(time.Minute), at
	want := job
	want.Applications, want.Revision = slices.Clone(job.Applications), job.Revision+1
	saved, err := s.UpdateRescrubJob(t.Context(), job)
	if err != nil {
		t.Fatalf("UpdateRescrubJob: %v", err)
	}
	job.Applications[0] = "changed after the call"
	for what, got := range map[string]func() (rules.RescrubJob, error){
		"UpdateRescrubJob's": func() (rules.RescrubJob, error) { return saved, nil },
		"RescrubJob":         func() (rules.RescrubJob, error) { return s.RescrubJob(t.Context(), "acme", job.Number) },
	} {
		g, err := got()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if diff := jobDiff(want, g); diff != "" {
			t.Errorf("%s job differs from what was saved: %s", what, diff)
		}
	}
	if _, err := s.RescrubJob(t.Context(), "acme", 2); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("RescrubJob of an unknown number: %v, want an error wrapping ports.ErrNotFound", err)
	}
	if _, err := s.RescrubJob(t.Context(), "globex", 1); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("RescrubJob of another account: %v, want an error wrapping ports.ErrNotFound", err)
	}
}

// jobDiff describes how got differs from want, "" when alike (times as
// instants).
func jobDiff(want, got rules.RescrubJob) string {
	same := func(a, b time.Time) bool { return a.Equal(b) }
	if want.Account != got.Account || want.Number != got.Number || want.Version != got.Version ||
		!same(want.From, got.From) || !same(want.To, got.To) || !slices.Equal(want.Applications, got.Applications) ||
		want.KeyID != got.KeyID || want.State != got.State || want.Cursor.Domain != got.Cursor.Domain ||
		!same(want.Cursor.CreatedAt, got.Cursor.CreatedAt) || want.Cursor.ID != got.Cursor.ID ||
		want.Scanned != got.Scanned || want.Changed != got.Changed || want.Skipped != got.Skipped ||
		want.Error != got.Error || !same(want.CreatedAt, got.CreatedAt) || !same(want.UpdatedAt, got.UpdatedAt) ||
		!same(want.FinishedAt, got.FinishedAt) || want.Owner != got.Owner || !same(want.LeaseUntil, got.LeaseUntil) ||
		want.Revision != got.Revision {
		return fmt.Sprintf("got %+v, want %+v", got, want)
	}
	return ""
}

func testRescrubCompareAndSet(t *testing.T, s ports.RescrubJobStore) {
	job := mustCreateJob(t, s, newRescrubJob("acme"))
	job.Scanned = 10
	next, err := s.UpdateRescrubJob(t.Context(), job)
	if err != nil || next.Revision != 2 {
		t.Fatalf("UpdateRescrubJob at revision 1 = revision %d, %v; want 2", next.Revision, err)
	}
	job.Scanned = 99 // still at revision 1: another replica's save came first
	if _, err := s.UpdateRescrubJob(t.Context(), job); !errors.Is(err, ports.ErrStale) {
		t.Fatalf("UpdateRescrubJob at a stale revision: %v, want an error wrapping ports.ErrStale", err)
	}
	if got, err := s.RescrubJob(t.Context(), "acme", 1); err != nil || got.Scanned != 10 || got.Revision != 2 {
		t.Errorf("after a stale save the job = scanned %d, revision %d, %v; want 10, 2", got.Scanned, got.Revision, err)
	}
	unknown := next
	unknown.Number = 5
	if _, err := s.UpdateRescrubJob(t.Context(), unknown); !errors.Is(err, ports.ErrNotFound) && !errors.Is(err, ports.ErrStale) {
		t.Errorf("UpdateRescrubJob of an unknown job: %v, want an error wrapping ports.ErrNotFound", err)
	}
}

func testRescrubConcurrentCreates(t *testing.T, s ports.RescrubJobStore) {
	const creators = 8
	var wg sync.WaitGroup
	errs := make([]error, creators)
	for i := range creators {
		wg.Go(func() { _, errs[i] = s.CreateRescrubJob(t.Context(), newRescrubJob("acme")) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ports.ErrBusy):
			t.Errorf("a creator that lost: %v, want an error wrapping ports.ErrBusy", err)
		}
	}
	jobs, err := s.RescrubJobs(t.Context(), "acme", 10)
	if won != 1 || err != nil || len(jobs) != 1 {
		t.Errorf("%d of %d concurrent creators won and the account holds %d jobs (%v); want 1 and 1", won, creators, len(jobs), err)
	}
}

func testRescrubLists(t *testing.T, s ports.RescrubJobStore) {
	for range 3 {
		finishJob(t, s, mustCreateJob(t, s, newRescrubJob("acme")))
	}
	running := mustCreateJob(t, s, newRescrubJob("acme"))
	mustCreateJob(t, s, newRescrubJob("globex"))
	finishJob(t, s, mustCreateJob(t, s, newRescrubJob("initech")))
	jobs, err := s.RescrubJobs(t.Context(), "acme", 3)
	if err != nil {
		t.Fatalf("RescrubJobs: %v", err)
	}
	var numbers []int64
	for _, j := range jobs {
		numbers = append(numbers, j.Number)
	}
	if !slices.Equal(numbers, []int64{4, 3, 2}) {
		t.Errorf("RescrubJobs(acme, 3) = numbers %v, want [4 3 2]", numbers)
	}
	found, err := s.RunningRescrubJobs(t.Context())
	if err != nil {
		t.Fatalf("RunningRescrubJobs: %v", err)
	}
	var names []string
	for _, j := range found {
		names = append(names, fmt.Sprintf("%s/%d", j.Account, j.Number))
	}
	slices.Sort(names)
	if want := []string{fmt.Sprintf("acme/%d", running.Number), "globex/1"}; !slices.Equal(names, want) {
		t.Errorf("RunningRescrubJobs = %v, want %v", names, want)
	}
}
