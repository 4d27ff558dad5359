package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// Errors of the rule set use case, besides a *domain.ValidationError and
// ports.ErrStale (a version other than the current one was expected).
var (
	// ErrRuledByFile: a rules file rules the account, so the API may not
	// change its rules (HTTP 409).
	ErrRuledByFile = errors.New("a rules file rules this account")
	// errRulesReadOnly: only an API key manages rules.
	errRulesReadOnly = fmt.Errorf("rule sets are read and changed with an API key, not a portal session: %w", ports.ErrForbidden)
)

// RuleReasonHeader is the request header that says why a rule set is
// replaced; every version keeps it.
const RuleReasonHeader = "X-Reqlog-Reason"

// MaxRuleReasonBytes bounds a reason.
const MaxRuleReasonBytes = 500

// RuleSets is the rule set use case of the API: read an account's rule set,
// replace it against its version, list its history with what each version
// changed, and try a proposed set on an exchange. Only an API key may call
// it (any domain of the account: the rules are the account's); a portal
// session is refused.
type RuleSets struct {
	store  ports.RuleSetStore // nil: the rules file alone
	book   *RuleBook
	reader *Reader
	policy domain.Policy
	clock  ports.Clock
}

// NewRuleSets returns the use case over store (nil: none, the API only reads
// the file's rules) and book, trying rules on messages policy validates and
// reader finds.
func NewRuleSets(store ports.RuleSetStore, book *RuleBook, reader *Reader, policy domain.Policy, clock ports.Clock) *RuleSets {
	return &RuleSets{store: store, book: book, reader: reader, policy: policy, clock: clock}
}

// CurrentRules is an account's rule set as the API shows it.
type CurrentRules struct {
	// Version is the store's current version, or, when a rules file rules
	// the account, the file's rules (Number 0).
	Version rules.Version
	// FileVersion is set when a rules file rules the account: the start of
	// the SHA-256 of its rules' JSON.
	FileVersion string
}

// RuleChange is one version in the history, with what it changed from the
// version before.
type RuleChange struct {
	Version rules.Version
	Diff    rules.Difference
}

func apiKeyOnly(p domain.Principal) error {
	if p.ReadOnly || p.Name != "" {
		return errRulesReadOnly
	}
	return nil
}

// Current returns the rules the principal's account writes under now.
func (s *RuleSets) Current(ctx context.Context, p domain.Principal) (CurrentRules, error) {
	if err := apiKeyOnly(p); err != nil {
		return CurrentRules{}, err
	}
	if a, ok := s.book.FromFile(p.Account); ok {
		return CurrentRules{Version: a.Version, FileVersion: a.FileVersion}, nil
	}
	if s.store == nil {
		return CurrentRules{Version: rules.Version{Account: p.Account}}, nil
	}
	v, err := s.store.RuleSet(ctx, p.Account)
	if err != nil {
		return CurrentRules{}, fmt.Errorf("rule set: %w", err)
	}
	return CurrentRules{Version: v}, nil
}

// ParseRuleReason reads the values of the X-Reqlog-Reason header: one value
// of 1 to MaxRuleReasonBytes bytes of UTF-8 text without control characters;
// anything else is a *domain.ValidationError naming the header.
func ParseRuleReason(values ...string) (string, error) {
	if len(values) == 1 {
		reason := strings.TrimSpace(values[0])
		if reason != "" && len(reason) <= MaxRuleReasonBytes && utf8.ValidString(reason) &&
			strings.IndexFunc(reason, unicode.IsControl) < 0 {
			return reason, nil
		}
	}
	return "", &domain.ValidationError{Message: "a rule set is replaced with a reason", Fields: []domain.FieldError{{Field: RuleReasonHeader,
		Message: fmt.Sprintf("must be given once: why the rules change, 1 to %d bytes of UTF-8 text without control characters", MaxRuleReasonBytes)}}}
}

// Replaceable reports, before a request's body is read, whether the
// principal may replace its account's rule set at all: an error wrapping
// ports.ErrForbidden for a portal session, ErrRuledByFile, or one wrapping
// ports.ErrNotFound when the server keeps no rule sets.
func (s *RuleSets) Replaceable(p domain.Principal) error {
	if err := apiKeyOnly(p); err != nil {
		return err
	}
	if _, ok := s.book.FromFile(p.Account); ok {
		return ErrRuledByFile
	}
	if s.store == nil {
		return fmt.Errorf("this server keeps no rule sets: %w", ports.ErrNotFound)
	}
	return nil
}

// Replace saves doc, a rule set's JSON, as the account's next version if its
// current version is expected, and makes this replica's writes use it before
// returning. Errors: ErrRuledByFile, a *domain.ValidationError naming the
// fields at fault, ports.ErrStale; nothing changes on any.
func (s *RuleSets) Replace(ctx context.Context, p domain.Principal, doc []byte, reason string, expected int64) (CurrentRules, error) {
	if err := s.Replaceable(p); err != nil {
		return CurrentRules{}, err
	}
	rs, err := rules.Parse(doc)
	if err != nil {
		return CurrentRules{}, err
	}
	v := rules.Version{Account: p.Account, Rules: rs, KeyID: p.KeyID, Reason: reason, At: domain.Micro(s.clock.Now())}
	active, err := s.book.compileNew(v)
	if err != nil {
		return CurrentRules{}, err
	}
	if active.Version, err = s.store.ReplaceRuleSet(ctx, v, expected); err != nil {
		return CurrentRules{}, fmt.Errorf("replace the rule set: %w", err)
	}
	s.book.Install(active)
	return CurrentRules{Version: active.Version}, nil
}

// History returns one page of the account's versions, newest first, below
// version before (0: from the newest), at most limit, each with its
// difference from the version before it, and whether older ones follow.
func (s *RuleSets) History(ctx context.Context, p domain.Principal, before int64, limit int) ([]RuleChange, bool, error) {
	if err := apiKeyOnly(p); err != nil {
		return nil, false, err
	}
	if s.store == nil {
		return nil, false, nil
	}
	// One more than the page: the last one's predecessor, for its diff.
	vs, err := s.store.RuleSetHistory(ctx, p.Account, before, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("rule set history: %w", err)
	}
	more := len(vs) > limit
	out := make([]RuleChange, 0, min(len(vs), limit))
	for i := range min(len(vs), limit) {
		var previous rules.RuleSet
		if i+1 < len(vs) {
			previous = vs[i+1].Rules
		}
		out = append(out, RuleChange{Version: vs[i], Diff: rules.Diff(previous, vs[i].Rules)})
	}
	return out, more, nil
}

// TryInput is what to try: proposed rules (nil: the account's current ones)
// on one exchange, given as a submission's drafts or as a stored message's
// id or reference.
type TryInput struct {
	Rules     *rules.RuleSet
	Source    rules.Source // "": rules.SourceAPI
	Exchange  *domain.Drafts
	MessageID string
}

// TryResult is what the rules would do to the exchange: the message as it
// would be stored, and the rules' outcome (rule ids and field paths, never
// the values they matched).
type TryResult struct {
	Message domain.Message
	Outcome rules.Outcome
	// Version is the version tried: 0 for proposed rules.
	Version int64
}

// Try applies in's rules to its exchange without storing anything. A bad
// rule set's fields are named under "rules.", a bad exchange's under
// "exchange."; an unknown message is ports.ErrNotFound.
func (s *RuleSets) Try(ctx context.Context, p domain.Principal, in TryInput) (TryResult, error) {
	if err := apiKeyOnly(p); err != nil {
		return TryResult{}, err
	}
	src := in.Source
	if src == "" {
		src = rules.SourceAPI
	}
	active, err := s.rulesToTry(ctx, p, in.Rules)
	if err != nil {
		return TryResult{}, err
	}
	var m domain.Message
	switch {
	case in.Exchange != nil && in.MessageID == "":
		if m, err = s.sample(p, *in.Exchange); err != nil {
			return TryResult{}, err
		}
	case in.Exchange == nil && in.MessageID != "":
		if m, err = s.reader.Get(ctx, p, in.MessageID); err != nil {
			return TryResult{}, err
		}
	default:
		return TryResult{}, &domain.ValidationError{Message: "say what to try the rules on", Fields: []domain.FieldError{
			{Field: "exchange", Message: "give an exchange, as POST /v1/messages takes one, or a message_id, not both"}}}
	}
	out := active.Apply(&m, src)
	return TryResult{Message: m, Outcome: out, Version: active.Version.Number}, nil
}

// rulesToTry compiles proposed rules, or finds the account's current ones.
func (s *RuleSets) rulesToTry(ctx context.Context, p domain.Principal, proposed *rules.RuleSet) (*ActiveRules, error) {
	if proposed == nil {
		return s.book.For(ctx, p.Account)
	}
	active, err := s.book.compileNew(rules.Version{Account: p.Account, Rules: *proposed})
	return active, prefixFields(err, "rules.")
}

// sample validates drafts, which must hold one exchange, into the message it
// would be stored as now.
func (s *RuleSets) sample(p domain.Principal, drafts domain.Drafts) (domain.Message, error) {
	if drafts.Multiple || drafts.Count != 1 {
		return domain.Message{}, &domain.ValidationError{Message: "the exchange is invalid", Fields: []domain.FieldError{
			{Field: "exchange", Message: "must be one exchange, a JSON object as POST /v1/messages takes"}}}
	}
	now := s.clock.Now()
	batch, err := s.policy.Validator().ValidateSubmissions(drafts, now)
	if err != nil {
		return domain.Message{}, prefixFields(err, "exchange.")
	}
	id, err := domain.NewIdentity()
	if err != nil {
		return domain.Message{}, err
	}
	m := s.policy.NewUnstoredMessage(p.Scope, batch.Submissions[0], id)
	m.UpdatedAt = domain.Micro(now)
	return m, nil
}

// prefixFields names a validation error's fields under prefix, the member
// of the request body they are in.
func prefixFields(err error, prefix string) error {
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) {
		return err
	}
	out := &domain.ValidationError{Message: invalid.Message, Fields: make([]domain.FieldError, len(invalid.Fields))}
	for i, f := range invalid.Fields {
		out.Fields[i] = domain.FieldError{Field: prefix + f.Field, Message: f.Message}
	}
	if len(out.Fields) == 0 {
		out.Fields = []domain.FieldError{{Field: strings.TrimSuffix(prefix, "."), Message: invalid.Message}}
	}
	return out
}
