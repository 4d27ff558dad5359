package app

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain"
)

// Config is what the use cases are configured with: the domain policy, the purge
// job's interval, how ingest admits and groups submissions, and how reads that
// walk many messages share the process. Each adapter has a
// Config of its own; cmd/reqlogd fills them all from its table of REQLOG_*
// settings.
type Config struct {
	// VisibilityDelay is how long a stored message stays unreadable (0 allowed).
	VisibilityDelay time.Duration
	// Retention is how long a message is kept, after its created_at.
	Retention time.Duration
	// RollupRetention is how long the statistics' rollups are kept, after
	// their minute, once their messages are gone (domain.Policy).
	RollupRetention time.Duration
	// PurgeInterval is how often the purge job deletes expired messages.
	PurgeInterval time.Duration
	// MaxBatch is the most messages in one submission.
	MaxBatch int
	// MaxBatchDays is the most distinct UTC days of created_at in one
	// submission (0: no bound).
	MaxBatchDays int
	// MaskedHeaders are the headers whose values are masked before storing.
	MaskedHeaders []string
	// RedactedFields are the body fields whose values are masked before storing;
	// empty turns redaction off.
	RedactedFields []string
	GroupCommit    GroupCommitConfig
	Admission      AdmissionOptions
	Walks          WalkLimits
	Rules          RulesConfig
	Erasure        ErasureConfig
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		VisibilityDelay: domain.DefaultVisibilityDelay,
		Retention:       domain.DefaultRetention,
		RollupRetention: domain.DefaultRollupRetention,
		PurgeInterval:   time.Minute,
		MaxBatch:        domain.DefaultMaxBatch,
		MaxBatchDays:    domain.DefaultMaxBatchDays,
		MaskedHeaders:   append([]string(nil), domain.DefaultMaskedHeaders...),
		RedactedFields:  append([]string(nil), domain.DefaultRedactedFields...),
		GroupCommit:     DefaultGroupCommitConfig(),
		Admission:       DefaultAdmissionOptions(),
		Walks:           DefaultWalkLimits(),
		Rules:           DefaultRulesConfig(),
		Erasure:         DefaultErasureConfig(),
	}
}

// Policy returns the domain rules the configuration sets. Bodies without a
// Content-Type are sniffed with net/http's algorithm.
func (c Config) Policy() domain.Policy {
	return domain.Policy{
		VisibilityDelay: c.VisibilityDelay,
		Retention:       c.Retention,
		RollupRetention: c.RollupRetention,
		MaxBatch:        c.MaxBatch,
		MaxBatchDays:    c.MaxBatchDays,
		MaskedHeaders:   append([]string(nil), c.MaskedHeaders...),
		RedactedFields:  append([]string(nil), c.RedactedFields...),
		Sniff:           http.DetectContentType,
	}
}

// Validate reports the first unusable field as a *domain.ValidationError whose one
// field is named as in Config ("Retention", "GroupCommit.Linger"), so that
// cmd/reqlogd can name the setting it came from.
func (c Config) Validate() error {
	switch {
	case c.VisibilityDelay < 0:
		return invalidField("VisibilityDelay", "must not be negative")
	case c.Retention <= 0:
		return invalidField("Retention", "must be positive")
	case c.VisibilityDelay >= c.Retention:
		return invalidField("VisibilityDelay", "must be shorter than REQLOG_RETENTION ("+formatDuration(c.Retention)+")")
	case c.RollupRetention <= 0:
		return invalidField("RollupRetention", "must be positive (shorter than REQLOG_RETENTION: rollups go with their messages)")
	case c.PurgeInterval <= 0:
		return invalidField("PurgeInterval", "must be positive")
	case c.MaxBatch < 1:
		return invalidField("MaxBatch", "must be at least 1")
	case c.MaxBatchDays < 0:
		return invalidField("MaxBatchDays", "must not be negative (0: no bound)")
	case c.Admission.Decoders < 0:
		return invalidField("Admission.Decoders", "must not be negative (0 turns the limit off)")
	case c.Admission.MaxWaiting < 0:
		return invalidField("Admission.MaxWaiting", "must not be negative")
	case c.Admission.MaxBytes < 1:
		return invalidField("Admission.MaxBytes", "must be at least 1")
	}
	if field, reason := c.GroupCommit.problem(); field != "" {
		return invalidField("GroupCommit."+field, reason)
	}
	if field, reason := c.Walks.problem(); field != "" {
		return invalidField("Walks."+field, reason)
	}
	if err := c.Rules.Validate(); err != nil {
		return err
	}
	if err := c.Erasure.Validate(); err != nil {
		return err
	}
	// One header at a time, so that the error is about the bad one.
	for _, name := range c.MaskedHeaders {
		probe := domain.DefaultPolicy()
		probe.MaskedHeaders = []string{name}
		if err := probe.Validate(); err != nil {
			return invalidField("MaskedHeaders", err.Error())
		}
	}
	probe := domain.DefaultPolicy()
	probe.RedactedFields = c.RedactedFields
	if err := probe.Validate(); err != nil {
		return invalidField("RedactedFields", err.Error())
	}
	if err := c.Policy().Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	return nil
}

func invalidField(field, reason string) error {
	return &domain.ValidationError{Message: "app: config", Fields: []domain.FieldError{{Field: field, Message: reason}}}
}

// ConfigError is an invalid setting. It names the setting by its environment
// variable and, unless the setting is secret, repeats the bad value.
type ConfigError struct {
	Setting string // e.g. "REQLOG_RETENTION"
	Value   string // "" for secret settings
	Source  string // where the value came from, e.g. "flag -retention"; may be ""
	Reason  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("invalid " + e.Setting)
	if e.Value != "" {
		b.WriteString(" " + strconv.Quote(e.Value))
	}
	if e.Source != "" {
		b.WriteString(" (from " + e.Source + ")")
	}
	return b.String() + ": " + e.Reason
}

// formatDuration prints whole hours as such ("720h"), others as Go does, as the
// settings are written.
func formatDuration(d time.Duration) string {
	if d != 0 && d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}
