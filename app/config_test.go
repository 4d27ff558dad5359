package app_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

func TestPolicyFromConfig(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay, cfg.Retention, cfg.MaxBatch, cfg.MaxBatchDays, cfg.MaskedHeaders = time.Second, time.Hour, 3, 4, []string{"X-A"}
	p := cfg.Policy()
	if p.VisibilityDelay != time.Second || p.Retention != time.Hour || p.MaxBatch != 3 || p.MaxBatchDays != 4 || !slices.Equal(p.MaskedHeaders, []string{"X-A"}) {
		t.Errorf("policy %+v does not follow the config", p)
	}
	if p.Sniff == nil || p.Sniff([]byte("<html><body>hi</body></html>")) != "text/html; charset=utf-8" {
		t.Error("the policy does not sniff with net/http")
	}
	if err := app.DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

// Validate names the field at fault as Config spells it: cmd/reqlogd turns it
// back into the setting.
func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*app.Config)
	}{
		{"VisibilityDelay", func(c *app.Config) { c.VisibilityDelay = -time.Second }},
		{"VisibilityDelay", func(c *app.Config) { c.VisibilityDelay, c.Retention = 2*time.Hour, time.Hour }},
		{"Retention", func(c *app.Config) { c.Retention = 0 }},
		{"PurgeInterval", func(c *app.Config) { c.PurgeInterval = 0 }},
		{"MaxBatch", func(c *app.Config) { c.MaxBatch = 0 }},
		{"MaxBatchDays", func(c *app.Config) { c.MaxBatchDays = -1 }},
		{"MaskedHeaders", func(c *app.Config) { c.MaskedHeaders = []string{"X-Ok", "Bad Header"} }},
		{"RedactedFields", func(c *app.Config) { c.RedactedFields = []string{"password", "-_"} }},
		{"Admission.Decoders", func(c *app.Config) { c.Admission.Decoders = -1 }},
		{"Admission.MaxWaiting", func(c *app.Config) { c.Admission.MaxWaiting = -1 }},
		{"Admission.MaxBytes", func(c *app.Config) { c.Admission.MaxBytes = 0 }},
		{"Walks.Walks", func(c *app.Config) { c.Walks.Walks = -1 }},
		{"Walks.PerAccount", func(c *app.Config) { c.Walks.Walks, c.Walks.PerAccount = 2, 3 }},
		{"Walks.PerAccount", func(c *app.Config) { c.Walks.PerAccount = 0 }},
		{"Walks.MaxWaiting", func(c *app.Config) { c.Walks.MaxWaiting = -1 }},
		{"GroupCommit.MaxBatchMessages", func(c *app.Config) { c.GroupCommit.MaxBatchMessages = 0 }},
		{"GroupCommit.MaxBatchBytes", func(c *app.Config) { c.GroupCommit.MaxBatchBytes = 0 }},
		{"GroupCommit.Linger", func(c *app.Config) { c.GroupCommit.Linger = 5 * time.Second }},
		{"GroupCommit.MaxWait", func(c *app.Config) { c.GroupCommit.MaxWait = -time.Second }},
		{"GroupCommit.Writers", func(c *app.Config) { c.GroupCommit.Writers = 0 }},
		{"GroupCommit.MaxQueueMessages", func(c *app.Config) { c.GroupCommit.MaxQueueMessages = 0 }},
		{"GroupCommit.MaxQueueBytes", func(c *app.Config) { c.GroupCommit.MaxQueueBytes = 0 }},
	} {
		cfg := app.DefaultConfig()
		tc.edit(&cfg)
		var invalid *domain.ValidationError
		if err := cfg.Validate(); !errors.As(err, &invalid) || len(invalid.Fields) != 1 || invalid.Fields[0].Field != tc.field {
			t.Errorf("Validate = %v, want one naming %s", err, tc.field)
		}
	}
	// Redaction off is allowed: an empty list, not a missing one.
	cfg := app.DefaultConfig()
	cfg.RedactedFields = []string{}
	if err := cfg.Validate(); err != nil {
		t.Errorf("redaction off: %v", err)
	}
}
