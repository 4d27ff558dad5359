package ports

import (
	"context"
	"errors"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
)

// ErrBusy: another job of the kind already runs for the account (HTTP 409).
var ErrBusy = errors.New("busy")

// RewriteScan selects the stored messages a re-scrub reads: one scope's
// messages created in [From, To), of Names (none: all), oldest first by
// (CreatedAt, ID), strictly after After when set, at most Limit.
type RewriteScan struct {
	Scope    domain.Scope
	From, To time.Time
	Names    []string
	After    *domain.Cursor
	Limit    int
}

// MessageRewriter is an optional capability of a message store: rewriting
// stored messages in place, which a re-scrub of the accounts' rule sets
// needs (app.Rescrubs).
type MessageRewriter interface {
	// ScanForRewrite returns the messages q selects, readable or not (not
	// yet visible, or expired but not yet purged), in its order; none is not
	// an error. It MUST see every message whose Append returned before the
	// call (no read lag), and MUST NOT return one twice across pages while
	// nothing is appended behind After. Returned messages belong to the
	// caller.
	ScanForRewrite(ctx context.Context, q RewriteScan) ([]domain.Message, error)
	// RewriteMessages replaces, of each message of msgs stored under its
	// scope and ID, what privacy rules change (IPAddress, Path, both sides'
	// headers and bodies) and its Rules record; every other field stays as
	// stored. A message no longer stored stays absent: it is never stored
	// again. It MUST be durable when it returns nil, and from then on no
	// read (Get, List, a q search, Stats, an export) finds what only the old
	// content held. It MUST NOT keep references to msgs.
	RewriteMessages(ctx context.Context, msgs []domain.Message) error
	// ExpungeRewritten removes, as far as the backend allows, what rewrites
	// of the messages created in [from, to) left behind in its files
	// (SQLite: the day files rebuilt and their WAL truncated;
	// Elasticsearch: deleted documents merged away). A re-scrub calls it
	// once it has rewritten its range, before it reports done; it MAY do
	// more than the range.
	ExpungeRewritten(ctx context.Context, from, to time.Time) error
}

// RescrubJobStore keeps the accounts' re-scrub jobs (rules.RescrubJob),
// numbered 1, 2, ... per account, so that a job outlives the replica
// running it. Every method reports backend outages wrapping ErrUnavailable;
// returned jobs belong to the caller.
type RescrubJobStore interface {
	// CreateRescrubJob saves job as the account's next job, running, with
	// Revision 1, and returns it numbered, unless the account's latest job
	// is running: then it fails wrapping ErrBusy, having saved nothing. Of
	// concurrent calls for one account at most one succeeds.
	CreateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error)
	// UpdateRescrubJob saves job (its progress, state, owner and lease) if
	// the stored job's Revision is job.Revision, and returns it with
	// Revision+1; otherwise it fails wrapping ErrStale, having changed
	// nothing, and an unknown job wraps ErrNotFound.
	UpdateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error)
	// RescrubJob returns the account's job number, or an error wrapping
	// ErrNotFound.
	RescrubJob(ctx context.Context, account string, number int64) (rules.RescrubJob, error)
	// RescrubJobs returns the account's jobs, newest first, at most limit.
	RescrubJobs(ctx context.Context, account string, limit int) ([]rules.RescrubJob, error)
	// RunningRescrubJobs returns every account's running job, which a
	// replica takes up when its lease has run out.
	RunningRescrubJobs(ctx context.Context) ([]rules.RescrubJob, error)
}
