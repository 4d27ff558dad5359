package httpapi

import "github.com/gorilla/mux"

// Internals the external tests check.

var OpenAPIDocumentForTest = openAPIDocument

// RegisterRoutesForTest registers every endpoint on r, as New does.
func RegisterRoutesForTest(r *mux.Router) { (&api{metrics: privateMetrics()}).routes(r) }
