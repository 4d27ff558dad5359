package capture_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/conformance"
)

func TestPatternRoute(t *testing.T) {
	for pattern, want := range map[string]string{
		"GET /orders/{id}":             "/orders/{id}",
		"POST  /orders/{id}/pay":       "/orders/{id}/pay",
		"example.com/orders/{id}":      "/orders/{id}",
		"GET example.com/files/{p...}": "/files/{p...}",
		"/":                            "/",
		"/static/{$}":                  "/static/{$}",
		"":                             "",
	} {
		if got := capture.PatternRoute(&http.Request{Pattern: pattern}); got != want {
			t.Errorf("PatternRoute(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// Behind the middleware, a ServeMux's match is the route; without a match
// (404) or with a template the service would refuse, none is sent.
func TestRouteFromServeMux(t *testing.T) {
	m := http.NewServeMux()
	m.HandleFunc("GET /orders/{id}", okHandler)
	m.HandleFunc("POST example.com/orders/{id}/pay", okHandler)
	sub := &fakeSubmitter{}
	rec, srv := startRecorder(t, sub, capture.Options{}, m)
	get(t, srv.URL+"/orders/ord_8f7d?expand=1")
	get(t, srv.URL+"/nowhere")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders/ord_1/pay", strings.NewReader("{}"))
	req.Host = "example.com"
	send(t, req)
	conformance.WaitFor(t, "three exchanges", func() bool { return rec.Stats().Captured == 3 })
	closeRecorder(t, rec)
	var got []string
	for _, e := range sub.exchanges() {
		got = append(got, e.Path+" "+e.Route)
	}
	want := []string{"/orders/ord_8f7d?expand=1 /orders/{id}", "/nowhere ", "/orders/ord_1/pay /orders/{id}/pay"}
	if !slices.Equal(got, want) {
		t.Errorf("paths and routes %q, want %q", got, want)
	}
}

// Another router's match through the Route hook: gorilla/mux, with the
// middleware inside the router; a hook's invalid result is not sent.
func TestRouteFromAHook(t *testing.T) {
	sub := &fakeSubmitter{}
	rec := capture.New(sub, capture.Options{Route: func(r *http.Request) string {
		if r.URL.Path == "/bad" {
			return "/bad?query"
		}
		if route := mux.CurrentRoute(r); route != nil {
			template, _ := route.GetPathTemplate()
			return template
		}
		return ""
	}})
	router := mux.NewRouter()
	router.Use(rec.Middleware)
	router.HandleFunc("/orders/{id}", okHandler)
	router.HandleFunc("/bad", okHandler)
	srv := httptest.NewServer(router)
	defer srv.Close()
	get(t, srv.URL+"/orders/42")
	get(t, srv.URL+"/bad")
	conformance.WaitFor(t, "two exchanges", func() bool { return rec.Stats().Captured == 2 })
	closeRecorder(t, rec)
	var got []string
	for _, e := range sub.exchanges() {
		got = append(got, e.Route)
	}
	if want := []string{"/orders/{id}", ""}; !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q", got, want)
	}
}
