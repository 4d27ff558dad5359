package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/reqlog/reqlog/adapters/rescrubrecord"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.RescrubJobStore = (*AlertStore)(nil)

// collRescrubJobs holds the accounts' re-scrub jobs, _id
// "<account>/<number>". Creating a job inserts the next _id after the
// latest, found not running: of two creators only one inserts it. A save
// is an update matching the revision read.
const collRescrubJobs = "rescrub_jobs"

type rescrubDoc struct {
	ID                   string `bson:"_id"`
	rescrubrecord.Record `bson:",inline"`
}

var newestJobFirst = bson.D{{Key: rescrubrecord.FieldNumber, Value: -1}}

func jobID(account string, number int64) string { return versionID(account, number) }

// CreateRescrubJob inserts the account's next job unless its latest runs.
func (a *AlertStore) CreateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	coll := a.coll(collRescrubJobs)
	var latest rescrubDoc
	err := coll.FindOne(ctx, bson.D{{Key: rescrubrecord.FieldAccount, Value: job.Account}}, options.FindOne().SetSort(newestJobFirst)).Decode(&latest)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
	case err != nil:
		return rules.RescrubJob{}, storeError(ctx, "read "+collRescrubJobs, err)
	case latest.State == string(rules.RescrubRunning):
		return rules.RescrubJob{}, fmt.Errorf("mongo: re-scrub %d of %q is running: %w", latest.Number, job.Account, ports.ErrBusy)
	}
	job.Number, job.Revision, job.State = latest.Number+1, 1, rules.RescrubRunning
	doc := rescrubDoc{ID: jobID(job.Account, job.Number), Record: rescrubrecord.Of(job)}
	_, err = coll.InsertOne(ctx, doc)
	switch {
	case isDuplicate(err):
		return rules.RescrubJob{}, fmt.Errorf("mongo: re-scrub %d of %q was just created: %w", job.Number, job.Account, ports.ErrBusy)
	case err != nil:
		return rules.RescrubJob{}, storeError(ctx, "write "+collRescrubJobs, err)
	}
	return doc.Job(), nil
}

// UpdateRescrubJob replaces the job if its revision is the stored one.
func (a *AlertStore) UpdateRescrubJob(ctx context.Context, job rules.RescrubJob) (rules.RescrubJob, error) {
	expected := job.Revision
	job.Revision++
	doc := rescrubDoc{ID: jobID(job.Account, job.Number), Record: rescrubrecord.Of(job)}
	res, err := a.coll(collRescrubJobs).ReplaceOne(ctx, bson.D{{Key: fieldID, Value: doc.ID}, {Key: rescrubrecord.FieldRevision, Value: expected}}, doc)
	if err != nil {
		return rules.RescrubJob{}, storeError(ctx, "write "+collRescrubJobs, err)
	}
	if res.MatchedCount == 0 {
		if _, err := a.RescrubJob(ctx, job.Account, job.Number); err != nil {
			return rules.RescrubJob{}, err
		}
		return rules.RescrubJob{}, fmt.Errorf("mongo: re-scrub %d of %q is not at revision %d: %w", job.Number, job.Account, expected, ports.ErrStale)
	}
	return doc.Job(), nil
}

// RescrubJob returns the account's job number.
func (a *AlertStore) RescrubJob(ctx context.Context, account string, number int64) (rules.RescrubJob, error) {
	var doc rescrubDoc
	err := a.coll(collRescrubJobs).FindOne(ctx, bson.D{{Key: fieldID, Value: jobID(account, number)}}).Decode(&doc)
	switch {
	case errors.Is(err, mongodrv.ErrNoDocuments):
		return rules.RescrubJob{}, fmt.Errorf("mongo: re-scrub %d of %q: %w", number, account, ports.ErrNotFound)
	case err != nil:
		return rules.RescrubJob{}, storeError(ctx, "read "+collRescrubJobs, err)
	}
	return doc.Job(), nil
}

// RescrubJobs returns the account's jobs, newest first.
func (a *AlertStore) RescrubJobs(ctx context.Context, account string, limit int) ([]rules.RescrubJob, error) {
	return a.findJobs(ctx, bson.D{{Key: rescrubrecord.FieldAccount, Value: account}}, options.Find().SetSort(newestJobFirst).SetLimit(int64(limit)))
}

// RunningRescrubJobs returns every account's running job.
func (a *AlertStore) RunningRescrubJobs(ctx context.Context) ([]rules.RescrubJob, error) {
	return a.findJobs(ctx, bson.D{{Key: rescrubrecord.FieldState, Value: string(rules.RescrubRunning)}}, options.Find())
}

func (a *AlertStore) findJobs(ctx context.Context, filter bson.D, opts *options.FindOptionsBuilder) ([]rules.RescrubJob, error) {
	cur, err := a.coll(collRescrubJobs).Find(ctx, filter, opts)
	if err != nil {
		return nil, storeError(ctx, "read "+collRescrubJobs, err)
	}
	var docs []rescrubDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, storeError(ctx, "read "+collRescrubJobs, err)
	}
	out := make([]rules.RescrubJob, len(docs))
	for i, d := range docs {
		out[i] = d.Job()
	}
	return out, nil
}
