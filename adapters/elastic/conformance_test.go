package elastic_test

import (
	"context"
	"testing"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

// Every subtest gets its own index prefix, whose indices and template are
// deleted when it ends.
func storeMaker(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
	return openStore(ctx, t, testConfig(t)), nil
}

// The store deletes whole daily indices, as ports.ExpiredPurger allows.
func TestStoreConformance(t *testing.T) {
	conformance.RunStoreTests(t, storeMaker, conformance.CoarsePurge())
}

func TestAPIConformance(t *testing.T) {
	conformance.RunAPITests(t, alertingStoreMaker, httpapitest.Serve)
}

func TestRewriteConformance(t *testing.T) {
	conformance.RunRewriteTests(t, storeMaker)
}

func TestEraseConformance(t *testing.T) {
	conformance.RunEraseTests(t, storeMaker)
}
