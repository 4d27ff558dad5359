// Package httpclienttest runs a real reqlog service (the whole fx wiring of
// httpapitest on the memory store) for tests of code that talks to it over HTTP.
package httpclienttest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/reqlog/reqlog/adapters/httpapi/httpapitest"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
)

// The one key the service accepts, and its scope.
const (
	APIKey  = "rk_client_test_Z4p8Lw2Qx"
	Account = "acme"
)

// Service is a running reqlog service.
type Service struct {
	URL   string
	Store *memory.Store
}

// Start serves a fresh memory store on a real listener with a visibility delay of
// zero, so a message is listed as soon as it is stored. wrap, if not nil, decorates
// the service's handler (to inject faults); the service stops when the test ends.
func Start(t *testing.T, wrap func(http.Handler) http.Handler) *Service {
	t.Helper()
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	store := memory.New()
	handler := httpapitest.Serve(t, store, conformance.APIConfig{
		Keys:   []conformance.APIKey{{Account: Account, Domain: domain.DomainLive, Key: APIKey}},
		Policy: policy,
	})
	if wrap != nil {
		handler = wrap(handler)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &Service{URL: srv.URL, Store: store}
}
