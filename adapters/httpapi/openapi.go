package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every route, written by hand
// and kept true by openapi_test.go (the router and real replies against it).
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI answers GET /v1/openapi.json; no API key is needed.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
}
