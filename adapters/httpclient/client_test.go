package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/httpclient/httpclienttest"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// fastRetries keeps retry tests quick without changing what they prove.
var fastRetries = httpclient.WithRetryPolicy(httpclient.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second})

func newClient(t *testing.T, url string, opts ...httpclient.Option) *httpclient.Client {
	t.Helper()
	c, err := httpclient.New(url, httpclienttest.APIKey, append([]httpclient.Option{fastRetries}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// base is a created_at every test builds on: recent, with microseconds.
var base = time.Now().UTC().Truncate(time.Second).Add(-time.Hour + 123456*time.Microsecond)

func exchange(i int) httpclient.Exchange {
	status := []int{200, 404, 201, 503}[i%4]
	return httpclient.Exchange{
		Name:      []string{"shop", "billing"}[i%2],
		CreatedAt: base.Add(time.Duration(i) * time.Second),
		IPAddress: "192.0.2.10",
		Method:    []string{"get", "post"}[i%2],
		Path:      fmt.Sprintf("/orders/%d?verbose=1", i),
		Request: httpclient.ExchangeRequest{
			Header: http.Header{"Authorization": {"Bearer customer-secret"}, "Accept": {"application/json"}},
			Body:   "",
		},
		Response: httpclient.ExchangeResponse{
			StatusCode: status,
			Header:     http.Header{"Content-Type": {"application/json; charset=utf-8"}},
			Body:       fmt.Sprintf(`{"order":%d}`, i),
		},
	}
}

func submitN(t *testing.T, c *httpclient.Client, n int) []httpclient.Identity {
	t.Helper()
	exchanges := make([]httpclient.Exchange, n)
	for i := range exchanges {
		exchanges[i] = exchange(i)
	}
	ids, err := c.Submit(context.Background(), exchanges...)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("%d identities for %d exchanges", len(ids), n)
	}
	return ids
}

func TestSubmitAndGet(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	ids := submitN(t, c, 2)
	one, err := c.Submit(ctx, exchange(2))
	if err != nil || len(one) != 1 {
		t.Fatalf("single exchange: %v, %v", one, err)
	}
	if ids[0] == ids[1] || ids[0] == one[0] || !domain.IsReference(one[0].Reference) {
		t.Fatalf("identities %v %v: want distinct ids and references", ids, one)
	}

	for _, key := range []string{ids[1].ID, ids[1].Reference, strings.ToUpper(ids[1].ID)} {
		m, err := c.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		want := exchange(1)
		if m.ID != ids[1].ID || m.Reference != ids[1].Reference || m.Name != want.Name || m.Domain != domain.DomainLive ||
			m.Method != "POST" || m.Path != want.Path || m.StatusCode != 404 || m.IPAddress != "192.0.2.10" {
			t.Errorf("Get(%s) = %+v", key, m)
		}
		if !m.CreatedAt.Equal(want.CreatedAt) || m.UpdatedAt.IsZero() || m.CreatedAt.Location() != time.UTC {
			t.Errorf("created_at %v (want %v), updated_at %v", m.CreatedAt, want.CreatedAt, m.UpdatedAt)
		}
		if got := m.Request.Header.Get("Authorization"); got != domain.Mask {
			t.Errorf("Authorization came back as %q, want it masked", got)
		}
		if m.Response.Body != `{"order":1}` || m.Response.ContentType != "application/json" || m.Request.Header.Get("Accept") != "application/json" {
			t.Errorf("response %+v, request %+v", m.Response, m.Request)
		}
	}
	if nothing, err := c.Submit(ctx); err != nil || nothing != nil {
		t.Errorf("empty submit: %v, %v; want no call and no error", nothing, err)
	}
}

func TestListPagesAndIterates(t *testing.T) {
	var gets sync.Map // request count per query, to see where iteration stops
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				n, _ := gets.LoadOrStore("n", new(int))
				*n.(*int)++
			}
			next.ServeHTTP(w, r)
		})
	}
	svc := httpclienttest.Start(t, count)
	c := newClient(t, svc.URL)
	ctx := context.Background()
	ids := submitN(t, c, 7)

	page, err := c.List(ctx, httpclient.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 3 || !page.HasMore || page.NextCursor == "" || page.Messages[0].ID != ids[6].ID {
		t.Fatalf("first page: %d messages, has_more %v, cursor %q", len(page.Messages), page.HasMore, page.NextCursor)
	}
	var walked []string
	for m, err := range c.All(ctx, httpclient.ListOptions{Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, m.ID)
	}
	var want []string
	for i := len(ids) - 1; i >= 0; i-- {
		want = append(want, ids[i].ID)
	}
	if !slices.Equal(walked, want) {
		t.Errorf("All walked %v, want newest first %v", walked, want)
	}

	n, _ := gets.Load("n")
	before := *n.(*int)
	for range c.All(ctx, httpclient.ListOptions{Limit: 3}) {
		break
	}
	if after := *n.(*int); after != before+1 {
		t.Errorf("breaking after the first message sent %d requests, want 1", after-before)
	}

	last, err := c.List(ctx, httpclient.ListOptions{Limit: 7})
	if err != nil || len(last.Messages) != 7 || last.HasMore || last.NextCursor != "" {
		t.Errorf("one full page: %+v, %v", last, err)
	}
}

func TestListFilters(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ids := submitN(t, c, 8)
	for _, tc := range []struct {
		name string
		opts httpclient.ListOptions
		want []int // exchange indexes, newest first
	}{
		{"status class", httpclient.ListOptions{StatusCode: "5xx"}, []int{7, 3}},
		{"exact status", httpclient.ListOptions{StatusCode: "404"}, []int{5, 1}},
		{"name and method", httpclient.ListOptions{Name: "shop", Method: "get"}, []int{6, 4, 2, 0}},
		{"path", httpclient.ListOptions{Path: "/orders/3?verbose=1"}, []int{3}},
		{"path prefix", httpclient.ListOptions{PathPrefix: "/orders/1"}, []int{1}},
		{"ip address", httpclient.ListOptions{IPAddress: "192.0.2.10", Limit: 2}, []int{7, 6}},
		{"time range", httpclient.ListOptions{From: base.Add(2 * time.Second), To: base.Add(4 * time.Second)}, []int{3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := c.List(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, m := range page.Messages {
				got = append(got, m.ID)
			}
			for _, i := range tc.want {
				want = append(want, ids[i].ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	c := newClient(t, svc.URL)
	ctx := context.Background()

	bad := exchange(1)
	bad.Path = "orders"
	_, err := c.Submit(ctx, exchange(0), bad)
	var apiErr *httpclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Message == "" {
		t.Fatalf("invalid batch: err = %v, want a 400 APIError", err)
	}
	if len(apiErr.Fields) != 1 || apiErr.Fields[0].Field != "[1].path" || apiErr.Fields[0].Message == "" || apiErr.RequestID == "" {
		t.Errorf("fields %+v, request id %q", apiErr.Fields, apiErr.RequestID)
	}
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) || !slices.Equal(domain.InvalidItems(invalid, 2), []int{1}) {
		t.Errorf("errors.As(*domain.ValidationError) = %+v", invalid)
	}
	if page, _ := c.List(ctx, httpclient.ListOptions{}); len(page.Messages) != 0 {
		t.Errorf("a rejected batch stored %d messages", len(page.Messages))
	}

	if _, err := c.List(ctx, httpclient.ListOptions{Limit: 1000}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Fields[0].Field != "limit" {
		t.Errorf("limit 1000: err = %v, want a 400 naming limit", err)
	}

	for _, id := range []string{"msg_AAAAAAAAAAAA", "0190b5a2-7d4e-7c3a-9b1e-1234567890ab", "a/b", "../x"} {
		if _, err := c.Get(ctx, id); !errors.Is(err, ports.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("Get(%q): err = %v, want a 404 matching ports.ErrNotFound", id, err)
		}
	}
	if _, err := c.Get(ctx, ""); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get(\"\"): err = %v, want ports.ErrNotFound", err)
	}

	wrongKey, err := httpclient.New(svc.URL, "rk_not_a_key")
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrongKey.List(ctx, httpclient.ListOptions{})
	if !errors.Is(err, ports.ErrUnauthenticated) || !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("unknown key: err = %v, want a 401 matching ports.ErrUnauthenticated", err)
	}
	if errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("a 401 matches other sentinels: %v", err)
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct{ url, key string }{
		{"", "k"}, {"localhost:8080", "k"}, {"ftp://example.com", "k"}, {"http://", "k"},
		{"http://example.com?x=1", "k"}, {"http://example.com", ""}, {"http://example.com", "two words"},
		{"http://example.com", "line\nbreak"},
	} {
		if _, err := httpclient.New(tc.url, tc.key); err == nil {
			t.Errorf("New(%q, %q) accepted", tc.url, tc.key)
		}
	}
}

// The base URL may carry a path prefix, as behind a reverse proxy.
func TestBaseURLWithPathPrefix(t *testing.T) {
	svc := httpclienttest.Start(t, nil)
	target, err := url.Parse(svc.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(http.StripPrefix("/reqlog", httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)
	c := newClient(t, proxy.URL+"/reqlog/")
	ids := submitN(t, c, 1)
	if m, err := c.Get(context.Background(), ids[0].Reference); err != nil || m.ID != ids[0].ID {
		t.Errorf("Get through the prefix: %+v, %v", m, err)
	}
}

// The client follows no redirect: net/http would send the API key along to the
// same host, over plain http too. The redirect comes back as an APIError, and a
// caller's own http.Client is left as it was.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var reached sync.Map // Authorization values the redirect target saw
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(r.Header.Get("Authorization"), true)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(target.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	own := &http.Client{Timeout: 10 * time.Second}
	for name, c := range map[string]*httpclient.Client{
		"default client": newClient(t, redirecting.URL),
		"own client":     newClient(t, redirecting.URL, httpclient.WithHTTPClient(own)),
	} {
		_, err := c.List(context.Background(), httpclient.ListOptions{})
		var apiErr *httpclient.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTemporaryRedirect {
			t.Errorf("%s: List through a redirect: %v, want a 307 APIError", name, err)
		}
	}
	reached.Range(func(auth, _ any) bool {
		t.Errorf("the redirect was followed, with Authorization %q", auth)
		return true
	})
	if own.CheckRedirect != nil {
		t.Error("the caller's http.Client was changed")
	}
}
