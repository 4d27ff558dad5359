package sqlite_test

import (
	"context"
	"testing"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

// Retention drops whole day files, so the suite's check that a message
// expiring exactly at the purge time is deleted does not apply.
func TestStoreConformance(t *testing.T) {
	conformance.RunStoreTests(t, storeMaker(), conformance.CoarsePurge())
}

func TestEraseConformance(t *testing.T) {
	conformance.RunEraseTests(t, storeMaker())
}

func TestAPIConformance(t *testing.T) {
	conformance.RunAPITests(t, alertingStoreMaker(), httpapitest.Serve)
}

// storeMaker opens a store on a fresh directory per subtest.
func storeMaker() conformance.StoreMaker {
	return func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
		return openStore(ctx, t, sqlite.Config{Dir: t.TempDir()})
	}
}

// openStore opens a store on cfg and closes it when t ends.
func openStore(ctx context.Context, t *testing.T, cfg sqlite.Config) (*sqlite.Store, error) {
	t.Helper()
	s, err := sqlite.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return s, nil
}

func TestRewriteConformance(t *testing.T) {
	conformance.RunRewriteTests(t, storeMaker())
}
