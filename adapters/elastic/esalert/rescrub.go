package esalert

import (
	"context"
	"fmt"

	"github.com/reqlog/reqlog/adapters/rescrubrecord"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RescrubJobStore = (*Store)(nil)

// rescrubJobs is the index of the accounts' re-scrub jobs,
// "<prefix>-alert-rescrub-jobs", each under "<account>:<number>" (as rule
// set versions). Creating a job creates the next id after the latest found
// not running (a search, which refreshes first): of two creators one
// creates it. A save is written over the version a realtime get read.
const rescrubJobs = "rescrub-jobs"

// CreateRescrubJob creates the account's next job unless its latest runs.
func (a *Store) CreateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	latest, err := a.RescrubJobs(ctx, job.Account, 1)
	if err != nil {
		return rules.RescrubJob{}, err
	}
	if len(latest) > 0 {
		if latest[0].State == rules.RescrubRunning {
			return rules.RescrubJob{}, fmt.Errorf("elastic: re-scrub %d of %q is running: %w", latest[0].Number, job.Account, ports.ErrBusy)
		}
		job.Number = latest[0].Number
	}
	job.Number, job.Revision, job.State = job.Number+1, 1, rules.RescrubRunning
	rec := rescrubrecord.Of(job)
	created, err := a.put(ctx, rescrubJobs, ruleSetID(job.Account, job.Number), rec, putCreate, 0, 0)
	switch {
	case err != nil:
		return rules.RescrubJob{}, err
	case !created:
		return rules.RescrubJob{}, fmt.Errorf("elastic: re-scrub %d of %q was just created: %w", job.Number, job.Account, ports.ErrBusy)
	}
	return rec.Job(), nil
}

// UpdateRescrubJob writes the job over the version read if its revision is
// the stored one.
func (a *Store) UpdateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	id := ruleSetID(job.Account, job.Number)
	g, err := getDoc[rescrubrecord.Record](ctx, a, rescrubJobs, id)
	switch {
	case err != nil:
		return rules.RescrubJob{}, err
	case !g.Found:
		return rules.RescrubJob{}, fmt.Errorf("elastic: re-scrub %d of %q: %w", job.Number, job.Account, ports.ErrNotFound)
	case g.Source.Revision != job.Revision:
		return rules.RescrubJob{}, fmt.Errorf("elastic: re-scrub %d of %q is at revision %d, not %d: %w",
			job.Number, job.Account, g.Source.Revision, job.Revision, ports.ErrStale)
	}
	job.Revision++
	rec := rescrubrecord.Of(job)
	written, err := a.put(ctx, rescrubJobs, id, rec, putIfVersion, g.SeqNo, g.PrimaryTerm)
	switch {
	case err != nil:
		return rules.RescrubJob{}, err
	case !written:
		return rules.RescrubJob{}, fmt.Errorf("elastic: re-scrub %d of %q was saved meanwhile: %w", job.Number, job.Account, ports.ErrStale)
	}
	return rec.Job(), nil
}

// RescrubJob returns the account's job number (a realtime get).
func (a *Store) RescrubJob(ctx context.Context, account string, number int64) (rules.RescrubJob, error) {
	g, err := getDoc[rescrubrecord.Record](ctx, a, rescrubJobs, ruleSetID(account, number))
	if err != nil {
		return rules.RescrubJob{}, err
	}
	if !g.Found {
		return rules.RescrubJob{}, fmt.Errorf("elastic: re-scrub %d of %q: %w", number, account, ports.ErrNotFound)
	}
	return g.Source.Job(), nil
}

// RescrubJobs returns the account's jobs, newest first.
func (a *Store) RescrubJobs(ctx context.Context, account string, limit int) ([]rules.RescrubJob, error) {
	if limit <= 0 {
		return nil, nil
	}
	return a.jobs(ctx, []any{term(rescrubrecord.FieldAccount, account)}, []any{desc(rescrubrecord.FieldNumber)}, limit)
}

// RunningRescrubJobs returns every account's running job (one an account:
// the account sorts them uniquely).
func (a *Store) RunningRescrubJobs(ctx context.Context) ([]rules.RescrubJob, error) {
	return a.jobs(ctx, []any{term(rescrubrecord.FieldState, string(rules.RescrubRunning))}, []any{asc(rescrubrecord.FieldAccount)}, 0)
}

// jobs searches the jobs, at most limit (0: all).
func (a *Store) jobs(ctx context.Context, filter, sort []any, limit int) ([]rules.RescrubJob, error) {
	hits, err := search[rescrubrecord.Record](ctx, a, rescrubJobs, filter, sort, limit)
	if err != nil {
		return nil, err
	}
	out := make([]rules.RescrubJob, len(hits))
	for i, h := range hits {
		out[i] = h.Source.Job()
	}
	return out, nil
}
