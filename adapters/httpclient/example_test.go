package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// exampleService stands in for a remote reqlogd.
func exampleService(apiKey string) *httptest.Server {
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 0
	store := memory.New()
	keys := keyring.New([]keyring.Entry{{Account: "acme", Domain: domain.DomainLive, Digest: keyring.Digest(apiKey)}})
	return httptest.NewServer(httpapi.New(
		app.NewIngester(store, policy, app.SystemClock{}), app.NewReader(store, policy, app.SystemClock{}), keys, httpapi.Options{}))
}

// A remote client: submit exchanges, walk the listing, get one, handle errors.
func ExampleClient() {
	srv := exampleService("rk_example_live_key")
	defer srv.Close()
	ctx := context.Background()

	client, err := httpclient.New(srv.URL, "rk_example_live_key", httpclient.WithUserAgent("shop-backend/2.1"))
	if err != nil {
		panic(err)
	}
	start := time.Now().Add(-time.Minute)
	ids, err := client.Submit(ctx,
		httpclient.Exchange{Name: "shop", CreatedAt: start, Method: "GET", Path: "/orders/1",
			Request:  httpclient.ExchangeRequest{Header: http.Header{"Authorization": {"Bearer customer-secret"}}},
			Response: httpclient.ExchangeResponse{StatusCode: 200, Body: `{"id":1}`}},
		httpclient.Exchange{Name: "shop", CreatedAt: start.Add(time.Second), Method: "GET", Path: "/orders/2",
			Response: httpclient.ExchangeResponse{StatusCode: 404}},
	)
	if err != nil {
		panic(err)
	}
	fmt.Println("stored", len(ids))

	for m, err := range client.All(ctx, httpclient.ListOptions{Name: "shop", Limit: 1}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(m.Method, m.Path, m.StatusCode)
	}

	m, err := client.Get(ctx, ids[0].Reference)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Path, m.Request.Header.Get("Authorization"), m.Response.ContentType)

	_, err = client.Get(ctx, "msg_doesNotExist")
	fmt.Println(errors.Is(err, ports.ErrNotFound))
	// Output:
	// stored 2
	// GET /orders/2 404
	// GET /orders/1 200
	// /orders/1 *************** application/json
	// true
}

// Find an exchange by an order id, see how slow it was, and export the slow ones.
func ExampleClient_Export() {
	srv := exampleService("rk_example_live_key")
	defer srv.Close()
	ctx := context.Background()
	client, err := httpclient.New(srv.URL, "rk_example_live_key")
	if err != nil {
		panic(err)
	}
	start := time.Now().Add(-time.Minute)
	_, err = client.Submit(ctx,
		httpclient.Exchange{Name: "shop", CreatedAt: start, Method: "POST", Path: "/orders",
			Response: httpclient.ExchangeResponse{StatusCode: 500, Body: `{"order":"ord_8f7d","error":"timeout"}`},
			Duration: 2500 * time.Millisecond, HasDuration: true},
		httpclient.Exchange{Name: "shop", CreatedAt: start.Add(time.Second), Method: "GET", Path: "/orders/ord_1a2b",
			Response: httpclient.ExchangeResponse{StatusCode: 200, Body: `{"order":"ord_1a2b"}`},
			Duration: 42 * time.Millisecond, HasDuration: true},
	)
	if err != nil {
		panic(err)
	}

	page, err := client.List(ctx, httpclient.ListOptions{Search: "ord_8f7d"})
	if err != nil {
		panic(err)
	}
	fmt.Println(page.Messages[0].StatusCode, page.Messages[0].Duration, page.Messages[0].Response.Size)

	slow := time.Second
	for m, err := range client.Export(ctx, httpclient.ListOptions{Name: "shop", MinDuration: &slow}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(m.Method, m.Path, m.Duration)
	}

	stats, err := client.Stats(ctx, httpclient.StatsOptions{Interval: "1h"})
	if err != nil {
		panic(err)
	}
	fmt.Println(stats.Interval, stats.Total.Count, stats.Total.Status.ServerError, stats.TopPaths[0].Key)
	// Output:
	// 500 2.5s 38
	// POST /orders 2.5s
	// 1h 2 1 /orders
}
