package app

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// RescrubConfig tunes the re-scrub jobs.
type RescrubConfig struct {
	// Page is how many messages a job reads and rewrites at a time; its
	// cursor is saved after each.
	Page int
	// Lease is how long a replica holds a job between two saves: a job whose
	// replica stopped saving (killed) is taken up by any replica after it.
	Lease time.Duration
}

// Defaults of the re-scrub settings.
const (
	DefaultRescrubPage  = 500
	DefaultRescrubLease = 30 * time.Second
	// maxRescrubPage bounds a page, so that a page's messages fit in memory.
	maxRescrubPage = 10_000
)

// DefaultRescrubConfig is the default of every re-scrub setting.
func DefaultRescrubConfig() RescrubConfig {
	return RescrubConfig{Page: DefaultRescrubPage, Lease: DefaultRescrubLease}
}

// Validate reports the first unusable field as Config.Validate does.
func (c RescrubConfig) Validate() error {
	switch {
	case c.Page < 1 || c.Page > maxRescrubPage:
		return invalidField("Rules.Rescrub.Page", fmt.Sprintf("must be 1 to %d", maxRescrubPage))
	case c.Lease < time.Second:
		return invalidField("Rules.Rescrub.Lease", "must be at least 1s")
	}
	return nil
}

// RescrubRequest is what a re-scrub runs over: the messages created in
// [From, To) of Applications (none: all), in both domains of the account.
type RescrubRequest struct {
	From, To     time.Time
	Applications []string
}

// Rescrubs is the re-scrub use case: an account's current rule set run over
// the messages it stored before, rewriting those it changes, as a job kept
// in the store (ports.RescrubJobStore) that any replica takes up where the
// last one stopped. A job only ever tightens: it applies the privacy rules
// a stored message has not been through (rules.Retroactive) to what is
// stored, and skips a message already written or re-scrubbed under its
// version, so a job resumed after a crash scrubs nothing twice. Each
// replica runs the jobs whose lease has run out, one at a time.
type Rescrubs struct {
	jobs     ports.RescrubJobStore // nil: re-scrubs are off
	rewriter ports.MessageRewriter // nil: re-scrubs are off
	versions ports.RuleSetStore    // nil: re-scrubs are off
	indexer  ports.SubjectIndexer  // nil: no backfill of the subject index
	book     *RuleBook
	clock    ports.Clock
	cfg      RescrubConfig
	settle   time.Duration // how long after its creation a job starts
	owner    string
	log      *zap.Logger
	loop     loop
	wake     chan struct{}
	metrics  RescrubMetrics // nil: not counted
	store    string         // the metrics' store label
}

// RescrubMetrics counts the re-scrub jobs and what they read and rewrote,
// by store (the Go package of the store's adapter: sqlite, mongo, ...). An
// adapter exports it (Prometheus, in httpapi).
type RescrubMetrics interface {
	// ObserveRescrubJob counts a job started (created), done or failed.
	ObserveRescrubJob(store, event string)
	// ObserveRescrubMessages counts messages a job scanned, and of them
	// those its rules changed (rewritten).
	ObserveRescrubMessages(store string, scanned, changed int)
}

// storeLabel names store's adapter in metrics: its type's package, as
// "sqlite" or "mongo" (a test's wrapper counts as the adapter it wraps).
func storeLabel(store any) string {
	t := reflect.TypeOf(store)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.PkgPath() == "" {
		return "unknown"
	}
	return strings.TrimSuffix(path.Base(t.PkgPath()), "_test")
}

// observed has the use case count into metrics (nil: none).
func (s *Rescrubs) observed(metrics RescrubMetrics) {
	if s.rewriter != nil {
		s.metrics, s.store = metrics, storeLabel(s.rewriter)
	}
}

func (s *Rescrubs) countJob(event string) {
	if s.metrics != nil {
		s.metrics.ObserveRescrubJob(s.store, event)
	}
}

// errNoRescrub: the store cannot rewrite messages or keep jobs.
var errNoRescrub = fmt.Errorf("this server's store cannot re-scrub stored messages: %w", ports.ErrNotFound)

// NewRescrubs returns the use case; it is off (every call ports.ErrNotFound)
// unless the three stores are set, and backfills of the subject index are
// off without indexer. A job starts settle after it is created, once every
// replica writes under its version (the rules' poll interval).
func NewRescrubs(jobs ports.RescrubJobStore, rewriter ports.MessageRewriter, versions ports.RuleSetStore, indexer ports.SubjectIndexer,
	book *RuleBook, clock ports.Clock, cfg RescrubConfig, settle time.Duration, log *zap.Logger) *Rescrubs {
	if jobs == nil || rewriter == nil || versions == nil {
		jobs, rewriter, versions, indexer = nil, nil, nil, nil
	}
	return &Rescrubs{jobs: jobs, rewriter: rewriter, versions: versions, indexer: indexer, book: book, clock: clock, cfg: cfg, settle: settle,
		owner: ReplicaName(), log: named(log, "rescrub"), wake: make(chan struct{}, 1)}
}

// Begin starts a job of the principal's account over req with the
// account's current rule set version. Errors: a *domain.ValidationError
// naming the field at fault; ErrRuledByFile; ports.ErrBusy while a job of
// the account runs; ports.ErrForbidden for a portal session;
// ports.ErrNotFound when the server cannot re-scrub.
func (s *Rescrubs) Begin(ctx context.Context, p domain.Principal, req RescrubRequest) (rules.RescrubJob, error) {
	return s.begin(ctx, p, req, rules.KindRescrub)
}

// ErrNoBackfill: the store cannot add to its subject index (HTTP 404).
var ErrNoBackfill = fmt.Errorf("this server's store cannot backfill the subject index: %w", ports.ErrNotFound)

// BeginBackfill starts a job of the principal's account that indexes the
// messages of req's range under the subject keys of the account's current
// rule set (rules.KindSubjects): messages stored before the keys were
// configured. It is a job as a re-scrub is (one at a time per account, the
// same lease and cursor), and errs as Begin does; a rule set without
// subject keys is a *domain.ValidationError naming subjects.
func (s *Rescrubs) BeginBackfill(ctx context.Context, p domain.Principal, req RescrubRequest) (rules.RescrubJob, error) {
	if s.jobs != nil && s.indexer == nil {
		return rules.RescrubJob{}, ErrNoBackfill
	}
	return s.begin(ctx, p, req, rules.KindSubjects)
}

func (s *Rescrubs) begin(ctx context.Context, p domain.Principal, req RescrubRequest, kind rules.RescrubKind) (rules.RescrubJob, error) {
	if err := apiKeyOnly(p); err != nil {
		return rules.RescrubJob{}, err
	}
	if _, ok := s.book.FromFile(p.Account); ok {
		return rules.RescrubJob{}, ErrRuledByFile
	}
	if s.jobs == nil {
		return rules.RescrubJob{}, errNoRescrub
	}
	if err := rules.ValidateRescrub(req.From, req.To, req.Applications); err != nil {
		return rules.RescrubJob{}, err
	}
	current, err := s.versions.RuleSet(ctx, p.Account)
	if err != nil {
		return rules.RescrubJob{}, fmt.Errorf("rule set: %w", err)
	}
	switch {
	case current.Number == 0:
		return rules.RescrubJob{}, &domain.ValidationError{Message: "the account has no rule set to re-scrub with: save one first (PUT /v1/rules)"}
	case kind == rules.KindSubjects && len(current.Rules.Subjects) == 0:
		return rules.RescrubJob{}, &domain.ValidationError{Message: "the account's rule set has no subject keys to index by",
			Fields: []domain.FieldError{{Field: "subjects", Message: "the rule set names none: add them first (PUT /v1/rules)"}}}
	}
	now := domain.Micro(s.clock.Now())
	job, err := s.jobs.CreateRescrubJob(ctx, rules.RescrubJob{Account: p.Account, Kind: kind, Version: current.Number,
		From: domain.Micro(req.From), To: domain.Micro(req.To), Applications: req.Applications, KeyID: p.KeyID,
		CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return rules.RescrubJob{}, fmt.Errorf("start a job: %w", err)
	}
	s.countJob("started")
	s.Wake()
	return job, nil
}

// Job returns the account's job number (ports.ErrNotFound when none).
func (s *Rescrubs) Job(ctx context.Context, p domain.Principal, number int64) (rules.RescrubJob, error) {
	if err := apiKeyOnly(p); err != nil {
		return rules.RescrubJob{}, err
	}
	if s.jobs == nil {
		return rules.RescrubJob{}, errNoRescrub
	}
	return s.jobs.RescrubJob(ctx, p.Account, number)
}

// Jobs returns the account's latest jobs, newest first, at most limit.
func (s *Rescrubs) Jobs(ctx context.Context, p domain.Principal, limit int) ([]rules.RescrubJob, error) {
	if err := apiKeyOnly(p); err != nil {
		return nil, err
	}
	if s.jobs == nil {
		return nil, nil
	}
	return s.jobs.RescrubJobs(ctx, p.Account, limit)
}

// Wake makes the runner look for jobs now.
func (s *Rescrubs) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the jobs in the background until Stop: those of this replica,
// new ones, and those whose replica's lease has run out.
func (s *Rescrubs) Start() {
	if s.jobs == nil {
		return
	}
	s.loop.start(func(ctx context.Context) {
		ticker := time.NewTicker(s.cfg.Lease / 3)
		defer ticker.Stop()
		for {
			next := s.runDue(ctx)
			if next <= 0 {
				next = s.cfg.Lease
			}
			timer := time.NewTimer(next)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-ticker.C:
			case <-s.wake:
			case <-timer.C:
			}
			timer.Stop()
		}
	})
}

// Stop ends the runner, which gives its job's lease back, waiting for it or
// for ctx.
func (s *Rescrubs) Stop(ctx context.Context) error { return s.loop.stop(ctx) }

// runDue runs every running job that is this replica's or whose lease has
// run out, and returns how long until a job too new to start may start (0:
// none waits).
func (s *Rescrubs) runDue(ctx context.Context) time.Duration {
	running, err := s.jobs.RunningRescrubJobs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading the re-scrub jobs failed", zap.Error(err))
		}
		return 0
	}
	var wait time.Duration
	for _, job := range running {
		now := s.clock.Now()
		switch {
		case ctx.Err() != nil:
			return 0
		case job.Owner != s.owner && now.Before(job.LeaseUntil):
			continue // another replica's
		case now.Before(job.CreatedAt.Add(s.settle)):
			wait = max(wait, job.CreatedAt.Add(s.settle).Sub(now))
			continue
		}
		s.run(ctx, job)
	}
	return wait
}

// errLostJob: another replica took the job over (its lease ran out).
var errLostJob = errors.New("another replica took the job over")

// run takes job and runs it until it is done, it fails, ctx ends, or a
// store error stops it for now (it is taken up again on a later look).
func (s *Rescrubs) run(ctx context.Context, job rules.RescrubJob) {
	log := s.log.With(zap.String("account", job.Account), zap.Int64("job", job.Number), zap.Int64("version", job.Version))
	job.Owner = s.owner
	job, err := s.save(ctx, job, true)
	if err != nil {
		if !errors.Is(err, errLostJob) && ctx.Err() == nil {
			log.Warn("taking up a re-scrub failed", zap.Error(err))
		}
		return
	}
	if job.Kind == rules.KindSubjects {
		err = s.scan(ctx, &job, newBackfill(s, job).index)
	} else {
		err = s.scan(ctx, &job, newRetroRules(s, job).rewrite)
		if err == nil {
			err = s.rewriter.ExpungeRewritten(ctx, job.From, job.To)
		}
	}
	switch {
	case errors.Is(err, errLostJob):
		return
	case ctx.Err() != nil:
		// Stopping: the lease goes back, so that a restart resumes at once.
		release, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.save(release, job, false)
		return
	case errors.Is(err, errRuleSetGone):
		job.State, job.Error, job.FinishedAt = rules.RescrubFailed, err.Error(), domain.Micro(s.clock.Now())
		log.Error("a re-scrub failed", zap.Error(err))
		s.countJob("failed")
	case err != nil:
		job.Error = err.Error()
		log.Warn("a re-scrub stopped for now; it resumes on a later look", zap.Error(err))
	default:
		job.State, job.Error, job.FinishedAt = rules.RescrubDone, "", domain.Micro(s.clock.Now())
		s.countJob("done")
		log.Info("a re-scrub is done", zap.Int64("scanned", job.Scanned), zap.Int64("changed", job.Changed), zap.Int64("skipped", job.Skipped))
	}
	// A job stopped for now keeps its lease: this replica takes it up again.
	if _, err := s.save(ctx, job, job.State == rules.RescrubRunning); err != nil && !errors.Is(err, errLostJob) && ctx.Err() == nil {
		log.Warn("saving a re-scrub failed", zap.Error(err))
	}
}

// save saves job, its lease renewed when hold is set, given back
// otherwise, and returns it as saved.
func (s *Rescrubs) save(ctx context.Context, job rules.RescrubJob, hold bool) (rules.RescrubJob, error) {
	now := domain.Micro(s.clock.Now())
	job.UpdatedAt, job.LeaseUntil = now, time.Time{}
	if hold {
		job.LeaseUntil = now.Add(s.cfg.Lease)
	}
	saved, err := s.jobs.UpdateRescrubJob(ctx, job)
	if errors.Is(err, ports.ErrStale) {
		return job, errLostJob
	}
	return saved, err
}

// scan reads the job's range from its cursor, domain by domain, a page at
// a time, hands each page to do (which counts into job) and saves the
// cursor after each page.
func (s *Rescrubs) scan(ctx context.Context, job *rules.RescrubJob, do func(context.Context, *rules.RescrubJob, []domain.Message) error) error {
	start := max(slices.Index(rules.RescrubDomains, job.Cursor.Domain), 0)
	for _, d := range rules.RescrubDomains[start:] {
		if job.Cursor.Domain != d {
			job.Cursor = rules.RescrubCursor{Domain: d}
		}
		for {
			q := ports.RewriteScan{Scope: domain.Scope{Account: job.Account, Domain: d}, From: job.From, To: job.To,
				Names: job.Applications, Limit: s.cfg.Page}
			if job.Cursor.ID != "" {
				q.After = &domain.Cursor{CreatedAt: job.Cursor.CreatedAt, ID: job.Cursor.ID}
			}
			page, err := s.rewriter.ScanForRewrite(ctx, q)
			if err != nil {
				return fmt.Errorf("read the stored messages: %w", err)
			}
			if len(page) == 0 {
				break
			}
			if err := do(ctx, job, page); err != nil {
				return err
			}
			last := page[len(page)-1]
			job.Cursor = rules.RescrubCursor{Domain: d, CreatedAt: last.CreatedAt, ID: last.ID}
			saved, err := s.save(ctx, *job, true)
			if err != nil {
				return err
			}
			*job = saved
		}
	}
	return nil
}

// errRuleSetGone: the job's rule set version cannot be read back.
var errRuleSetGone = errors.New("the job's rule set version is not in the store")

// retroRules are the compiled rules a job runs over a message, by the
// version its stored form went through and whether its source is known
// (rules.Retroactive), compiled once each.
type retroRules struct {
	s        *Rescrubs
	job      rules.RescrubJob
	versions map[int64]rules.RuleSet
	compiled map[retroKey]*ActiveRules
}

type retroKey struct {
	applied     int64
	sourceKnown bool
}

func newRetroRules(s *Rescrubs, job rules.RescrubJob) *retroRules {
	return &retroRules{s: s, job: job, versions: map[int64]rules.RuleSet{}, compiled: map[retroKey]*ActiveRules{}}
}

// version reads the account's rule set version n (0: none).
func (r *retroRules) version(ctx context.Context, n int64) (rules.RuleSet, error) {
	if n == 0 {
		return rules.RuleSet{}, nil
	}
	if rs, ok := r.versions[n]; ok {
		return rs, nil
	}
	vs, err := r.s.versions.RuleSetHistory(ctx, r.job.Account, n+1, 1)
	if err != nil {
		return rules.RuleSet{}, fmt.Errorf("read rule set version %d: %w", n, err)
	}
	if len(vs) == 0 || vs[0].Number != n {
		return rules.RuleSet{}, fmt.Errorf("version %d: %w", n, errRuleSetGone)
	}
	r.versions[n] = vs[0].Rules
	return vs[0].Rules, nil
}

// forMessage is what the job runs over a message stored under applied.
func (r *retroRules) forMessage(ctx context.Context, applied int64, sourceKnown bool) (*ActiveRules, error) {
	key := retroKey{applied, sourceKnown}
	if a, ok := r.compiled[key]; ok {
		return a, nil
	}
	current, err := r.version(ctx, r.job.Version)
	if err != nil {
		return nil, err
	}
	before, err := r.version(ctx, applied)
	if err != nil {
		return nil, err
	}
	retro := rules.Retroactive(current, before, sourceKnown)
	var a *ActiveRules
	if len(retro.Privacy) > 0 {
		if a, err = r.s.book.compile(rules.Version{Account: r.job.Account, Number: r.job.Version, Rules: retro}); err != nil {
			return nil, fmt.Errorf("version %d: %w", r.job.Version, errors.Join(errRuleSetGone, err))
		}
	}
	r.compiled[key] = a
	return a, nil
}

// rewrite re-scrubs page and rewrites the messages it changed.
func (r *retroRules) rewrite(ctx context.Context, job *rules.RescrubJob, page []domain.Message) error {
	changed, err := r.rescrub(ctx, job, page)
	if err != nil {
		return err
	}
	if err := r.s.rewriter.RewriteMessages(ctx, changed); err != nil {
		return fmt.Errorf("rewrite %d messages: %w", len(changed), err)
	}
	if r.s.metrics != nil {
		r.s.metrics.ObserveRescrubMessages(r.s.store, len(page), len(changed))
	}
	return nil
}

// backfill indexes a job's messages under the subject keys of its version.
type backfill struct {
	s    *Rescrubs
	job  rules.RescrubJob
	keys *ActiveRules // compiled at the first page
}

func newBackfill(s *Rescrubs, job rules.RescrubJob) *backfill { return &backfill{s: s, job: job} }

// index adds page's messages' subject hashes to the store's subject index,
// as their stored form gives them: a value a privacy rule changed before
// it was stored is indexed as it was stored, not as it was captured.
func (b *backfill) index(ctx context.Context, job *rules.RescrubJob, page []domain.Message) error {
	if b.keys == nil {
		vs, err := b.s.versions.RuleSetHistory(ctx, job.Account, job.Version+1, 1)
		if err != nil {
			return fmt.Errorf("read rule set version %d: %w", job.Version, err)
		}
		if len(vs) == 0 || vs[0].Number != job.Version {
			return fmt.Errorf("version %d: %w", job.Version, errRuleSetGone)
		}
		keys := rules.Version{Account: job.Account, Number: job.Version, Rules: rules.RuleSet{Subjects: vs[0].Rules.Subjects}}
		if b.keys, err = b.s.book.compile(keys); err != nil {
			return fmt.Errorf("version %d: %w", job.Version, errors.Join(errRuleSetGone, err))
		}
	}
	var entries []ports.SubjectEntry
	for i := range page {
		m := &page[i]
		job.Scanned++
		hashes := b.keys.compiled.Subjects(m)
		if len(hashes) == 0 {
			job.Skipped++
			continue
		}
		entries = append(entries, ports.SubjectEntry{Ref: ports.SubjectRef{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt}, Hashes: hashes})
	}
	n, err := b.s.indexer.IndexSubjects(ctx, job.Account, entries)
	if err != nil {
		return fmt.Errorf("index %d messages' subjects: %w", len(entries), err)
	}
	job.Changed += n
	return nil
}

// rescrub applies the job's rules to page's messages, counting them into
// job, and returns those they changed, each recording the job's version.
func (r *retroRules) rescrub(ctx context.Context, job *rules.RescrubJob, page []domain.Message) ([]domain.Message, error) {
	var changed []domain.Message
	for i := range page {
		m := &page[i]
		job.Scanned++
		applied := m.Rules.Applied()
		if applied >= job.Version {
			job.Skipped++
			continue
		}
		a, err := r.forMessage(ctx, applied, m.Rules.Source != "")
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue
		}
		out := a.Apply(m, rules.Source(m.Rules.Source))
		if len(out.Changes) == 0 && len(out.Withheld) == 0 {
			continue
		}
		m.Rules.AddChanges(out.Changes)
		m.Rules.Rescrubbed = job.Version
		changed = append(changed, *m)
		job.Changed++
	}
	return changed, nil
}
