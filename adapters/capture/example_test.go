package capture_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// The reqlog core embedded in an application's own server: the middleware records
// the application's traffic into the ingest use case in the same process, and the
// reqlog API and the customer portal are served from the same mux.
func Example_embedded() {
	const apiKey = "rk_example_live_key"
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}

	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0 // list messages as soon as they are stored
	store := memory.New()
	ingest := app.NewIngester(store, policy, app.SystemClock{})
	reader := app.NewReader(store, policy, app.SystemClock{})
	keys := keyring.New([]keyring.Entry{{Account: scope.Account, Domain: scope.Domain, Digest: keyring.Digest(apiKey)}})
	// A deployment configures the secret, so sessions survive restarts and every
	// replica accepts them.
	customerPortal, err := portal.New(portal.Config{Secret: portal.RandomSecret()}, app.SystemClock{})
	if err != nil {
		panic(err)
	}
	api := httpapi.New(ingest, reader, customerPortal.KeyStore(keys), httpapi.Options{Portal: customerPortal})

	recorder := capture.New(app.LocalSubmitter{Ingester: ingest, Principal: domain.Principal{Scope: scope}}, capture.Options{
		Name: func(r *http.Request) string { return "shop" },
		// The API's and the portal's own traffic is not the application's.
		Skip: func(r *http.Request) bool {
			return strings.HasPrefix(r.URL.Path, "/v1/") || strings.HasPrefix(r.URL.Path, portal.PagePath)
		},
	})

	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle(portal.PagePath, api)
	mux.Handle(portal.PagePath+"/", api)
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

	// A portal link for the owner of the application "shop": its token reads
	// shop's messages only.
	session, err := client.CreatePortalSession(context.Background(), "shop", time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(session.URL, srv.URL+"/portal#token="))
	owner, err := httpclient.New(srv.URL, session.Token)
	if err != nil {
		panic(err)
	}
	page, err := owner.List(context.Background(), httpclient.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Messages), page.Messages[0].Name)
	// Output:
	// GET /hello?who=gopher 200 hello, gopher
	// {Captured:1 Submitted:1 Dropped:0 Failed:0 Abandoned:0}
	// true
	// 1 shop
}
