package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
)

func TestGroupCommitIsOnByDefault(t *testing.T) {
	cfg, err := app.LoadConfig(nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.GroupCommit, app.DefaultGroupCommitConfig(); !got.Enabled || got != want {
		t.Errorf("default group commit %+v, want %+v", got, want)
	}
}

func TestGroupCommitSettingsFromEachSource(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		check      func(app.GroupCommitConfig) bool
	}{
		{"group_commit", "false", func(c app.GroupCommitConfig) bool { return !c.Enabled }},
		{"group_commit_max_messages", "64", func(c app.GroupCommitConfig) bool { return c.MaxBatchMessages == 64 }},
		{"group_commit_max_bytes", "1048576", func(c app.GroupCommitConfig) bool { return c.MaxBatchBytes == 1<<20 }},
		{"group_commit_linger", "2ms", func(c app.GroupCommitConfig) bool { return c.Linger == 2*time.Millisecond }},
		{"group_commit_writers", "8", func(c app.GroupCommitConfig) bool { return c.Writers == 8 }},
		{"group_commit_queue_messages", "100", func(c app.GroupCommitConfig) bool { return c.MaxQueueMessages == 100 }},
		{"group_commit_queue_bytes", "1000", func(c app.GroupCommitConfig) bool { return c.MaxQueueBytes == 1000 }},
	} {
		for source, load := range map[string]func() (app.Config, error){
			"environment": func() (app.Config, error) {
				return app.LoadConfig(nil, envOf(map[string]string{envName(tc.key): tc.value}))
			},
			"file": func() (app.Config, error) {
				return app.LoadConfig(nil, envOf(map[string]string{app.ConfigFileEnv: writeYAML(t, tc.key, tc.value)}))
			},
			"flag": func() (app.Config, error) {
				return app.LoadConfig([]string{"-" + flagName(tc.key) + "=" + tc.value}, envOf(nil))
			},
		} {
			t.Run(tc.key+"/"+source, func(t *testing.T) {
				cfg, err := load()
				if err != nil {
					t.Fatal(err)
				}
				if !tc.check(cfg.GroupCommit) {
					t.Errorf("%s=%s from the %s not applied: %+v", tc.key, tc.value, source, cfg.GroupCommit)
				}
			})
		}
	}
}

func TestInvalidGroupCommitSettingsNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ env, value string }{
		{"REQLOG_GROUP_COMMIT", "maybe"},
		{"REQLOG_GROUP_COMMIT_MAX_MESSAGES", "0"},
		{"REQLOG_GROUP_COMMIT_MAX_MESSAGES", "many"},
		{"REQLOG_GROUP_COMMIT_MAX_BYTES", "-1"},
		{"REQLOG_GROUP_COMMIT_LINGER", "-1ms"},
		{"REQLOG_GROUP_COMMIT_LINGER", "5s"},
		{"REQLOG_GROUP_COMMIT_WRITERS", "0"},
		{"REQLOG_GROUP_COMMIT_WRITERS", "100000"},
		{"REQLOG_GROUP_COMMIT_QUEUE_MESSAGES", "0"},
		{"REQLOG_GROUP_COMMIT_QUEUE_BYTES", "0"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			_, err := app.LoadConfig(nil, envOf(map[string]string{tc.env: tc.value}))
			var cfgErr *app.ConfigError
			if !errors.As(err, &cfgErr) || cfgErr.Setting != tc.env || cfgErr.Value != tc.value {
				t.Errorf("LoadConfig: %v, want a ConfigError naming %s and %q", err, tc.env, tc.value)
			}
		})
	}
}
