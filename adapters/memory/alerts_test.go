package memory_test

import (
	"context"
	"testing"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

func TestAlertStoreConformance(t *testing.T) {
	conformance.RunAlertStoreTests(t, func(context.Context, *testing.T) (ports.AlertStore, error) {
		return memory.NewAlertStore(), nil
	})
}

func TestRuleSetStoreConformance(t *testing.T) {
	conformance.RunRuleSetStoreTests(t, func(context.Context, *testing.T) (ports.RuleSetStore, error) {
		return memory.NewRuleSetStore(), nil
	})
}

func TestRescrubJobStoreConformance(t *testing.T) {
	conformance.RunRescrubJobStoreTests(t, func(context.Context, *testing.T) (ports.RescrubJobStore, error) {
		return memory.NewRuleSetStore(), nil
	})
}

func TestErasureJournalConformance(t *testing.T) {
	conformance.RunErasureJournalTests(t, func(context.Context, *testing.T) (ports.ErasureJournal, error) {
		return memory.NewErasureJournal(), nil
	})
}
