package elastic_test

import (
	"context"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/elastic"
	"github.com/reqlog/reqlog/adapters/elastic/elastictest"
	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/ports"
)

// The service on a dedicated node that is stopped while clients submit, then
// started again.
func TestFaultConformance(t *testing.T) {
	node := elastictest.NewNode(t)
	conformance.RunFaultTests(t, conformance.FaultHarness{
		NewStore: func(ctx context.Context, t *testing.T) (ports.MessageStore, error) {
			// Its data goes with the node: no index clean-up needed.
			return openStore(ctx, t, elastic.Config{
				Addresses: []string{node.URL()}, IndexPrefix: randomPrefix(t), RefreshInterval: testRefresh,
				RequestTimeout: 5 * time.Second, PingTimeout: time.Second,
			}), nil
		},
		StopServer: func(t *testing.T) {
			if err := node.Stop(); err != nil {
				t.Fatalf("stopping Elasticsearch: %v", err)
			}
		},
		StartServer: func(t *testing.T) {
			if err := node.Start(); err != nil {
				t.Fatalf("starting Elasticsearch again: %v", err)
			}
		},
		Serve:           httpapitest.Serve,
		RequestTimeout:  15 * time.Second, // RequestTimeout bounds every store call to 5 s
		RecoveryTimeout: 2 * time.Minute,
	})
}
