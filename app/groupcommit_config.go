package app

import "fmt"

// GroupCommitConfig is the REQLOG_GROUP_COMMIT* settings: whether the ingest use
// case writes through a GroupCommitter, and its options. Turning it off also turns
// off the bounded queue: each request then writes to the store on its own.
type GroupCommitConfig struct {
	Enabled bool
	GroupCommitOptions
}

// DefaultGroupCommitConfig is on, with the default options.
func DefaultGroupCommitConfig() GroupCommitConfig {
	return GroupCommitConfig{Enabled: true, GroupCommitOptions: DefaultGroupCommitOptions()}
}

// problem names the first unusable field and why, or returns "" for field.
func (c GroupCommitConfig) problem() (field, reason string) {
	switch {
	case c.MaxBatchMessages < 1:
		return "MaxBatchMessages", "must be at least 1"
	case c.MaxBatchBytes < 1:
		return "MaxBatchBytes", "must be at least 1"
	case c.Linger < 0 || c.Linger > maxGroupLinger:
		return "Linger", "must be from 0 to " + formatDuration(maxGroupLinger)
	case c.MaxQueueMessages < 1:
		return "MaxQueueMessages", "must be at least 1"
	case c.MaxQueueBytes < 1:
		return "MaxQueueBytes", "must be at least 1"
	case c.MaxWait < 0:
		return "MaxWait", "must not be negative (0: no bound)"
	case c.Writers < 1 || c.Writers > maxGroupWriters:
		return "Writers", fmt.Sprintf("must be from 1 to %d", maxGroupWriters)
	}
	return "", ""
}
