// Package httpclient is a Go client for reqlog's HTTP API (shared/spec/CONTRACT.md):
// submit exchanges, list and search messages page by page or with an iterator, get
// one message, compute traffic statistics, and stream an export.
// Replies 429 and 503 and transport failures are retried with capped, jittered
// backoff that honours Retry-After; every submission carries an Idempotency-Key, so
// a retry cannot store anything twice.
package httpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// DefaultUserAgent is sent unless WithUserAgent says otherwise.
const DefaultUserAgent = "reqlog-go-client/1"

// RetryPolicy bounds retries of GETs and of POSTs that carry an Idempotency-Key.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt too; 1 disables retries.
	MaxAttempts int
	// BaseDelay is the backoff before the first retry; it doubles for each further
	// one. The client waits a random time between half of it and all of it.
	BaseDelay time.Duration
	// MaxDelay caps one wait. A Retry-After beyond it ends the retries: the client
	// returns the error rather than wait less than it was told.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is used unless WithRetryPolicy says otherwise: up to four
// attempts; the service asks for 5 s after a 503, which fits under MaxDelay.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 30 * time.Second}
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc (timeouts, proxies, TLS, transport);
// its CheckRedirect is replaced: the client follows no redirect.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetryPolicy replaces DefaultRetryPolicy; zero fields keep their defaults.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithSource says what captures the exchanges the client submits (the
// X-Reqlog-Source header), for the account's rules scoped to sources: a
// capturing proxy says rules.SourceProxy. Without it they count as
// rules.SourceAPI.
func WithSource(src rules.Source) Option { return func(c *Client) { c.source = src } }

// Client talks to one reqlog service with one API key. It is safe for concurrent use.
type Client struct {
	messages  *url.URL // {base}/v1/messages
	apiKey    string
	http      *http.Client
	userAgent string
	retry     RetryPolicy
	source    rules.Source // "": not sent
	bodyCut   int          // 0: not sent
}

var _ ports.BodyCutter = (*Client)(nil)

// CuttingBodiesAt is a copy of c whose submissions ask the service to hold
// each body to limit bytes once its privacy rules have run (the
// X-Reqlog-Body-Cut header): capture.New calls it.
func (c *Client) CuttingBodiesAt(limit int) ports.ExchangeSubmitter {
	copied := *c
	copied.bodyCut = limit
	return &copied
}

// New returns a client for the service at baseURL (http or https, optionally with a
// path prefix) authenticating with apiKey.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	base, err := url.Parse(baseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("httpclient: base URL %q must be an absolute http or https URL", baseURL)
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("httpclient: base URL %q must not have a query or fragment", baseURL)
	}
	if apiKey == "" || strings.ContainsFunc(apiKey, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return nil, errors.New("httpclient: the API key must be visible ASCII characters without spaces")
	}
	if base.Path == "" {
		base.Path = "/" // else JoinPath gives a relative path
	}
	c := &Client{
		messages:  base.JoinPath("v1", "messages"),
		apiKey:    apiKey,
		http:      http.DefaultClient,
		userAgent: DefaultUserAgent,
		retry:     DefaultRetryPolicy(),
	}
	for _, opt := range opts {
		opt(c)
	}
	def := DefaultRetryPolicy()
	if c.retry.MaxAttempts < 1 {
		c.retry.MaxAttempts = def.MaxAttempts
	}
	if c.retry.BaseDelay <= 0 {
		c.retry.BaseDelay = def.BaseDelay
	}
	if c.retry.MaxDelay <= 0 {
		c.retry.MaxDelay = def.MaxDelay
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	c.http = withoutRedirects(c.http)
	return c, nil
}

// withoutRedirects is a copy of hc that follows no redirect: the API never
// answers one, and net/http keeps Authorization on a redirect to the same host,
// from https to http too, so following one could send the key in clear. A
// redirect is returned as the reply it is, an *APIError.
func withoutRedirects(hc *http.Client) *http.Client {
	copied := *hc
	copied.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &copied
}

// call is one logical API call; do may send it several times.
type call struct {
	method string
	url    *url.URL
	body   []byte // nil for GET
	header http.Header
}

// retryable: GETs are safe to repeat; a POST only with an Idempotency-Key.
func (r call) retryable() bool {
	return r.method == http.MethodGet || r.header.Get(idempotencyKeyHeader) != ""
}

func (r call) String() string { return r.method + " " + r.url.Path }

// do sends r until it gets a reply that is not worth retrying, and returns that
// reply's body; any non-2xx reply is returned as an *APIError. The caller decodes
// the body. A reply cut short is retried like no reply.
func (c *Client) do(ctx context.Context, r call) ([]byte, error) {
	var raw []byte
	err := c.retrying(ctx, r, func() (time.Duration, error) {
		resp, retryAfter, err := c.attempt(ctx, r)
		if err != nil {
			return retryAfter, err
		}
		defer resp.Body.Close()
		if raw, err = io.ReadAll(resp.Body); err != nil {
			return 0, fmt.Errorf("httpclient: %s: read the reply: %w: %w", r, ports.ErrUnavailable, err)
		}
		return 0, nil
	})
	return raw, err
}

// open is do for a reply to stream: it returns a 2xx reply with its body unread,
// for the caller to close.
func (c *Client) open(ctx context.Context, r call) (*http.Response, error) {
	var resp *http.Response
	err := c.retrying(ctx, r, func() (retryAfter time.Duration, err error) {
		resp, retryAfter, err = c.attempt(ctx, r)
		return retryAfter, err
	})
	return resp, err
}

// retrying runs try, which sends r once, until it succeeds or fails in a way not
// worth retrying; try returns how long the service asked to wait.
func (c *Client) retrying(ctx context.Context, r call, try func() (time.Duration, error)) error {
	for attempt := 1; ; attempt++ {
		retryAfter, err := try()
		if err == nil {
			return nil
		}
		wait := max(c.backoff(attempt), retryAfter)
		if !r.retryable() || !shouldRetry(err) || attempt >= c.retry.MaxAttempts || wait > c.retry.MaxDelay {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (stopped retrying: %w)", err, ctx.Err())
		case <-timer.C:
		}
	}
}

// backoff before retry number attempt (1, 2, ...): "equal jitter" on a doubling,
// capped delay.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retry.MaxDelay
	if shift := attempt - 1; shift < 32 && c.retry.BaseDelay<<shift < d && c.retry.BaseDelay<<shift > 0 {
		d = c.retry.BaseDelay << shift
	}
	return d/2 + rand.N(d/2+1)
}

// shouldRetry: rate limiting, an unavailable store, or no reply at all
// (ports.ErrorKind.Retryable; an *APIError wraps the sentinel of its status).
func shouldRetry(err error) bool {
	return ports.KindOf(err).Retryable()
}

// maxErrorBody bounds how much of an error reply is read.
const maxErrorBody = 1 << 20

// attempt sends r once. It returns a 2xx reply, its body unread, or an error and
// how long the service asked to wait before a retry.
func (c *Client) attempt(ctx context.Context, r call) (*http.Response, time.Duration, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url.String(), body)
	if err != nil {
		return nil, 0, fmt.Errorf("httpclient: %s: %w", r, err)
	}
	req.Header.Set("Accept", "application/json")
	for name, values := range r.header {
		req.Header[name] = values
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("httpclient: %s: %w", r, ctx.Err())
		}
		// No reply: the service may be down or restarting; worth another try.
		return nil, 0, fmt.Errorf("httpclient: %s: %w: %w", r, ports.ErrUnavailable, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody)) // lets the connection be reused
	apiErr := newAPIError(resp, raw)
	return nil, apiErr.RetryAfter, fmt.Errorf("httpclient: %s: %w", r, apiErr)
}

// retryAfter reads Retry-After as seconds or an HTTP date; 0 when absent or past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
