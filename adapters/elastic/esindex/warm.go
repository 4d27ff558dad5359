package esindex

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/elastic/esclient"
	"github.com/reqlog/reqlog/adapters/elastic/esdoc"
	"github.com/reqlog/reqlog/domain"
)

// On a freshly started cluster the first writes are slow although every
// primary is active: each node's JVM still interprets (then compiles) the
// bulk, indexing and replication code. On the issue-22 cluster (three 384 MiB
// nodes on two shared cores) bulks of 100 KB took over a second, the group
// committer's batches grew to 500 messages, and such a batch took 2 to 6 s:
// requests whose batch had started outlived a client's 3 s although nothing
// had failed. So before the service answers, start-up makes the day's indices'
// copies active and runs the indexing path on every node with documents of the
// messages' shape, in an index no reader's pattern matches, which it deletes.

// warmIndexSuffix names warm-up indices: "<prefix>-warmup-<random>". They do
// not match ReadPattern ("<prefix>-messages-*"), and are hidden, so no
// wildcard read of another deployment matches them either.
const warmIndexSuffix = "-warmup-"

// Shape of the warm-up: rounds of max(data nodes, warmWriters) bulk requests
// at once, as the group committer's writers send them, each of warmBatch
// documents with bodies of about warmBodyBytes (about 12 KB a document, as the
// load tool's messages). Small rounds let the warm-up stop soon after the
// cluster is warm.
const (
	warmBatch = 25
	// warmWriters is the least number of bulk requests of a round: the group
	// committer's writers (app.DefaultGroupWriters).
	warmWriters   = 4
	warmBodyBytes = 3 << 10
	// warmSettledRounds rounds in a row within warmFastRound end the warm-up
	// before its budget: a round's 100 documents (1.2 MB) at 3 MB/s.
	warmSettledRounds = 5
	// 1/warmGreenShare of the warm-up's budget may go to waiting for the
	// day's replicas; a cluster that cannot allocate them is not waited for
	// longer.
	warmGreenShare = 2
)

// warmFastRound is a var for the tests, which make the warm-up never settle.
var warmFastRound = 400 * time.Millisecond

// warmRound is what one round of the warm-up took, for the log and tests.
type warmRound struct {
	Took time.Duration
	Docs int
}

// WarmReport is what PrepareWrites did.
type WarmReport struct {
	CopiesActive time.Duration // waiting for the day's indices' copies
	CopiesErr    error         // nil when every copy the cluster can hold is active
	Rounds       []warmRound
	Took         time.Duration // the whole warm-up, index creation and deletion included
	Settled      bool          // the last rounds were fast; false: the budget ran out first
}

// PrepareWrites makes the store ready for the day's writes before the service
// answers: it creates the indices of now's UTC day and the next (createDays),
// waits until their replicas are active where the cluster can hold them, and
// warms the indexing path (warmUp), all within Config.WarmUp and ctx. Nothing
// it does is fatal: the cluster takes writes without it, only slower at first.
func (s *Indices) PrepareWrites(ctx context.Context, now time.Time) (WarmReport, error) {
	var report WarmReport
	if err := s.createDays(ctx, now); err != nil {
		return report, err
	}
	if s.cfg.WarmUp <= 0 {
		return report, nil
	}
	began := time.Now()
	// A request cut short by the budget must not make the store's client
	// leave its node out (esclient.Client.WithOwnConnections).
	client, err := s.client.WithOwnConnections()
	if err != nil {
		return report, err
	}
	defer func() { _ = client.Close(context.WithoutCancel(ctx)) }()
	warm := *s
	warm.client = client
	allowed := s.warmBudget(ctx)
	budget, cancel := context.WithTimeout(ctx, allowed)
	defer cancel()
	report.CopiesErr = warm.awaitCopies(budget, allowed/warmGreenShare, now, now.AddDate(0, 0, 1))
	report.CopiesActive = time.Since(began)
	err = warm.warmUp(budget, &report)
	report.Took = time.Since(began)
	if budget.Err() != nil && ctx.Err() == nil {
		err = nil // the budget ran out: as warm as it gets for now
	}
	return report, err
}

// warmBudget is Config.WarmUp, or half of what is left of ctx if less: the
// rest of the service must start too.
func (s *Indices) warmBudget(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return min(s.cfg.WarmUp, time.Until(deadline)/2)
	}
	return s.cfg.WarmUp
}

// awaitCopies waits at most wait until the indices of days are green: every
// copy the cluster can hold (auto_expand_replicas) started, so the first
// writes do not wait for a replica's recovery and have a copy to fail over to.
func (s *Indices) awaitCopies(ctx context.Context, wait time.Duration, days ...time.Time) error {
	indices := make([]string, len(days))
	for i, day := range days {
		indices[i] = s.names.For(day)
	}
	return s.awaitGreenWithin(ctx, wait, indices...)
}

// awaitGreen waits until indices are green, as long as ctx allows.
func (s *Indices) awaitGreen(ctx context.Context, indices ...string) error {
	wait := s.client.RequestTimeout()
	if deadline, ok := ctx.Deadline(); ok {
		wait = time.Until(deadline)
	}
	return s.awaitGreenWithin(ctx, wait, indices...)
}

func (s *Indices) awaitGreenWithin(ctx context.Context, wait time.Duration, indices ...string) error {
	var health struct {
		Status   string `json:"status"`
		TimedOut bool   `json:"timed_out"`
	}
	if err := s.client.Do(ctx, "wait for the indices' copies", esapi.ClusterHealthRequest{
		Index: indices, WaitForStatus: "green", Timeout: max(wait, time.Millisecond),
	}, &health); err != nil {
		return err
	}
	if health.TimedOut || health.Status != "green" {
		return fmt.Errorf("elastic: %s still %s after %s", strings.Join(indices, ", "), health.Status, wait.Round(time.Millisecond))
	}
	return nil
}

// warmUp creates a hidden index with a primary per data node and a copy on
// every node, writes rounds of documents into it until warmSettledRounds
// rounds in a row were fast or ctx ends, and deletes it.
func (s *Indices) warmUp(ctx context.Context, report *WarmReport) error {
	var cluster struct {
		DataNodes int `json:"number_of_data_nodes"`
	}
	if err := s.client.Do(ctx, "count the data nodes", esapi.ClusterHealthRequest{}, &cluster); err != nil {
		return err
	}
	nodes := max(cluster.DataNodes, 1)
	// The index is created and deleted outside ctx: a creation cut short by
	// the budget could still complete on the cluster, and the index must not
	// outlive the start-up.
	settle, cancel := s.client.Bounded(context.WithoutCancel(ctx))
	defer cancel()
	s.dropStaleWarmIndices(settle, time.Now())
	index := s.newWarmIndexName()
	defer func() {
		_ = s.client.Do(settle, "delete the warm-up index", esapi.IndicesDeleteRequest{Index: []string{index}}, nil)
	}()
	if err := s.createWarmIndex(settle, index, nodes); err != nil {
		return err
	}
	if err := s.awaitGreen(ctx, index); err != nil {
		return err
	}
	docs := newWarmDocs(index)
	bulks := max(nodes, warmWriters)
	fast := 0
	for fast < warmSettledRounds {
		began := time.Now()
		if err := s.warmRound(ctx, docs, bulks); err != nil {
			return err
		}
		took := time.Since(began)
		report.Rounds = append(report.Rounds, warmRound{Took: took, Docs: bulks * warmBatch})
		if took <= warmFastRound {
			fast++
		} else {
			fast = 0
		}
	}
	report.Settled = true
	return nil
}

// newWarmIndexName is a name of its own for this warm-up: replicas of the
// service starting at once must not write into, or delete, each other's.
func (s *Indices) newWarmIndexName() string {
	var suffix [6]byte
	_, _ = crand.Read(suffix[:])
	return s.cfg.Prefix + warmIndexSuffix + hex.EncodeToString(suffix[:])
}

// staleWarmIndex is the age past which a warm-up index is a leftover of a
// start-up that died before deleting it: a warm-up lasts at most WarmUp.
const staleWarmIndex = time.Hour

// dropStaleWarmIndices deletes the warm-up indices created staleWarmIndex
// before now or earlier: left by start-ups that died during their warm-up.
// Failing to is no reason to stop.
func (s *Indices) dropStaleWarmIndices(ctx context.Context, now time.Time) {
	var indices []struct {
		Index        string `json:"index"`
		CreationDate string `json:"creation.date"`
	}
	if err := s.client.Do(ctx, "list warm-up indices", esapi.CatIndicesRequest{
		Index: []string{s.cfg.Prefix + warmIndexSuffix + "*"}, ExpandWildcards: "all",
		H: []string{"index", "creation.date"}, Format: "json",
	}, &indices); err != nil {
		return
	}
	var stale []string
	for _, i := range indices {
		created, err := strconv.ParseInt(i.CreationDate, 10, 64)
		if err == nil && time.UnixMilli(created).Before(now.Add(-staleWarmIndex)) {
			stale = append(stale, i.Index)
		}
	}
	if len(stale) > 0 {
		_ = s.client.Do(ctx, "delete stale warm-up indices", esapi.IndicesDeleteRequest{Index: stale}, nil)
	}
}

// createWarmIndex creates index with the daily indices' mappings and sort,
// shards primaries and a replica on every other node.
func (s *Indices) createWarmIndex(ctx context.Context, index string, shards int) error {
	template := newIndexTemplate(s.cfg).Template
	settings := template.Settings["index"].(map[string]any)
	warm := map[string]any{"hidden": true, "number_of_shards": shards, "auto_expand_replicas": "0-all"}
	for _, key := range []string{"refresh_interval", "sort.field", "sort.order"} {
		warm[key] = settings[key]
	}
	body, err := esclient.JSONBody(map[string]any{"settings": map[string]any{"index": warm}, "mappings": template.Mappings})
	if err != nil {
		return err
	}
	return s.client.Do(ctx, "create the warm-up index", esapi.IndicesCreateRequest{Index: index, Body: body}, nil)
}

// warmRound sends bulks bulk requests of warmBatch documents at once (the
// client spreads them over the nodes) and checks that every document was
// created.
func (s *Indices) warmRound(ctx context.Context, docs *warmDocs, bulks int) error {
	errs := make([]error, bulks)
	var wg sync.WaitGroup
	for i := range bulks {
		body, targets := docs.bulk(warmBatch)
		wg.Go(func() {
			errs[i] = s.client.Creates(ctx, "warm up", body, targets, 0)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// warmDocs makes the warm-up's documents: messages of the shape the service
// stores (headers, JSON bodies of varied words, every field the mappings
// index), with ids of their own.
type warmDocs struct {
	index string
	rng   *rand.Rand
	seq   int
	now   time.Time
}

func newWarmDocs(index string) *warmDocs {
	return &warmDocs{index: index, rng: rand.New(rand.NewPCG(1, 2)), now: time.Now().UTC().Truncate(time.Microsecond)}
}

// warmWords are the bodies' vocabulary.
var warmWords = strings.Fields(`order customer item price quantity total currency address city country
	street zip status pending shipped delivered token session user account plan coupon discount
	created updated id name email phone description category tag warehouse carrier tracking`)

// bulk returns the body of a bulk request creating n new documents, and
// where they go.
func (d *warmDocs) bulk(n int) ([]byte, []esclient.Target) {
	targets := make([]esclient.Target, n)
	var body []byte
	for i := range targets {
		m := d.message()
		targets[i] = esclient.Target{Index: d.index, ID: m.ID}
		body = esdoc.AppendCreate(body, d.index, false, m)
	}
	return body, targets
}

func (d *warmDocs) message() domain.Message {
	d.seq++
	var id [16]byte
	for i := range id {
		id[i] = byte(d.rng.Uint32())
	}
	return domain.Message{
		ID:         fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:]),
		Reference:  fmt.Sprintf("msg_warm%08d", d.seq),
		Account:    "reqlog-warm-up",
		Domain:     domain.DomainTest,
		Name:       "warm-up",
		IPAddress:  "127.0.0.1",
		Method:     []string{"GET", "POST", "PUT", "DELETE"}[d.seq%4],
		Path:       fmt.Sprintf("/v1/%s/%d", warmWords[d.rng.IntN(len(warmWords))], d.rng.IntN(1_000_000)),
		StatusCode: []int{200, 201, 404, 500}[d.seq%4],
		Request: domain.Content{
			Header:      domain.Header{"Content-Type": {"application/json"}, "User-Agent": {"reqlog-warm-up"}},
			Body:        d.body(),
			ContentType: "application/json",
		},
		Response: domain.Content{
			Header:      domain.Header{"Content-Type": {"application/json"}},
			Body:        d.body(),
			ContentType: "application/json",
		},
		Duration:    time.Duration(d.rng.IntN(1_000_000)) * time.Microsecond,
		HasDuration: true,
		CreatedAt:   d.now,
		UpdatedAt:   d.now,
		VisibleAt:   d.now,
		ExpiresAt:   d.now.Add(time.Hour),
	}
}

// body is a JSON object of about warmBodyBytes of varied words and numbers.
func (d *warmDocs) body() string {
	var b strings.Builder
	b.WriteByte('{')
	for b.Len() < warmBodyBytes {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s_%d":"%s %s %d"`, warmWords[d.rng.IntN(len(warmWords))], d.rng.IntN(100),
			warmWords[d.rng.IntN(len(warmWords))], warmWords[d.rng.IntN(len(warmWords))], d.rng.IntN(1_000_000))
	}
	b.WriteByte('}')
	return b.String()
}

// LogWarmUp logs what PrepareWrites did.
func LogWarmUp(log *zap.Logger, r WarmReport) {
	if r.CopiesErr != nil {
		log.Warn("the daily indices' replicas are not all active; writing anyway", zap.Error(r.CopiesErr))
	}
	if len(r.Rounds) == 0 {
		return
	}
	took := make([]time.Duration, len(r.Rounds))
	for i, round := range r.Rounds {
		took[i] = round.Took.Round(time.Millisecond)
	}
	log.Info("indexing path warmed up", zap.Duration("took", r.Took.Round(time.Millisecond)),
		zap.Duration("waiting_for_copies", r.CopiesActive.Round(time.Millisecond)),
		zap.Bool("settled", r.Settled), zap.Int("documents_per_round", r.Rounds[0].Docs), zap.Durations("rounds", took))
}
