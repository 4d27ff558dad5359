package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

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

// problem names the first unusable setting and why, or returns "" for key.
func (c GroupCommitConfig) problem() (key, reason string) {
	switch {
	case c.MaxBatchMessages < 1:
		return "group_commit_max_messages", "must be at least 1"
	case c.MaxBatchBytes < 1:
		return "group_commit_max_bytes", "must be at least 1"
	case c.Linger < 0 || c.Linger > maxGroupLinger:
		return "group_commit_linger", "must be from 0 to " + formatDuration(maxGroupLinger)
	case c.MaxQueueMessages < 1:
		return "group_commit_queue_messages", "must be at least 1"
	case c.MaxQueueBytes < 1:
		return "group_commit_queue_bytes", "must be at least 1"
	case c.MaxWait < 0:
		return "group_commit_max_wait", "must not be negative (0: no bound)"
	case c.Writers < 1 || c.Writers > maxGroupWriters:
		return "group_commit_writers", fmt.Sprintf("must be from 1 to %d", maxGroupWriters)
	}
	return "", ""
}

func boolSetting(key, usage string, field func(*Config) *bool) setting {
	return setting{key: key, usage: usage,
		parse: func(c *Config, v string) (err error) {
			if *field(c), err = strconv.ParseBool(strings.TrimSpace(v)); err != nil {
				return errors.New("must be true or false")
			}
			return nil
		},
		show: func(c Config) string { return strconv.FormatBool(*field(&c)) }}
}

func countSetting(key, usage string, field func(*Config) *int) setting {
	return setting{key: key, usage: usage,
		parse: func(c *Config, v string) (err error) {
			if *field(c), err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return errors.New("must be a whole number")
			}
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(*field(&c)) }}
}
