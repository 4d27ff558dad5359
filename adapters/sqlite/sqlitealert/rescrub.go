package sqlitealert

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reqlog/reqlog/adapters/rescrubrecord"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RescrubJobStore = (*AlertStore)(nil)

// The accounts' re-scrub jobs live in the alert file beside the rule sets:
// table rescrub_jobs (alert-3.sql), one row a job, each a rescrubrecord as
// JSON. Each compare-and-set is a transaction begun IMMEDIATE.

func jobOf(r rescrubrecord.Record) (rules.RescrubJob, error) { return r.Job(), nil }

// CreateRescrubJob inserts the account's next job unless its latest runs.
func (a *AlertStore) CreateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	err := a.inTx(ctx, "create re-scrub", func(tx *sql.Tx) error {
		var latest int64
		var state string
		err := tx.QueryRowContext(ctx, "SELECT number, state FROM rescrub_jobs WHERE account = ? ORDER BY number DESC LIMIT 1", job.Account).
			Scan(&latest, &state)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return storeError(ctx, "create re-scrub", err)
		case state == string(rules.RescrubRunning):
			return fmt.Errorf("sqlite: re-scrub %d of %q is running: %w", latest, job.Account, ports.ErrBusy)
		}
		job.Number, job.Revision, job.State = latest+1, 1, rules.RescrubRunning
		return a.writeJob(ctx, tx, "INSERT INTO rescrub_jobs (account, number, state, revision, doc) VALUES (?, ?, ?, ?, ?)", job,
			job.Account, job.Number, string(job.State), job.Revision)
	})
	if err != nil {
		return rules.RescrubJob{}, err
	}
	return rescrubrecord.Of(job).Job(), nil
}

// writeJob runs query with args and job's JSON last.
func (a *AlertStore) writeJob(ctx context.Context, tx *sql.Tx, query string, job rules.RescrubJob, args ...any) error {
	doc, err := encodeDoc(rescrubrecord.Of(job))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, query, append(args, doc)...); err != nil {
		return storeError(ctx, "write re-scrub", err)
	}
	return nil
}

// UpdateRescrubJob saves job if its revision is the stored one.
func (a *AlertStore) UpdateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	expected := job.Revision
	job.Revision++
	err := a.inTx(ctx, "update re-scrub", func(tx *sql.Tx) error {
		var stored int64
		err := tx.QueryRowContext(ctx, "SELECT revision FROM rescrub_jobs WHERE account = ? AND number = ?", job.Account, job.Number).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("sqlite: re-scrub %d of %q: %w", job.Number, job.Account, ports.ErrNotFound)
		case err != nil:
			return storeError(ctx, "update re-scrub", err)
		case stored != expected:
			return fmt.Errorf("sqlite: re-scrub %d of %q is at revision %d, not %d: %w", job.Number, job.Account, stored, expected, ports.ErrStale)
		}
		return a.writeJob(ctx, tx, "UPDATE rescrub_jobs SET state = ?1, revision = ?2, doc = ?5 WHERE account = ?3 AND number = ?4",
			job, string(job.State), job.Revision, job.Account, job.Number)
	})
	if err != nil {
		return rules.RescrubJob{}, err
	}
	return rescrubrecord.Of(job).Job(), nil
}

// RescrubJob returns the account's job number.
func (a *AlertStore) RescrubJob(ctx context.Context, account string, number int64) (rules.RescrubJob, error) {
	jobs, err := docs(ctx, a.read, "re-scrub", "SELECT doc FROM rescrub_jobs WHERE account = ? AND number = ?", jobOf, account, number)
	if err != nil {
		return rules.RescrubJob{}, err
	}
	if len(jobs) == 0 {
		return rules.RescrubJob{}, fmt.Errorf("sqlite: re-scrub %d of %q: %w", number, account, ports.ErrNotFound)
	}
	return jobs[0], nil
}

// RescrubJobs returns the account's jobs, newest first.
func (a *AlertStore) RescrubJobs(ctx context.Context, account string, limit int) ([]rules.RescrubJob, error) {
	return docs(ctx, a.read, "re-scrubs", "SELECT doc FROM rescrub_jobs WHERE account = ? ORDER BY number DESC LIMIT ?", jobOf, account, limit)
}

// RunningRescrubJobs returns every account's running job.
func (a *AlertStore) RunningRescrubJobs(ctx context.Context) ([]rules.RescrubJob, error) {
	return docs(ctx, a.read, "re-scrubs", "SELECT doc FROM rescrub_jobs WHERE state = ?", jobOf, string(rules.RescrubRunning))
}
