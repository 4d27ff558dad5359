package embedded_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/embedded"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// A core on the memory store (a test's; adapters/embedded/example runs one on
// SQLite): the middleware records the application's traffic into the core in
// the same process, and reqlog's API and portal are served from the same mux
// under /logs.
func Example() {
	const apiKey = "rk_example_live_key"
	scope := domain.Scope{Account: "acme", Domain: domain.DomainLive}
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0 // list messages as soon as they are stored

	core, err := embedded.New(context.Background(), embedded.Options{
		Store:    memory.New(),
		Keys:     keyring.New([]keyring.Entry{{Account: scope.Account, Domain: scope.Domain, Digest: keyring.Digest(apiKey)}}),
		Scope:    scope,
		BasePath: "/logs",
		Portal:   &portal.Config{}, // a deployment sets Secret, so sessions survive restarts
		App:      &cfg,
		Capture:  capture.Options{Name: func(*http.Request) string { return "shop" }},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/logs/", core.Handler())
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.URL.Query().Get("who"))
	})
	srv := httptest.NewServer(core.Capture(mux))

	resp, err := http.Get(srv.URL + "/hello?who=gopher")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()

	client, err := httpclient.New(srv.URL+"/logs", apiKey)
	if err != nil {
		panic(err)
	}
	// Captures are stored in the background: poll for this one.
	deadline := time.Now().Add(10 * time.Second)
	for range time.Tick(10 * time.Millisecond) {
		page, err := client.List(context.Background(), httpclient.ListOptions{Name: "shop"})
		if err != nil || time.Now().After(deadline) {
			panic(fmt.Sprint("the capture was not stored: ", err))
		}
		if len(page.Messages) > 0 {
			m := page.Messages[0]
			fmt.Println(m.Method, m.Path, m.StatusCode, m.Response.Body)
			break
		}
	}

	// A portal link for the owner of the application "shop", under /logs.
	session, err := client.CreatePortalSession(context.Background(), "shop", time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(session.URL, srv.URL+"/logs/portal#token="))

	// The server first, so that its last requests are captured, then the core.
	srv.Close()
	if err := core.Close(context.Background()); err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", core.CaptureStats())
	// Output:
	// GET /hello?who=gopher 200 hello, gopher
	// true
	// {Captured:1 Submitted:1 Dropped:0 Failed:0 Abandoned:0}
}
