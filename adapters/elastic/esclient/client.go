package esclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// Config is what the client takes of the store's configuration, with the
// store's defaults filled in.
type Config struct {
	Addresses          []string
	Username, Password string
	APIKey             string
	// MaxRetries bounds the retries of one request; negative disables them.
	MaxRetries int
	// RequestTimeout bounds a call whose context has no earlier deadline.
	RequestTimeout time.Duration
	// ShardWait is the bulk requests' timeout (see Creates).
	ShardWait time.Duration
	// DurabilityWait bounds how long Creates waits for documents it found
	// already there to be durable.
	DurabilityWait time.Duration
	// Transport carries the requests; nil is a transport of the client's own
	// that asks for uncompressed replies.
	Transport http.RoundTripper
}

// Client sends requests to the cluster and turns its failures into the
// ports' sentinels. It is safe for concurrent use.
type Client struct {
	cfg   Config
	es    *elasticsearch.Client
	bulks *elasticsearch.Client // for bulk requests: no retry of a 503 (bulkClientConfig)
}

// New builds the client without touching the network. Close releases it.
func New(cfg Config) (*Client, error) {
	es, err := elasticsearch.NewClient(cfg.clientConfig())
	if err != nil {
		return nil, fmt.Errorf("elastic: client: %w", err)
	}
	bulks, err := elasticsearch.NewClient(cfg.bulkClientConfig())
	if err != nil {
		return nil, fmt.Errorf("elastic: client: %w", err)
	}
	return &Client{cfg: cfg, es: es, bulks: bulks}, nil
}

// WithOwnConnections is a client of the same cluster sending every request
// through connections of its own, none of its 503s retried (as bulk
// requests), to be closed after use. A request cut short by its context
// counts, in the official client, as its node failing, which the client then
// leaves out for a minute: work bounded by a short budget must not do that to
// the store's clients.
func (c *Client) WithOwnConnections() (*Client, error) {
	es, err := elasticsearch.NewClient(c.cfg.bulkClientConfig())
	if err != nil {
		return nil, fmt.Errorf("elastic: client: %w", err)
	}
	return &Client{cfg: c.cfg, es: es, bulks: es}, nil
}

// Close releases the client; it is unusable afterwards.
func (c *Client) Close(ctx context.Context) error {
	if err := errors.Join(c.es.Close(ctx), c.bulks.Close(ctx)); err != nil {
		return fmt.Errorf("elastic: close: %w", err)
	}
	return nil
}

// RequestTimeout bounds a call whose context has no earlier deadline.
func (c *Client) RequestTimeout() time.Duration { return c.cfg.RequestTimeout }

// Bounded applies RequestTimeout to ctx unless it already ends sooner.
func (c *Client) Bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.RequestTimeout)
}

// Do runs req and decodes a successful JSON reply into out (nil: discard it;
// a ReplyDecoder decodes itself). Error replies become errors of op.
func (c *Client) Do(ctx context.Context, op string, req esapi.Request, out any) error {
	_, err := c.doWith(ctx, c.es, op, req, out, nil)
	return err
}

// DoAllowing is Do where an error reply of a status in allowed (a 404 of a
// missing document, a 409 of a lost compare-and-set) is no error: it is
// discarded, and its status returned as any other.
func (c *Client) DoAllowing(ctx context.Context, op string, req esapi.Request, out any, allowed ...int) (int, error) {
	return c.doWith(ctx, c.es, op, req, out, allowed)
}

// doWith is DoAllowing on client.
func (c *Client) doWith(ctx context.Context, client esapi.Transport, op string, req esapi.Request, out any, allowed []int) (int, error) {
	count(ctx, op)
	res, err := req.Do(ctx, client)
	if err != nil {
		return 0, transportError(ctx, op, err)
	}
	defer res.Body.Close()
	if res.IsError() && !slices.Contains(allowed, res.StatusCode) {
		return res.StatusCode, replyError(op, res)
	}
	if out == nil || res.IsError() {
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, nil
	}
	if r, ok := out.(ReplyDecoder); ok {
		err = r.DecodeReply(res.Body)
		// Reading on lets the connection be reused, unless much is left unread.
		_, _ = io.CopyN(io.Discard, res.Body, maxDrainBytes)
	} else {
		err = json.NewDecoder(res.Body).Decode(out)
	}
	if err != nil {
		return res.StatusCode, transportError(ctx, op, fmt.Errorf("decode reply: %w", err))
	}
	return res.StatusCode, nil
}

// ReplyDecoder decodes a reply as it streams in, reading only what it needs.
type ReplyDecoder interface {
	DecodeReply(r io.Reader) error
}

// maxDrainBytes bounds what is read past the part of a reply a ReplyDecoder
// needed; beyond it the connection is closed instead.
const maxDrainBytes = 1 << 20

// JSONBody is v in JSON, as a request body.
func JSONBody(v any) (io.Reader, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("elastic: encode request: %w", err)
	}
	return bytes.NewReader(raw), nil
}

// maxIdleConnsPerNode keeps enough connections open for the service's
// concurrent reads and bulk writes; Go's default of 2 closes and reopens
// connections under any concurrency.
const maxIdleConnsPerNode = 32

// bulkClientConfig is clientConfig for bulk requests: a whole request
// answered 503 (no elected master, a cluster block) already waited ShardWait
// on the cluster, so it is not retried, or each retry would wait as long
// again; a write refused that way is answered 503 and retried by its client.
// Network errors are still retried on the next node.
func (cfg Config) bulkClientConfig() elasticsearch.Config {
	c := cfg.clientConfig()
	c.RetryOnStatus = []int{429, 502, 504}
	return c
}

// clientConfig is the official client's configuration for cfg.
func (cfg Config) clientConfig() elasticsearch.Config {
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Replies come uncompressed: un-gzipping search replies was most of the
		// service's CPU per fetch, and a cluster is near the service. Requests
		// are not compressed either.
		t.DisableCompression = true
		t.MaxIdleConnsPerHost = maxIdleConnsPerNode
		transport = t
	}
	return elasticsearch.Config{
		Transport:     transport,
		Addresses:     cfg.Addresses,
		Username:      cfg.Username,
		Password:      cfg.Password,
		APIKey:        cfg.APIKey,
		RetryOnStatus: []int{429, 502, 503, 504},
		DisableRetry:  cfg.MaxRetries < 0,
		MaxRetries:    max(cfg.MaxRetries, 0),
		RetryBackoff:  func(attempt int) time.Duration { return time.Duration(attempt) * 100 * time.Millisecond },
	}
}
