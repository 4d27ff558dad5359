package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// Defaults of the erasures.
const (
	// DefaultErasureWithin bounds how long after an erasure its messages are
	// physically deleted.
	DefaultErasureWithin = 24 * time.Hour
	// DefaultErasureStep is how many messages one step hides or deletes.
	DefaultErasureStep = 500
)

// ErasureConfig configures the erasures (docs/erasure.md).
type ErasureConfig struct {
	// Within bounds how long after an erasure its messages are physically
	// deleted: the erasure job runs every Within/24 (0: DefaultErasureWithin).
	Within time.Duration
	// Step is how many messages one step of the job hides or deletes, each
	// step a write of its own (0: DefaultErasureStep).
	Step int
}

// DefaultErasureConfig is the default of every erasure setting.
func DefaultErasureConfig() ErasureConfig {
	return ErasureConfig{Within: DefaultErasureWithin, Step: DefaultErasureStep}
}

// Validate reports the first unusable field as Config.Validate does.
func (c ErasureConfig) Validate() error {
	switch {
	case c.Within < 0 || c.Within > 0 && c.Within < time.Minute:
		return invalidField("Erasure.Within", "must be at least 1m")
	case c.Step < 0 || c.Step > 10000:
		return invalidField("Erasure.Step", "must be 1 to 10000")
	}
	return nil
}

func (c ErasureConfig) withDefaults() ErasureConfig {
	if c.Within == 0 {
		c.Within = DefaultErasureWithin
	}
	if c.Step == 0 {
		c.Step = DefaultErasureStep
	}
	return c
}

// period is how often the job deletes what erasures hid.
func (c ErasureConfig) period() time.Duration { return c.Within / 24 }

// Errors of the erasures, besides a *domain.ValidationError.
var (
	// ErrNoErasures: the server cannot erase (its store keeps no subject
	// index or no journal, or there is no hash key) (HTTP 404).
	ErrNoErasures     = errors.New("erasures are not available on this server")
	errErasureKeyOnly = fmt.Errorf("erasures are asked and read with an API key, not a portal session: %w", ports.ErrForbidden)
)

// Erasures is the erasure use case (docs/erasure.md): erase an end user's
// messages by subject values (hidden at once, physically deleted by the
// ErasureJob within ErasureConfig.Within), read an erasure's receipt and the
// account's audit list, count what an erasure would erase, and list a
// subject's messages (an access request). Only an API key may call it.
type Erasures struct {
	eraser  ports.Eraser         // nil: the store cannot
	journal ports.ErasureJournal // nil: none
	reader  *Reader
	// hashKeys are the hash key, then the one before its rotation if
	// any: subjects are looked up under both.
	hashKeys [][]byte
	clock    ports.Clock
	step     int
	forget   *forgetting
	// tombstones leave a pending erasure's messages out of every read
	// until job has hidden them.
	tombstones *tombstones
	job        *ErasureJob
}

func newErasures(eraser ports.Eraser, journal ports.ErasureJournal, reader *Reader, keys RulesConfig, clock ports.Clock, cfg ErasureConfig, forget *forgetting, job *ErasureJob) *Erasures {
	var hashKeys [][]byte
	if len(keys.HashKey) > 0 {
		hashKeys = append(hashKeys, keys.HashKey)
		if len(keys.PreviousHashKey) > 0 {
			hashKeys = append(hashKeys, keys.PreviousHashKey)
		}
	}
	return &Erasures{eraser: eraser, journal: journal, reader: reader, hashKeys: hashKeys, clock: clock, step: cfg.withDefaults().Step, forget: forget,
		tombstones: reader.reads.tombstones, job: job}
}

// Available reports, for p, whether erasures can be asked: an error
// wrapping ports.ErrForbidden for a portal session, ErrNoErasures when the
// server cannot.
func (u *Erasures) Available(p domain.Principal) error {
	if p.ReadOnly || p.Name != "" {
		return errErasureKeyOnly
	}
	switch {
	case u.eraser == nil:
		return fmt.Errorf("%w: the store keeps no subject index", ErrNoErasures)
	case u.journal == nil:
		return fmt.Errorf("%w: the store keeps no journal of erasures", ErrNoErasures)
	case len(u.hashKeys) == 0:
		return fmt.Errorf("%w: no hash key (REQLOG_RULES_HASH_KEY) to find subjects by", ErrNoErasures)
	}
	return nil
}

// Erase journals an erasure of req's subjects in p's account, pending, and
// returns it once every read on every replica leaves its messages out (the
// tombstones' lease after the journal write; the message it was asked by,
// one, hidden meanwhile), whatever their number: the ErasureJob hides them
// a step at a time in the background, journals the erasure hidden, then
// deletes them. A dry run only counts (Count). Errors: those of Available,
// a *domain.ValidationError naming the request's fields,
// ports.ErrUnavailable (wrapped; once the erasure is journaled, the job
// hides it whatever the error).
func (u *Erasures) Erase(ctx context.Context, p domain.Principal, req erasure.Request) (erasure.Erasure, error) {
	if err := u.Available(p); err != nil {
		return erasure.Erasure{}, err
	}
	if err := req.Validate(); err != nil {
		return erasure.Erasure{}, err
	}
	id, err := erasure.NewID()
	if err != nil {
		return erasure.Erasure{}, err
	}
	e := erasure.Erasure{ID: id, Account: p.Account, KeyID: p.KeyID, Reason: req.Reason, State: erasure.StatePending,
		Future: req.Future, Hashes: req.Hashes(u.hashKeys...), Subjects: len(req.Subjects), At: domain.Micro(u.clock.Now())}
	if req.MessageID != "" {
		if err := u.byMessage(ctx, &e, req.MessageID); err != nil {
			return erasure.Erasure{}, err
		}
	}
	if err := u.journal.SaveErasure(ctx, e); err != nil {
		return erasure.Erasure{}, fmt.Errorf("journal the erasure: %w", err)
	}
	u.forget.add(e)
	u.tombstones.add(e)
	u.job.wake()
	if m := e.Message; m != nil {
		// One message, which may have no subject to leave it out by.
		ref := ports.SubjectRef{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt, Partition: m.Partition}
		if _, err := u.eraser.Hide(ctx, e.Account, []ports.SubjectRef{ref}); err != nil {
			return e, fmt.Errorf("hide the message asked by: %w", err)
		}
	}
	if err := u.tombstones.waitLease(ctx); err != nil {
		return e, err
	}
	return e, nil
}

// ErrMessageNotFound: an erasure names by message id no message of the
// account (HTTP 404, whether another account has it or none does).
var ErrMessageNotFound = fmt.Errorf("no message of the account has the message_id: %w", ports.ErrNotFound)

// byMessage adds to e the message id of its account and the subjects the
// subject index holds for it.
func (u *Erasures) byMessage(ctx context.Context, e *erasure.Erasure, id string) error {
	ref, hashes, err := u.eraser.MessageSubjects(ctx, e.Account, id)
	if errors.Is(err, ports.ErrNotFound) {
		return ErrMessageNotFound
	}
	if err != nil {
		return fmt.Errorf("the message's subjects: %w", err)
	}
	e.Message = &erasure.MessageRef{ID: ref.ID, Domain: ref.Domain, CreatedAt: ref.CreatedAt, Partition: ref.Partition}
	e.Hashes = slices.Compact(slices.Sorted(slices.Values(append(e.Hashes, hashes...))))
	return nil
}

// hide hides every message e erases, step messages at a time, and journals
// it hidden once the store's read lag has passed: a hide is seen by every
// read only after it (ports.Eraser.Hide), and journaled hidden the
// erasure's tombstone retires, so that until then the tombstone leaves its
// messages out.
func (j *ErasureJob) hide(ctx context.Context, e *erasure.Erasure) error {
	e.Counts.Hidden, e.Partitions = 0, nil // counted again from none: a pending erasure's hide may have begun before
	err := eachStep(ctx, j.eraser, *e, j.cfg.Step, func(refs []ports.SubjectRef) error {
		if err := j.holdLease(ctx); err != nil {
			return err
		}
		return byPartition(refs, func(partition string, refs []ports.SubjectRef) error {
			n, err := j.eraser.Hide(ctx, e.Account, refs)
			e.Count(partition, n, erasure.HiddenCount)
			if err != nil {
				return fmt.Errorf("hide the subject's messages: %w", err)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, j.readLag); err != nil {
		return err
	}
	e.State, e.HiddenAt = erasure.StateHidden, domain.Micro(j.clock.Now())
	if err := j.save(ctx, *e); err != nil {
		return fmt.Errorf("journal the erasure hidden: %w", err)
	}
	return nil
}

// eachStep calls do with the refs of e's message (when it was asked by
// one), then with those of its subjects' messages, step at a time, each
// once, until the index finds no more; do may delete what it is given.
func eachStep(ctx context.Context, eraser ports.Eraser, e erasure.Erasure, step int, do func([]ports.SubjectRef) error) error {
	var asked string
	if m := e.Message; m != nil {
		asked = m.ID
		if err := do([]ports.SubjectRef{{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt, Partition: m.Partition}}); err != nil {
			return err
		}
	}
	if len(e.Hashes) == 0 {
		return nil
	}
	q := subjectQuery(e, step)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		refs, err := eraser.SubjectMessages(ctx, q)
		if err != nil {
			return fmt.Errorf("find the subject's messages: %w", err)
		}
		if len(refs) == 0 {
			return nil
		}
		full := len(refs) == step
		after := refs[len(refs)-1].Cursor()
		refs = slices.DeleteFunc(refs, func(r ports.SubjectRef) bool { return r.ID == asked })
		if err := do(refs); err != nil {
			return err
		}
		if !full {
			return nil
		}
		q.After = &after
	}
}

// byPartition calls do with refs' partitions, in name order, each with its
// refs: an erasure counts per partition what the store says it did there.
func byPartition(refs []ports.SubjectRef, do func(partition string, refs []ports.SubjectRef) error) error {
	parts := map[string][]ports.SubjectRef{}
	for _, r := range refs {
		parts[r.Partition] = append(parts[r.Partition], r)
	}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		if err := do(name, parts[name]); err != nil {
			return err
		}
	}
	return nil
}

// subjectQuery selects the messages e erases, step at a time.
func subjectQuery(e erasure.Erasure, step int) ports.SubjectQuery {
	return ports.SubjectQuery{Account: e.Account, Hashes: e.Hashes, CreatedBefore: e.CreatedBefore(), Limit: step}
}

// Count counts the messages req would erase now, changing nothing.
func (u *Erasures) Count(ctx context.Context, p domain.Principal, req erasure.Request) (int64, error) {
	if err := u.Available(p); err != nil {
		return 0, err
	}
	if err := req.Validate(); err != nil {
		return 0, err
	}
	e := erasure.Erasure{Account: p.Account, Hashes: req.Hashes(u.hashKeys...)}
	if req.MessageID != "" {
		if err := u.byMessage(ctx, &e, req.MessageID); err != nil {
			return 0, err
		}
	}
	var n int64
	err := eachStep(ctx, u.eraser, e, u.step, func(refs []ports.SubjectRef) error {
		n += int64(len(refs))
		return nil
	})
	return n, err
}

// Erasure returns the account's erasure id (ports.ErrNotFound for another
// account's).
func (u *Erasures) Erasure(ctx context.Context, p domain.Principal, id string) (erasure.Erasure, error) {
	if err := u.Available(p); err != nil {
		return erasure.Erasure{}, err
	}
	return u.journal.Erasure(ctx, p.Account, id)
}

// List returns the account's erasures before the id before, newest first,
// at most limit, and whether more follow.
func (u *Erasures) List(ctx context.Context, p domain.Principal, before string, limit int) ([]erasure.Erasure, bool, error) {
	if err := u.Available(p); err != nil {
		return nil, false, err
	}
	es, err := u.journal.Erasures(ctx, p.Account, before, limit+1)
	if err != nil {
		return nil, false, err
	}
	return es[:min(len(es), limit)], len(es) > limit, nil
}

// SubjectMessages returns one page of the messages of p's scope whose
// subject is value, readable now, newest first after after: an access
// request (GDPR Art. 15).
func (u *Erasures) SubjectMessages(ctx context.Context, p domain.Principal, value string, after *domain.Cursor, limit int) (domain.Page, error) {
	if err := u.Available(p); err != nil {
		return domain.Page{}, err
	}
	if err := (erasure.Request{Subjects: []string{value}}).Validate(); err != nil {
		return domain.Page{}, &domain.ValidationError{Message: "the subject is invalid", Fields: []domain.FieldError{
			{Field: "value", Message: fmt.Sprintf("must be 1 to %d bytes of UTF-8 text, not only spaces", erasure.MaxSubjectBytes)}}}
	}
	q := ports.SubjectQuery{Account: p.Account, Domain: p.Domain, Hashes: erasure.Request{Subjects: []string{value}}.Hashes(u.hashKeys...), After: after, Limit: limit + 1}
	var page domain.Page
	for {
		refs, err := u.eraser.SubjectMessages(ctx, q)
		if err != nil {
			return domain.Page{}, err
		}
		for _, r := range refs {
			m, err := u.reader.getErased(ctx, p, r.ID) // a pending erasure's too
			if errors.Is(err, ports.ErrNotFound) {
				continue // hidden, expired or not yet visible
			}
			if err != nil {
				return domain.Page{}, err
			}
			if len(page.Messages) == limit {
				page.HasMore = true
				return page, nil
			}
			page.Messages = append(page.Messages, m)
		}
		if len(refs) < q.Limit {
			return page, nil
		}
		next := refs[len(refs)-1].Cursor()
		q.After = &next
	}
}

// forgetting is the subjects the erasures of each account keep forgetting
// (erasure.Future), which every write of the account goes through
// (rules.Compiled.ApplyForgetting).
type forgetting struct {
	mu        sync.RWMutex
	byAccount map[string]accountForgetting
}

// accountForgetting is one account's forgotten subjects, by hash.
type accountForgetting map[string]rules.Forget

func (a accountForgetting) Forgets(hash string) rules.Forget { return a[hash] }

func newForgetting() *forgetting { return &forgetting{byAccount: map[string]accountForgetting{}} }

// futureOf is what e's future does to a message.
func futureOf(e erasure.Erasure) rules.Forget {
	switch e.Future {
	case erasure.FutureDrop:
		return rules.ForgetDrop
	case erasure.FutureRedact:
		return rules.ForgetRedact
	}
	return rules.ForgetNone
}

// For is account's forgetting, nil when it forgets no subject.
func (f *forgetting) For(account string) rules.Forgetting {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if a := f.byAccount[account]; a != nil {
		return a
	}
	return nil
}

// add makes this replica forget e's subjects at once.
func (f *forgetting) add(e erasure.Erasure) {
	if futureOf(e) == rules.ForgetNone {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a := maps.Clone(f.byAccount[e.Account]) // copied: For's callers read the old one unlocked
	if a == nil {
		a = accountForgetting{}
	}
	for _, h := range e.Hashes {
		a[h] = max(a[h], futureOf(e))
	}
	f.byAccount[e.Account] = a
}

// set replaces what every account forgets with what es ask.
func (f *forgetting) set(es []erasure.Erasure) {
	byAccount := map[string]accountForgetting{}
	for _, e := range es {
		if futureOf(e) == rules.ForgetNone {
			continue
		}
		if byAccount[e.Account] == nil {
			byAccount[e.Account] = accountForgetting{}
		}
		for _, h := range e.Hashes {
			byAccount[e.Account][h] = max(byAccount[e.Account][h], futureOf(e))
		}
	}
	f.mu.Lock()
	f.byAccount = byAccount
	f.mu.Unlock()
}

// ErasureJob carries erasures out in the background on each replica: it
// hides what an erasure left pending, physically deletes what erasures
// hid (Within/24 after the last run, a step at a time, each step
// journaled, so that a process killed midway resumes at its next start),
// expunges (ports.Eraser.Expunge) and journals them deleted; and it reads
// the journal every poll for the subjects to keep forgetting. At start it
// erases again what deleted erasures find: messages restored from a copy
// older than them.
type ErasureJob struct {
	eraser  ports.Eraser
	journal ports.ErasureJournal
	clock   ports.Clock
	cfg     ErasureConfig
	poll    time.Duration
	readLag time.Duration // the store's: a hide is journaled once every read sees it
	forget  *forgetting
	log     *zap.Logger
	loop    loop
	mu      sync.Mutex // one run at a time
	// tombstones are read from the journal with the forgotten subjects.
	tombstones *tombstones
	// woken tells the job that an erasure was journaled pending.
	woken chan struct{}
	// leases, when the journal has them, let one replica's job work at a
	// time (nil: this replica alone); owner names this one.
	leases ports.Leases
	owner  string
}

func newErasureJob(eraser ports.Eraser, journal ports.ErasureJournal, clock ports.Clock, cfg ErasureConfig, poll, readLag time.Duration, forget *forgetting, stones *tombstones, log *zap.Logger) *ErasureJob {
	leases, _ := journal.(ports.Leases)
	return &ErasureJob{eraser: eraser, journal: journal, clock: clock, cfg: cfg.withDefaults(), poll: poll, readLag: readLag, forget: forget, tombstones: stones,
		woken: make(chan struct{}, 1), log: named(log, "erasures"), leases: leases, owner: ReplicaName()}
}

// erasureLease names the lease of the replica whose job works on the
// erasures, taken by each run and released at its end; erasureLeaseTerm is
// how long it holds without renewing: each step and each journal write
// renews it, and a replica killed midway leaves the work to another, or to
// itself restarted, after that long.
const (
	erasureLease     = "erasures.work"
	erasureLeaseTerm = 30 * time.Second
)

// ErrErasureLeaseElsewhere says another replica's erasure job holds the
// erasures' lease: this one leaves the work to it (and stops midway if it
// lost the lease).
var ErrErasureLeaseElsewhere = errors.New("another replica's erasure job holds the lease")

// holdLease takes or renews the erasures' lease for this replica; it fails
// with ErrErasureLeaseElsewhere while another holds it. Every journal write and
// store step of the job follows one, so a replica that lost the lease
// (stalled past its term) writes nothing over its successor's progress.
func (j *ErasureJob) holdLease(ctx context.Context) error {
	if j.leases == nil {
		return nil
	}
	now := j.clock.Now()
	held, err := j.leases.AcquireLease(ctx, erasureLease, j.owner, now, now.Add(erasureLeaseTerm))
	switch {
	case err != nil:
		return fmt.Errorf("the erasures' lease: %w", err)
	case !held:
		return ErrErasureLeaseElsewhere
	}
	return nil
}

// releaseLease ends this replica's lease when it holds it, so that another
// replica's run, or this one's after a restart, need not wait for its term.
func (j *ErasureJob) releaseLease(ctx context.Context) {
	if j.leases == nil {
		return
	}
	now := j.clock.Now()
	if _, err := j.leases.AcquireLease(ctx, erasureLease, j.owner, now, now); err != nil && ctx.Err() == nil {
		j.log.Debug("releasing the erasures' lease failed; it ends with its term", zap.Error(err))
	}
}

// save journals e under the lease.
func (j *ErasureJob) save(ctx context.Context, e erasure.Erasure) error {
	if err := j.holdLease(ctx); err != nil {
		return err
	}
	return j.journal.SaveErasure(ctx, e)
}

// wake has the job hide the pending erasures now, when it runs.
func (j *ErasureJob) wake() {
	select {
	case j.woken <- struct{}{}:
	default: // already woken
	}
}

// Start runs the job until Stop: a run that re-applies every erasure at
// once, then the journal read every poll/2 (the tombstones' lease is poll),
// the pending erasures hidden as soon as one is journaled here (wake) and
// at every read of the journal that finds one, and a run every Within/24.
func (j *ErasureJob) Start() {
	if j.eraser == nil || j.journal == nil {
		return
	}
	j.loop.start(func(ctx context.Context) {
		runEvery := j.cfg.period()
		var last time.Time
		ticker := time.NewTicker(max(j.poll/2, time.Millisecond))
		defer ticker.Stop()
		// The re-application is owed until a run of this replica holds the
		// lease: another's at this start would not re-apply.
		reapply := true
		for {
			pending, err := j.refresh(ctx)
			if err != nil && ctx.Err() == nil {
				j.log.Warn("reading the journal of erasures failed; writes forget the subjects known", zap.Error(err))
			}
			if now := time.Now(); last.IsZero() || now.Sub(last) >= runEvery || reapply && now.Sub(last) >= erasureLeaseTerm/4 {
				last = now
				err := j.Run(ctx, reapply)
				reapply = reapply && errors.Is(err, ErrErasureLeaseElsewhere)
				j.logFailure(ctx, "the erasure job failed; it goes on at its next run", err)
			} else if pending {
				j.logFailure(ctx, "hiding the pending erasures failed; the job tries again", j.HidePending(ctx))
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			case <-j.woken:
			}
		}
	})
}

// logFailure logs a run's error, but for the lease another replica holds
// (that one does the work) and for the job's end.
func (j *ErasureJob) logFailure(ctx context.Context, msg string, err error) {
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, ErrErasureLeaseElsewhere):
		j.log.Debug("another replica works on the erasures", zap.Error(err))
	default:
		j.log.Warn(msg, zap.Error(err))
	}
}

// Stop ends the job, waiting for it or for ctx.
func (j *ErasureJob) Stop(ctx context.Context) error { return j.loop.stop(ctx) }

// refresh reads the journal for the subjects to forget and the
// tombstones, and reports whether an erasure is pending.
func (j *ErasureJob) refresh(ctx context.Context) (pending bool, err error) {
	began := time.Now()
	es, err := j.journal.AllErasures(ctx)
	if err != nil {
		return false, err
	}
	j.forget.set(es)
	if j.tombstones != nil {
		j.tombstones.hold(began, es)
	}
	return slices.ContainsFunc(es, func(e erasure.Erasure) bool { return e.State == erasure.StatePending }), nil
}

// HidePending hides the messages of every pending erasure, a step at a
// time, and journals each hidden: its tombstone retires at the next read
// of the journal, on every replica.
func (j *ErasureJob) HidePending(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.holdLease(ctx); err != nil {
		return err
	}
	defer j.releaseLease(context.WithoutCancel(ctx))
	es, err := j.journal.AllErasures(ctx)
	if err != nil {
		return fmt.Errorf("read the journal of erasures: %w", err)
	}
	var errs []error
	for _, e := range es {
		if e.State != erasure.StatePending {
			continue
		}
		if err := j.hide(ctx, &e); err != nil {
			errs = append(errs, fmt.Errorf("erasure %s: %w", e.ID, err))
			continue
		}
		j.log.Info("erasure hidden", zap.String("account", e.Account), zap.String("erasure", e.ID), zap.Int64("messages", e.Hidden))
	}
	return errors.Join(errs...)
}

// Run carries every unfinished erasure out: hides the pending, deletes
// the hidden, expunges, then journals them deleted. With reapply it also
// erases what deleted erasures find (data restored from an older copy).
func (j *ErasureJob) Run(ctx context.Context, reapply bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.holdLease(ctx); err != nil {
		return err
	}
	defer j.releaseLease(context.WithoutCancel(ctx))
	es, err := j.journal.AllErasures(ctx)
	if err != nil {
		return fmt.Errorf("read the journal of erasures: %w", err)
	}
	var done []erasure.Erasure
	var errs []error
	for _, e := range es {
		if e.State == erasure.StateDeleted && !reapply {
			continue
		}
		if err := j.erase(ctx, &e); err != nil {
			errs = append(errs, fmt.Errorf("erasure %s: %w", e.ID, err))
			continue
		}
		done = append(done, e)
	}
	if len(done) == 0 {
		return errors.Join(errs...)
	}
	if err := j.eraser.Expunge(ctx); err != nil {
		return errors.Join(append(errs, fmt.Errorf("expunge: %w", err))...)
	}
	for _, e := range done {
		if e.State == erasure.StateDeleted {
			continue // re-applied: journaled as it went
		}
		e.State, e.DeletedAt = erasure.StateDeleted, domain.Micro(j.clock.Now())
		if err := j.save(ctx, e); err != nil {
			errs = append(errs, fmt.Errorf("journal erasure %s deleted: %w", e.ID, err))
			continue
		}
		j.log.Info("erasure deleted", zap.String("account", e.Account), zap.String("erasure", e.ID), zap.Int64("messages", e.Deleted))
	}
	return errors.Join(errs...)
}

// erase hides e if it is pending, then deletes its messages a step at a
// time, journaling the counts after each step (Reapplied for an erasure
// already deleted), then its tallies.
func (j *ErasureJob) erase(ctx context.Context, e *erasure.Erasure) error {
	if e.State == erasure.StatePending {
		if err := j.hide(ctx, e); err != nil {
			return err
		}
	}
	count := erasure.DeletedCount
	if e.State == erasure.StateDeleted {
		count = erasure.ReappliedCount
	}
	// The job deletes what it found: the next search starts over, and ends
	// when the index finds nothing more. Every step must delete something,
	// or the same refs would be found again and again.
	deleteStep := func(refs []ports.SubjectRef) error {
		if len(refs) == 0 {
			return nil
		}
		if err := j.holdLease(ctx); err != nil {
			return err
		}
		var deleted int64
		err := byPartition(refs, func(partition string, refs []ports.SubjectRef) error {
			if e.State == erasure.StateDeleted {
				// Restored: hidden first, so that no read returns them while
				// they are deleted.
				if _, err := j.eraser.Hide(ctx, e.Account, refs); err != nil {
					return err
				}
			}
			n, err := j.eraser.Delete(ctx, e.Account, refs)
			e.Count(partition, n, count)
			deleted += n
			return err
		})
		if err != nil {
			return err
		}
		if deleted > 0 {
			return j.save(ctx, *e)
		}
		return nil
	}
	if m := e.Message; m != nil {
		if err := deleteStep([]ports.SubjectRef{{ID: m.ID, Domain: m.Domain, CreatedAt: m.CreatedAt, Partition: m.Partition}}); err != nil {
			return err
		}
	}
	if len(e.Hashes) == 0 {
		return nil
	}
	q := subjectQuery(*e, j.cfg.Step)
	var deletedNone []ports.SubjectRef // the last step's, when it deleted none
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		refs, err := j.eraser.SubjectMessages(ctx, q)
		if err != nil {
			return err
		}
		if len(refs) == 0 {
			return j.eraseTallies(ctx, q)
		}
		before := *count(&e.Counts)
		if err := deleteStep(refs); err != nil {
			return err
		}
		switch {
		case *count(&e.Counts) > before:
			deletedNone = nil
		case slices.EqualFunc(refs, deletedNone, func(a, b ports.SubjectRef) bool { return a.ID == b.ID }):
			// Found again: the store cannot delete them.
			return fmt.Errorf("the store found %d messages of the subject and deleted none", len(refs))
		default:
			// Gone between the search and the delete (a class's retention
			// purged them): the next search tells.
			deletedNone = refs
		}
	}
}

// eraseTallies deletes the tallies q selects where the store keeps them
// (ports.TallyEraser): what ingest rules dropped keeps its path and name,
// which may hold a subject's value. No read returns a tally, so none is
// hidden first, and the journal counts messages alone.
func (j *ErasureJob) eraseTallies(ctx context.Context, q ports.SubjectQuery) error {
	tallies, ok := j.eraser.(ports.TallyEraser)
	if !ok {
		return nil
	}
	_, err := tallies.EraseTallies(ctx, q)
	return err
}
