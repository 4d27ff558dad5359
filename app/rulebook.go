package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// DefaultRulesPoll is how often a replica asks the store for rule set
// versions saved elsewhere: how long another replica may write under the
// version before.
const DefaultRulesPoll = 2 * time.Second

// RulesConfig configures the rule sets: where they come from and how a
// replica learns of new versions.
type RulesConfig struct {
	// Poll is how often each replica polls the store for new versions.
	Poll time.Duration
	// HashKey keys the hash action and subject hashes. It is kept outside
	// the store and must be the same on every replica; without one, a rule
	// set that hashes is refused.
	HashKey []byte
	// PreviousHashKey is the hash key before HashKey was rotated: erasures
	// and access requests also look subjects up by their hashes under it,
	// so that the messages indexed before the rotation are still found.
	// Nothing is hashed with it.
	PreviousHashKey []byte
	// File, when not nil, holds the rule sets of the accounts a rules file
	// names (REQLOG_RULES_FILE): they rule those accounts, whatever the store
	// holds, and the API may not change them.
	File map[string]rules.RuleSet
	// ReloadFile, when not nil, reads the rules file again if it changed
	// (changed false: it did not); the rule book calls it every Poll and
	// installs a changed file whole. A file that does not read or compile
	// keeps the rules running, and is logged until it is fixed.
	ReloadFile func() (sets map[string]rules.RuleSet, changed bool, err error)
	// Rescrub tunes the jobs that run a rule set over stored messages.
	Rescrub RescrubConfig
	// MaxRetention is the longest retention a retention rule may set, the
	// store's cap (REQLOG_SQLITE_MAX_RETENTION with the sqlite store): a set
	// saved or read from the rules file over it is refused naming the rule's
	// keep. Zero: the rules' own bound.
	MaxRetention time.Duration
}

// DefaultRulesConfig is the default of every rules setting.
func DefaultRulesConfig() RulesConfig {
	return RulesConfig{Poll: DefaultRulesPoll, Rescrub: DefaultRescrubConfig()}
}

// Validate reports the first unusable field as Config.Validate does.
func (c RulesConfig) Validate() error {
	switch {
	case c.Poll <= 0:
		return invalidField("Rules.Poll", "must be positive")
	case c.MaxRetention < 0:
		return invalidField("Rules.MaxRetention", "must not be negative")
	case len(c.HashKey) > 0 && len(c.HashKey) < MinRulesHashKey:
		return invalidField("Rules.HashKey", fmt.Sprintf("must be at least %d bytes", MinRulesHashKey))
	case len(c.PreviousHashKey) > 0 && len(c.PreviousHashKey) < MinRulesHashKey:
		return invalidField("Rules.PreviousHashKey", fmt.Sprintf("must be at least %d bytes", MinRulesHashKey))
	}
	return c.Rescrub.Validate()
}

// MinRulesHashKey is the shortest hash key accepted.
const MinRulesHashKey = 16

// RuleMetrics counts what rule sets do to the messages written. An adapter
// exports it (Prometheus, in httpapi).
type RuleMetrics interface {
	// ObserveRuleMatches counts n matches of the rule id, whose action is
	// action, enforced or in dry run (for ingest rules, one per message).
	ObserveRuleMatches(id, action string, dryRun bool, n int)
	// ObserveRuleEffects counts messages kept out of the store and bodies
	// withheld because the rules could not read them.
	ObserveRuleEffects(dropped, withheld int)
}

// ActiveRules is one version of an account's rule set, compiled.
type ActiveRules struct {
	Version rules.Version
	// FileVersion is, for a set from the rules file, the start of the
	// SHA-256 of its JSON (hex); "" for the store's.
	FileVersion string
	compiled    *rules.Compiled
	actions     map[string]string // by rule id, for the metrics
}

// Apply applies the rules to m, captured by src (rules.Compiled.Apply).
func (a *ActiveRules) Apply(m *domain.Message, src rules.Source) rules.Outcome {
	return a.compiled.Apply(m, src)
}

// noRules is what an account without a rule set gets.
var noRules = &ActiveRules{}

// RuleBook holds the compiled rule set of each account that writes, one
// version at a time, and learns of versions other replicas save by polling
// the store. The rules file's accounts are ruled by the file alone.
//
// Its one promise: a write that asks For an account's rules after a version
// was installed on this replica (Install, which the changer's request calls
// before it is answered) gets that version or a newer one. Versions saved
// on another replica arrive within Poll and a load.
type RuleBook struct {
	store      ports.RuleSetStore // nil: the file's rules alone
	file       atomic.Pointer[map[string]*ActiveRules]
	reloadFile func() (map[string]rules.RuleSet, bool, error)
	fileError  string // the last reload's error, logged once until it changes
	hashKey    []byte
	maxKeep    time.Duration // RulesConfig.MaxRetention
	poll       time.Duration
	metrics    RuleMetrics
	log        *zap.Logger
	loop       loop
	first      sync.Mutex // one first poll at a time
	// forget holds the subjects erasures keep forgetting (the ErasureJob
	// reads them from the journal).
	forget *forgetting

	mu     sync.RWMutex
	active map[string]*ActiveRules // by account, the store's
	latest map[string]int64        // the newest version known of each account
	polled bool                    // a poll has succeeded: latest is complete
}

// NewRuleBook returns the rule book of store (nil: none, the file alone) under
// cfg; a file that does not compile is an error naming the account and the
// field ("acme: privacy[0].match.detector").
func NewRuleBook(store ports.RuleSetStore, cfg RulesConfig, metrics RuleMetrics, log *zap.Logger) (*RuleBook, error) {
	if log == nil {
		log = zap.NewNop()
	}
	b := &RuleBook{store: store, reloadFile: cfg.ReloadFile, hashKey: cfg.HashKey, maxKeep: cfg.MaxRetention, poll: cfg.Poll, metrics: metrics,
		log: log.Named("rules"), active: map[string]*ActiveRules{}, latest: map[string]int64{}, forget: newForgetting()}
	if b.poll <= 0 {
		b.poll = DefaultRulesPoll
	}
	file, err := b.compileFile(cfg.File)
	if err != nil {
		return nil, err
	}
	b.file.Store(&file)
	return b, nil
}

// compileFile compiles the rules file's sets, each with its file version.
func (b *RuleBook) compileFile(sets map[string]rules.RuleSet) (map[string]*ActiveRules, error) {
	file := make(map[string]*ActiveRules, len(sets))
	for account, rs := range sets {
		active, err := b.compileNew(rules.Version{Account: account, Rules: rs})
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", account, err)
		}
		raw, err := rules.Encode(rs)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(raw)
		active.FileVersion = hex.EncodeToString(sum[:6])
		file[account] = active
	}
	return file, nil
}

// ReloadFile reads the rules file again (RulesConfig.ReloadFile) and, when
// it reads and compiles, installs it whole: accounts it names are ruled by
// it, those it no longer names by the store again. An error keeps the rules
// running.
func (b *RuleBook) ReloadFile() error {
	if b.reloadFile == nil {
		return nil
	}
	sets, changed, err := b.reloadFile()
	if err == nil && !changed {
		return nil
	}
	var file map[string]*ActiveRules
	if err == nil {
		file, err = b.compileFile(sets)
	}
	if err != nil {
		return fmt.Errorf("the rules file: %w; the rules read before stay", err)
	}
	old := *b.file.Load()
	b.file.Store(&file)
	for account, a := range file {
		if was, ok := old[account]; !ok || was.FileVersion != a.FileVersion {
			b.log.Info("rules file: an account's rules changed", zap.String("account", account), zap.String("file_version", a.FileVersion))
		}
	}
	for account := range old {
		if _, ok := file[account]; !ok {
			b.log.Info("rules file: an account is ruled by the store again", zap.String("account", account))
		}
	}
	return nil
}

// compile builds v, refusing a set that hashes without a hash key.
func (b *RuleBook) compile(v rules.Version) (*ActiveRules, error) {
	if v.Rules.UsesHashKey() && len(b.hashKey) == 0 {
		return nil, errNoHashKey(v.Rules)
	}
	c, err := rules.Compile(v.Rules, b.hashKey)
	if err != nil {
		return nil, err
	}
	actions := map[string]string{}
	for _, r := range v.Rules.Privacy {
		actions[r.ID] = r.Action.Type
	}
	for _, r := range v.Rules.Ingest {
		actions[r.ID] = r.Action
	}
	return &ActiveRules{Version: v, compiled: c, actions: actions}, nil
}

// compileNew builds v, a set about to rule (saved, tried, or the rules
// file's), refusing also retention rules over the store's cap. A saved
// set is not refused once a lower cap is configured: its rules are
// shortened to the policy's retention when applied.
func (b *RuleBook) compileNew(v rules.Version) (*ActiveRules, error) {
	active, err := b.compile(v)
	if err != nil {
		return nil, err
	}
	if err := active.compiled.CheckRetentionCap(b.maxKeep); err != nil {
		return nil, err
	}
	return active, nil
}

// errNoHashKey names the first field of rs that needs the hash key.
func errNoHashKey(rs rules.RuleSet) error {
	field := "subjects"
	for i, r := range rs.Privacy {
		if r.Action.Type == rules.ActionHash {
			field = fmt.Sprintf("privacy[%d].action.type", i)
			break
		}
	}
	return &domain.ValidationError{Message: "the rule set is invalid", Fields: []domain.FieldError{{Field: field,
		Message: "hashes values, which needs the hash key every replica shares: set REQLOG_RULES_HASH_KEY on the server"}}}
}

// FromFile reports whether the rules file rules account, with its rules.
func (b *RuleBook) FromFile(account string) (*ActiveRules, bool) {
	a, ok := (*b.file.Load())[account]
	return a, ok
}

// For returns the rules that account's writes go through now: the file's, or
// the store's newest version this replica knows of (loaded and compiled on
// first use). Until a poll of the store has succeeded it polls first, so a
// replica that cannot read the rules writes nothing (an error wrapping
// ports.ErrUnavailable), never an exchange unscrubbed.
func (b *RuleBook) For(ctx context.Context, account string) (*ActiveRules, error) {
	if a, ok := b.FromFile(account); ok {
		return a, nil
	}
	if b.store == nil {
		return noRules, nil
	}
	b.mu.RLock()
	polled, latest, active := b.polled, b.latest[account], b.active[account]
	b.mu.RUnlock()
	if !polled {
		if err := b.firstPoll(ctx); err != nil {
			return nil, fmt.Errorf("the rule sets could not be read: %w", err)
		}
		b.mu.RLock()
		latest, active = b.latest[account], b.active[account]
		b.mu.RUnlock()
	}
	switch {
	case active != nil && active.Version.Number >= latest:
		return active, nil
	case latest == 0:
		return noRules, nil
	}
	return b.load(ctx, account)
}

// firstPoll polls unless another caller's first poll has succeeded meanwhile.
func (b *RuleBook) firstPoll(ctx context.Context) error {
	b.first.Lock()
	defer b.first.Unlock()
	b.mu.RLock()
	polled := b.polled
	b.mu.RUnlock()
	if polled {
		return nil
	}
	return b.Refresh(ctx)
}

// load reads account's current version from the store, compiles and installs
// it.
func (b *RuleBook) load(ctx context.Context, account string) (*ActiveRules, error) {
	v, err := b.store.RuleSet(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("the rule set of account %s: %w", account, err)
	}
	if v.Number == 0 {
		return noRules, nil
	}
	active, err := b.compile(v)
	if err != nil {
		// Saved rules compiled when saved; not now (a hash key removed):
		// the account's writes fail rather than go unscrubbed.
		return nil, fmt.Errorf("the rule set of account %s, version %d, does not compile: %w", account, v.Number, err)
	}
	return b.Install(active), nil
}

// Install makes a (compiled from the store) the account's rules unless a
// newer version is installed, and returns the newer of the two.
func (b *RuleBook) Install(a *ActiveRules) *ActiveRules {
	account := a.Version.Account
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.active[account]; cur != nil && cur.Version.Number >= a.Version.Number {
		return cur
	}
	b.active[account] = a
	b.latest[account] = max(b.latest[account], a.Version.Number)
	return a
}

// Refresh polls the store for every account's version, then loads the new
// versions of accounts this replica has written for (others load when they
// first write).
func (b *RuleBook) Refresh(ctx context.Context) error {
	if b.store == nil {
		return nil
	}
	versions, err := b.store.RuleSetVersions(ctx)
	if err != nil {
		return err
	}
	b.mu.Lock()
	var stale []string
	for account, n := range versions {
		b.latest[account] = max(b.latest[account], n)
		if a := b.active[account]; a != nil && a.Version.Number < b.latest[account] {
			stale = append(stale, account)
		}
	}
	b.polled = true
	b.mu.Unlock()
	var errs []error
	for _, account := range stale {
		if _, err := b.load(ctx, account); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start polls the store and the rules file every Poll until Stop.
func (b *RuleBook) Start() {
	if b.store == nil && b.reloadFile == nil {
		return
	}
	b.loop.start(func(ctx context.Context) {
		ticker := time.NewTicker(b.poll)
		defer ticker.Stop()
		for {
			if err := b.Refresh(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn("reading the rule sets failed; writes use the versions known", zap.Error(err))
			}
			b.reloadFileLogged()
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	})
}

// reloadFileLogged reloads the rules file, logging a failure once until it
// changes or is fixed (the loop's goroutine alone calls it).
func (b *RuleBook) reloadFileLogged() {
	err := b.ReloadFile()
	switch {
	case err == nil && b.fileError != "":
		b.log.Info("rules file: reads again")
		b.fileError = ""
	case err != nil && err.Error() != b.fileError:
		b.log.Error("rules file: cannot be used", zap.Error(err))
		b.fileError = err.Error()
	}
}

// Stop ends the polling, waiting for it or for ctx.
func (b *RuleBook) Stop(ctx context.Context) error { return b.loop.stop(ctx) }

// observe reports what a's rules did to one submission.
func (b *RuleBook) observe(a *ActiveRules, outcomes []rules.Outcome) {
	if b.metrics == nil || a.compiled == nil {
		return
	}
	dropped, withheld := 0, 0
	for _, o := range outcomes {
		for _, c := range o.Counts {
			b.metrics.ObserveRuleMatches(c.Rule, a.actions[c.Rule], c.DryRun, c.Matches)
		}
		if !o.Stored {
			dropped++
		}
		withheld += len(o.Withheld)
	}
	if dropped+withheld > 0 {
		b.metrics.ObserveRuleEffects(dropped, withheld)
	}
}

// CurrentRetention tells the purge the current retention of each class
// (ports.RetentionOf): the account's rule of that id as this replica knows
// it now, shortened to the policy's retention, as ingest shortens it.
func (b *RuleBook) CurrentRetention(policy time.Duration) ports.RetentionOf {
	return func(ctx context.Context, class domain.RetentionClass) (keep, bodies time.Duration, ok bool, err error) {
		active, err := b.For(ctx, class.Account)
		if err != nil {
			return 0, 0, false, err
		}
		keep, bodies, ok = active.compiled.RuleRetention(class.Rule)
		return min(keep, policy), min(bodies, policy), ok, nil
	}
}
