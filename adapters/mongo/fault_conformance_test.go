package mongo_test

import (
	"context"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/mongo"
	"github.com/reqlog/reqlog/adapters/mongo/mongotest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

// faultSelectionTimeout is how long the store waits for a stopped server before
// it reports ErrUnavailable; the service's 503 comes within about that, a
// retried write's second wait included.
const faultSelectionTimeout = 2 * time.Second

// The service on a dedicated embedded FerretDB that is stopped while clients
// submit, then started again.
func TestFaultConformance(t *testing.T) {
	t.Parallel()
	srv := mongotest.NewServer(t)
	conformance.RunFaultTests(t, conformance.FaultHarness{
		NewStore: func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
			return openWith(ctx, t, mongo.Config{URI: srv.URI(), Database: "fault", ServerSelectionTimeout: faultSelectionTimeout})
		},
		StopServer: func(t *testing.T) {
			if err := srv.Stop(opCtx(t)); err != nil {
				t.Fatalf("stopping FerretDB: %v", err)
			}
		},
		StartServer: func(t *testing.T) {
			if err := srv.Start(opCtx(t)); err != nil {
				t.Fatalf("starting FerretDB again: %v", err)
			}
		},
		Serve:           httpapitest.Serve,
		RequestTimeout:  15 * time.Second,
		RecoveryTimeout: recoverTimeout,
	})
}
