package elastic

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/jsonbytes"
	"github.com/reqlog/reqlog/ports"
)

var (
	_ ports.Eraser      = (*Store)(nil)
	_ ports.TallyEraser = (*Store)(nil)
)

// The subject index is each message document's keyword field subjects. The
// test distribution has neither delete-by-query nor update-by-query, so an
// erasure searches its documents (SubjectMessages), then writes them by id:
// Hide sets expires_at to erasure.HiddenExpiry, which every read filters
// out and the purge counts as expired; Delete deletes them. Both first
// search the account's documents of the refs' ids, so that another
// account's are never written, and refresh the shards they wrote, so that
// reads, and the erasure job's next search, see it at once.

// SubjectMessages: see esquery.Queries.SubjectRefs.
func (s *Store) SubjectMessages(ctx context.Context, q ports.SubjectQuery) ([]ports.SubjectRef, error) {
	return s.queries.SubjectRefs(ctx, q)
}

// MessageSubjects: see esquery.Queries.MessageSubjects.
func (s *Store) MessageSubjects(ctx context.Context, account, id string) (ports.SubjectRef, []string, error) {
	return s.queries.MessageSubjects(ctx, account, id)
}

// Hide sets the expiry of account's messages refs to erasure.HiddenExpiry
// and returns how many documents it updated (hidden before too).
func (s *Store) Hide(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	doc := jsonbytes.StringMember([]byte(`{"doc":{`), `"expires_at":`, domain.FormatTime(erasure.HiddenExpiry))
	doc = append(doc, "}}\n"...)
	return s.writeEach(ctx, "hide", account, refs, "update", doc)
}

// Delete deletes account's messages refs and returns how many documents it
// deleted; their bytes stay in their segments until Expunge.
func (s *Store) Delete(ctx context.Context, account string, refs []ports.SubjectRef) (int64, error) {
	return s.writeEach(ctx, "delete", account, refs, "delete", nil)
}

// tallyBatch is how many tallies one bulk request of EraseTallies deletes.
const tallyBatch = 1000

// EraseTallies deletes q's tallies, a search and a refreshed bulk delete at
// a time until none is found; their bytes stay until Expunge.
func (s *Store) EraseTallies(ctx context.Context, q ports.SubjectQuery) (int64, error) {
	var total int64
	for {
		targets, err := s.queries.TallyTargets(ctx, q, tallyBatch)
		if err != nil || len(targets) == 0 {
			return total, err
		}
		n, err := s.bulkEach(ctx, "delete tallies", targets, "delete", nil)
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, fmt.Errorf("elastic: delete tallies: %d found, none deleted", len(targets))
		}
	}
}

// writeEach sends one bulk request of action (with doc, its source line,
// if any) on each of account's documents of refs.
func (s *Store) writeEach(ctx context.Context, op, account string, refs []ports.SubjectRef, action string, doc []byte) (int64, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	targets, err := s.queries.Located(ctx, account, ids)
	if err != nil {
		return 0, err
	}
	return s.bulkEach(ctx, op+" messages", targets, action, doc)
}

// bulkEach sends one refreshed bulk request of action (with doc, its source
// line, if any) on each of targets.
func (s *Store) bulkEach(ctx context.Context, op string, targets []esclient.Target, action string, doc []byte) (int64, error) {
	if len(targets) == 0 {
		return 0, nil
	}
	var body []byte
	for _, t := range targets {
		body = append(appendBulkAction(body, action, t), doc...)
	}
	return s.client.BulkRefreshed(ctx, fmt.Sprintf("%s: %d", op, len(targets)), bytes.NewReader(body))
}

// appendBulkAction appends to body the bulk request's line of action on t.
func appendBulkAction(body []byte, action string, t esclient.Target) []byte {
	body = jsonbytes.StringMember(append(body, `{"`+action+`":`...), `{"_index":`, t.Index)
	body = jsonbytes.StringMember(body, `,"_id":`, t.ID)
	return append(body, "}}\n"...)
}

// Expunge merges away the deleted documents of every daily index that
// holds any (_cat/indices' docs.deleted), as ExpungeRewritten does for a
// range: the deletes of this process and those of one that died before
// its expunge, and the versions a hide or a re-scrub replaced. A merge
// keeps a deleted document (soft deletes) while the last commit or a
// retention lease of a shard copy still retains its operation, and the
// leases move on only at their background sync (every 30 s), so Expunge
// first flushes, then waits, up to leaseWait, until every lease of those
// indices has passed the operations there were when it started. A lease that does not (a copy recovering,
// a node gone, whose lease lasts index.soft_deletes.retention_lease.period,
// 12 h by default) fails it with ports.ErrUnavailable: the erasure job
// expunges again at its next run. Snapshots taken before keep their copy.
func (s *Store) Expunge(ctx context.Context) error {
	var rows []struct {
		Index   string `json:"index"`
		Deleted string `json:"docs.deleted"`
	}
	if err := s.client.Do(ctx, "expunge: indices with deleted documents", esapi.CatIndicesRequest{
		Index: []string{s.indices.Names().ReadPattern()}, Format: "json", H: []string{"index", "docs.deleted"},
	}, &rows); err != nil {
		return err
	}
	var names []string
	for _, r := range rows {
		if n, err := strconv.ParseInt(r.Deleted, 10, 64); err == nil && n > 0 {
			names = append(names, r.Index)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return s.expungeRetained(ctx, names)
}

// expungeRetained flushes names, so that their last commit holds the
// deletes (a merge keeps what a commit still needs), waits for their
// leases (waitForLeases), and merges the deleted documents away.
func (s *Store) expungeRetained(ctx context.Context, names []string) error {
	if err := s.client.Do(ctx, "expunge: flush", esapi.IndicesFlushRequest{Index: urlIndices(s, names),
		IgnoreUnavailable: esapi.BoolPtr(true), AllowNoIndices: esapi.BoolPtr(true)}, nil); err != nil {
		return err
	}
	if err := s.waitForLeases(ctx, names); err != nil {
		return err
	}
	return s.expunge(ctx, names)
}

// leaseWait bounds Expunge's wait for the retention leases: a few of their
// syncs (every 30 s).
const leaseWait = 2 * time.Minute

// leasePoll is how often Expunge reads the leases while it waits.
const leasePoll = time.Second

// shardCopies are the shard-level stats of indices: each shard's copies,
// with their highest sequence number and the retention leases they know.
type shardCopies struct {
	Indices map[string]struct {
		Shards map[string][]struct {
			SeqNo struct {
				Max int64 `json:"max_seq_no"`
			} `json:"seq_no"`
			RetentionLeases struct {
				Leases []struct {
					ID        string `json:"id"`
					Retaining int64  `json:"retaining_seq_no"`
				} `json:"leases"`
			} `json:"retention_leases"`
		} `json:"shards"`
	} `json:"indices"`
}

func (s *Store) shardCopies(ctx context.Context, names []string) (shardCopies, error) {
	var stats shardCopies
	err := s.client.Do(ctx, "expunge: retention leases", esapi.IndicesStatsRequest{Index: urlIndices(s, names),
		Metric: []string{"docs"}, Level: "shards",
		FilterPath: []string{"indices.*.shards.*.seq_no.max_seq_no", "indices.*.shards.*.retention_leases.leases"}}, &stats)
	return stats, err
}

// waitForLeases waits until every retention lease of names' shards retains
// no operation up to the highest each shard had when it started.
func (s *Store) waitForLeases(ctx context.Context, names []string) error {
	start, err := s.shardCopies(ctx, names)
	if err != nil {
		return err
	}
	passed := map[string]int64{} // index/shard: the operations to pass
	for index, st := range start.Indices {
		for shard, copies := range st.Shards {
			for _, c := range copies {
				passed[index+"/"+shard] = max(passed[index+"/"+shard], c.SeqNo.Max)
			}
		}
	}
	deadline := time.Now().Add(leaseWait)
	for {
		now, err := s.shardCopies(ctx, names)
		if err != nil {
			return err
		}
		behind := leasesBehind(now, passed)
		if behind == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("elastic: expunge: %w: after %s the retention lease %s still retains deleted documents", ports.ErrUnavailable, leaseWait, behind)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("elastic: expunge: %w", ctx.Err())
		case <-time.After(leasePoll):
		}
	}
}

// leasesBehind names a lease of stats that retains an operation up to
// passed's of its shard, "" when none does. A shard gone meanwhile (its
// index purged) holds nothing any more.
func leasesBehind(stats shardCopies, passed map[string]int64) string {
	for index, st := range stats.Indices {
		for shard, copies := range st.Shards {
			target, ok := passed[index+"/"+shard]
			if !ok {
				continue
			}
			for _, c := range copies {
				for _, l := range c.RetentionLeases.Leases {
					if l.Retaining <= target {
						return fmt.Sprintf("%s of %s[%s]", l.ID, index, shard)
					}
				}
			}
		}
	}
	return ""
}

// urlIndices is names as a request names them: one by one, or the pattern
// of every daily index when they are many (Elasticsearch refuses a request
// line over 4 KB).
func urlIndices(s *Store, names []string) []string {
	if len(names) > maxExpungeDays {
		return []string{s.indices.Names().ReadPattern()}
	}
	return names
}
