package capture_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// The reqlog core embedded in an application's own server: the middleware records
// the application's traffic into the ingest use case in the same process, and the
// reqlog API is served from the same mux.
func Example_embedded() {
	const apiKey = "rk_example_live_key"
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}

	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0 // list messages as soon as they are stored
	store := memory.New()
	ingest := app.NewIngester(store, policy, app.SystemClock{})
	reader := app.NewReader(store, policy, app.SystemClock{})
	keys := keyring.New([]keyring.Entry{{Account: scope.Account, Domain: scope.Domain, Digest: keyring.Digest(apiKey)}})

	recorder := capture.New(app.LocalSubmitter{Ingester: ingest, Principal: domain.Principal{Scope: scope}}, capture.Options{
		Name: func(r *http.Request) string { return "shop" },
		// The API's own traffic is not the application's.
		Skip: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") },
	})

	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.New(ingest, reader, keys, httpapi.Options{}))
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.URL.Query().Get("who"))
	})
	srv := httptest.NewServer(recorder.Middleware(mux))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/hello?who=gopher")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	// Close submits what is queued; a server would call it on shutdown.
	if err := recorder.Close(context.Background()); err != nil {
		panic(err)
	}

	client, err := httpclient.New(srv.URL, apiKey)
	if err != nil {
		panic(err)
	}
	for m, err := range client.All(context.Background(), httpclient.ListOptions{Name: "shop"}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(m.Method, m.Path, m.StatusCode, m.Response.Body)
	}
	fmt.Printf("%+v\n", recorder.Stats())
	// Output:
	// GET /hello?who=gopher 200 hello, gopher
	// {Captured:1 Submitted:1 Dropped:0 Failed:0}
}
