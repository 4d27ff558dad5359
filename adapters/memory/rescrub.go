package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RescrubJobStore = (*RuleSetStore)(nil)

// The re-scrub jobs live beside the rule sets: each account's, oldest first
// (index i holds Number i+1), under the same mutex.

// CreateRescrubJob saves job as the account's next job unless one runs.
func (s *RuleSetStore) CreateRescrubJob(_ context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs := s.jobs[job.Account]
	if n := len(jobs); n > 0 && jobs[n-1].State == rules.RescrubRunning {
		return rules.RescrubJob{}, fmt.Errorf("memory: re-scrub %d of %q is running: %w", n, job.Account, ports.ErrBusy)
	}
	job.Number, job.Revision, job.State = int64(len(jobs))+1, 1, rules.RescrubRunning
	job = copyJob(job)
	s.jobs[job.Account] = append(jobs, job)
	return copyJob(job), nil
}

// UpdateRescrubJob saves job if its revision is the stored one.
func (s *RuleSetStore) UpdateRescrubJob(_ context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs := s.jobs[job.Account]
	if job.Number < 1 || job.Number > int64(len(jobs)) {
		return rules.RescrubJob{}, fmt.Errorf("memory: re-scrub %d of %q: %w", job.Number, job.Account, ports.ErrNotFound)
	}
	if stored := jobs[job.Number-1].Revision; stored != job.Revision {
		return rules.RescrubJob{}, fmt.Errorf("memory: re-scrub %d of %q is at revision %d, not %d: %w",
			job.Number, job.Account, stored, job.Revision, ports.ErrStale)
	}
	job.Revision++
	jobs[job.Number-1] = copyJob(job)
	return copyJob(job), nil
}

// RescrubJob returns the account's job number.
func (s *RuleSetStore) RescrubJob(_ context.Context, account string, number int64) (rules.RescrubJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs := s.jobs[account]
	if number < 1 || number > int64(len(jobs)) {
		return rules.RescrubJob{}, fmt.Errorf("memory: re-scrub %d of %q: %w", number, account, ports.ErrNotFound)
	}
	return copyJob(jobs[number-1]), nil
}

// RescrubJobs returns the account's jobs, newest first.
func (s *RuleSetStore) RescrubJobs(_ context.Context, account string, limit int) ([]rules.RescrubJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rules.RescrubJob
	for _, job := range slices.Backward(s.jobs[account]) {
		if len(out) == limit {
			break
		}
		out = append(out, copyJob(job))
	}
	return out, nil
}

// RunningRescrubJobs returns every account's running job.
func (s *RuleSetStore) RunningRescrubJobs(context.Context) ([]rules.RescrubJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rules.RescrubJob
	for _, jobs := range s.jobs {
		if n := len(jobs); n > 0 && jobs[n-1].State == rules.RescrubRunning {
			out = append(out, copyJob(jobs[n-1]))
		}
	}
	return out, nil
}

func copyJob(j rules.RescrubJob) rules.RescrubJob {
	j.Applications = slices.Clone(j.Applications)
	return j
}
