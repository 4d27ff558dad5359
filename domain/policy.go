package domain

import (
	"fmt"
	"time"
)

// Defaults of the contract; every one is configurable.
const (
	DefaultVisibilityDelay = 5 * time.Second
	DefaultRetention       = 30 * 24 * time.Hour
	// DefaultRollupRetention is how long the statistics' rollups are kept,
	// after their minute: a year of error rate and latency and some more.
	DefaultRollupRetention = 400 * 24 * time.Hour
	DefaultMaxBatch        = 1000
	// DefaultMaxBatchDays is the most distinct UTC days of created_at one
	// batch may span: the default retention's 30, today and MaxFutureSkew's
	// tomorrow. A store keeps a file or index per day, and a batch writes
	// each of its days in turn.
	DefaultMaxBatchDays = 32
	// MaxFutureSkew is how far ahead of the service's clock created_at may be.
	MaxFutureSkew = 24 * time.Hour
)

// DefaultMaskedHeaders are the headers whose values are never stored.
var DefaultMaskedHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"}

// Mask replaces every value of a masked header.
const Mask = "***************"

// Policy holds the ingest rules that deployments may tune.
type Policy struct {
	VisibilityDelay time.Duration
	Retention       time.Duration
	// RollupRetention is how long a store keeps the rollups the statistics
	// count, after their minute, once the messages are gone: a retention
	// not longer than Retention (zero) keeps them no longer than those.
	RollupRetention time.Duration
	MaxBatch        int
	// MaxBatchDays is the most distinct UTC days of created_at in one
	// batch; zero means no bound.
	MaxBatchDays  int
	MaskedHeaders []string
	// RedactedFields name the JSON and form body fields whose values are replaced
	// with Mask at any depth, matched ignoring case, '-' and '_'; empty turns
	// redaction off.
	RedactedFields []string
	// Sniff guesses the media type of bodies without a Content-Type header that are
	// not JSON; nil means "text/plain" for UTF-8 text, else application/octet-stream.
	// It MUST NOT modify or retain the body it is given.
	Sniff Sniffer
}

// DefaultPolicy returns the contract's defaults.
func DefaultPolicy() Policy {
	return Policy{
		VisibilityDelay: DefaultVisibilityDelay,
		Retention:       DefaultRetention,
		RollupRetention: DefaultRollupRetention,
		MaxBatch:        DefaultMaxBatch,
		MaxBatchDays:    DefaultMaxBatchDays,
		MaskedHeaders:   append([]string(nil), DefaultMaskedHeaders...),
		RedactedFields:  append([]string(nil), DefaultRedactedFields...),
	}
}

// Validate reports a policy that cannot work.
func (p Policy) Validate() error {
	switch {
	case p.VisibilityDelay < 0:
		return fmt.Errorf("visibility delay must not be negative, got %s", p.VisibilityDelay)
	case p.Retention <= 0:
		return fmt.Errorf("retention must be positive, got %s", p.Retention)
	case p.VisibilityDelay >= p.Retention:
		return fmt.Errorf("visibility delay (%s) must be shorter than retention (%s)", p.VisibilityDelay, p.Retention)
	case p.RollupRetention < 0:
		return fmt.Errorf("rollup retention must not be negative, got %s", p.RollupRetention)
	case p.MaxBatch < 1:
		return fmt.Errorf("batch limit must be at least 1, got %d", p.MaxBatch)
	case p.MaxBatchDays < 0:
		return fmt.Errorf("the batch's days limit must not be negative, got %d", p.MaxBatchDays)
	}
	for _, name := range p.MaskedHeaders {
		if !IsToken(name) {
			return fmt.Errorf("masked header %q is not a valid header name", name)
		}
	}
	for _, name := range p.RedactedFields {
		if redactionKey(name) == "" {
			return fmt.Errorf("redacted field %q is empty once '-' and '_' are ignored", name)
		}
	}
	return nil
}

// DroppedDefaults returns the default masked headers and redacted fields that p
// does not mask or redact. A configured list replaces the defaults, so a deployer
// listing a header of their own may stop masking Authorization unawares.
func (p Policy) DroppedDefaults() (headers, fields []string) {
	masked, redacted := p.maskSet(), p.redactSet()
	for _, name := range DefaultMaskedHeaders {
		if !masked[HeaderMaskKey(name)] {
			headers = append(headers, name)
		}
	}
	for _, name := range DefaultRedactedFields {
		if !redacted.has(name) {
			fields = append(fields, name)
		}
	}
	return headers, fields
}

// maskSet returns the names to mask, as HeaderMaskKey writes them.
func (p Policy) maskSet() map[string]bool {
	set := make(map[string]bool, len(p.MaskedHeaders))
	for _, name := range p.MaskedHeaders {
		set[HeaderMaskKey(name)] = true
	}
	return set
}

// NewMessage turns a validated submission into the message to store at now.
func (p Policy) NewMessage(scope Scope, s Submission, id Identity, now time.Time) Message {
	m := p.NewUnstoredMessage(scope, s, id)
	p.stamp(&m, now)
	return m
}

// NewUnstoredMessage is NewMessage without the stored time (UpdatedAt) and so
// the visible time, for a writer that stamps them once, when it writes
// (StampStored).
func (p Policy) NewUnstoredMessage(scope Scope, s Submission, id Identity) Message {
	return Message{
		ID:          id.ID,
		Reference:   id.Reference,
		Account:     scope.Account,
		Domain:      scope.Domain,
		Name:        s.Name,
		IPAddress:   s.IPAddress,
		Method:      s.Method,
		Path:        s.Path,
		Route:       s.Route,
		StatusCode:  s.StatusCode,
		Request:     s.Request,
		Response:    s.Response,
		Duration:    s.Duration,
		HasDuration: s.HasDuration,
		CreatedAt:   s.CreatedAt,
		ExpiresAt:   s.CreatedAt.Add(p.Retention),
	}
}

// StampStored sets each message's stored time (updated_at) to now, and so the time
// it becomes visible. The ingest path calls it again just before a queued batch is
// written, so that waiting in the queue does not eat into the visibility delay,
// which only the store's own read lag may use.
func (p Policy) StampStored(msgs []Message, now time.Time) {
	for i := range msgs {
		p.stamp(&msgs[i], now)
	}
}

func (p Policy) stamp(m *Message, now time.Time) {
	m.UpdatedAt = Micro(now)
	m.VisibleAt = m.UpdatedAt.Add(p.VisibilityDelay)
}

// OldestReadable is the earliest created_at that has not expired at now under
// the current retention, so a shortened retention applies to stored messages too.
func (p Policy) OldestReadable(now time.Time) time.Time {
	return Micro(now).Add(-p.Retention + time.Microsecond)
}

// KeepsRollups reports whether rollups outlive the messages they count.
func (p Policy) KeepsRollups() bool { return p.RollupRetention > p.Retention }

// OldestRollup is the earliest created_at whose rollup is kept at now: the
// statistics of a range the rollups answer reach back to it.
func (p Policy) OldestRollup(now time.Time) time.Time {
	return Micro(now).Add(-max(p.RollupRetention, p.Retention) + time.Microsecond)
}
