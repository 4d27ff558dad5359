package httpapi

import (
	"time"

	"github.com/gorilla/mux"
)

// Internals the external tests check.

var OpenAPIDocumentForTest = openAPIDocument

// RegisterRoutesForTest registers every endpoint on r, as New does.
func RegisterRoutesForTest(r *mux.Router) { (&api{metrics: privateMetrics()}).routes(r) }

// SetDrainTimeoutForTest sets how long a refused body is read, until the test ends.
func SetDrainTimeoutForTest(cleanup func(func()), d time.Duration) {
	old := drainTimeout
	drainTimeout = d
	cleanup(func() { drainTimeout = old })
}
