// Package webhook delivers alert events over HTTP as the Standard Webhooks
// specification (standardwebhooks.com) says: a JSON body {type, timestamp,
// data}, and the headers webhook-id (the event's id, the same on every retry
// and to every endpoint, so a receiver can drop a repeat), webhook-timestamp
// (Unix seconds of the attempt) and webhook-signature ("v1," and the base64
// HMAC-SHA256 of "id.timestamp.body" under the endpoint's whsec_ key; one
// signature per secret, space-separated, while a rotated secret still
// signs). An endpoint in Slack's format gets {"text": ...} instead, readable
// in a channel; it is signed all the same.
//
// Safe to point at the internet: a URL whose host resolves to a loopback,
// private, link-local (the cloud metadata address among them), unspecified,
// multicast, shared (100.64.0.0/10) or reserved address, or to an IPv6 one
// that carries an IPv4 address (NAT64, 6to4, ::a.b.c.d...), is refused when an
// endpoint is created, and again when each connection is made, on the address
// actually dialled, so a name that resolves elsewhere later (DNS rebinding)
// cannot reach one either. Config.AllowPrivate lifts that, for receivers on
// the service's own host or network. No proxy from the environment is used,
// redirects are not followed (a 3xx is a failed attempt), each attempt is
// bounded by Config.Timeout, and only MaxResponseRead bytes of a reply are
// read (domain.MaxLoggedResponse of them kept in the delivery log).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/reqlog/reqlog/adapters/internal/alertjson"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

// The headers of Standard Webhooks.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Defaults of Config.
const (
	DefaultTimeout = 10 * time.Second
	// resolveTimeout bounds the DNS lookup of a URL being checked.
	resolveTimeout = 5 * time.Second
	// MaxResponseRead is how much of a reply is read; the rest is dropped with
	// the connection.
	MaxResponseRead = 64 << 10
	// MaxBodyBytes bounds what is sent: an event is far smaller (its paths are
	// cut to alertjson.MaxPayloadPath).
	MaxBodyBytes = 256 << 10
)

// Config configures the sender.
type Config struct {
	// AllowPrivate lets endpoints resolve to loopback, private, link-local and
	// other internal addresses (refused by default).
	AllowPrivate bool
	// Timeout bounds one attempt: connecting, sending and reading the reply.
	Timeout time.Duration
}

// DefaultConfig returns the defaults of every field.
func DefaultConfig() Config { return Config{Timeout: DefaultTimeout} }

// Validate reports an unusable field as a *domain.ValidationError naming it.
func (c Config) Validate() error {
	if c.Timeout < time.Second || c.Timeout > time.Minute {
		return &domain.ValidationError{Message: "webhook: config", Fields: []domain.FieldError{
			{Field: "Timeout", Message: "must be from 1s to 1m"}}}
	}
	return nil
}

// Sender is the ports.WebhookSender on net/http.
type Sender struct {
	cfg      Config
	client   *http.Client
	resolver *net.Resolver
}

var _ ports.WebhookSender = (*Sender)(nil)

// New returns a sender; cfg must be valid.
func New(cfg Config) *Sender {
	s := &Sender{cfg: cfg, resolver: net.DefaultResolver}
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: s.controlDial}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	s.client = &http.Client{Transport: transport, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s
}

// errRefusedAddress marks a destination the sender will not reach.
var errRefusedAddress = errors.New("resolves to a loopback, private, link-local or other internal address")

// controlDial checks the address about to be dialled: the one DNS gave for
// this very connection.
func (s *Sender) controlDial(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("webhook: dialling %q: not an IP address", host)
	}
	if !s.allowed(ip) {
		return fmt.Errorf("webhook: %s %w", ip, errRefusedAddress)
	}
	return nil
}

func (s *Sender) allowed(ip netip.Addr) bool { return s.cfg.AllowPrivate || Public(ip) }

// refusedPrefixes are the ranges, beyond what netip classifies, that are not
// the internet: shared address space (carrier NAT, Alibaba's metadata
// 100.100.100.200), "this network", IETF protocol assignments, benchmarking,
// reserved, documentation; and the IPv6 ranges that carry an IPv4 address, so
// could lead to any of them: IPv4-compatible (::a.b.c.d, deprecated, which
// netip calls neither loopback nor private), IPv4-translated
// (::ffff:0:a.b.c.d), NAT64, 6to4 and Teredo. (IPv4-mapped addresses are
// judged as their IPv4 address.)
var refusedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "::/96", "::ffff:0:0:0/96", "64:ff9b::/96",
		"64:ff9b:1::/48", "2001::/32", "2001:db8::/32", "2002::/16", "100::/64"} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// Public reports whether ip is an address of the internet: not loopback,
// private, link-local, unspecified, multicast nor in refusedPrefixes
// (IPv4-mapped IPv6 addresses are judged as their IPv4 address).
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || !ip.IsValid() {
		return false
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// CheckURL resolves rawURL's host and refuses it, naming "url", when it does
// not resolve or when any of its addresses is not public (unless
// AllowPrivate).
func (s *Sender) CheckURL(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return invalidURL("must be an absolute http or https URL")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !s.allowed(ip) {
			return invalidURL(errRefusedAddress.Error() + " (set REQLOG_ALERTS_ALLOW_PRIVATE_WEBHOOKS to allow one)")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := s.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return invalidURL("has a host that does not resolve")
	}
	for _, ip := range ips {
		if !s.allowed(ip) {
			return invalidURL(errRefusedAddress.Error() + " (set REQLOG_ALERTS_ALLOW_PRIVATE_WEBHOOKS to allow one)")
		}
	}
	return nil
}

func invalidURL(reason string) error {
	return &domain.ValidationError{Message: "the webhook endpoint is invalid", Fields: []domain.FieldError{{Field: "url", Message: reason}}}
}

// Body is what an endpoint is sent for an event: the Standard Webhooks JSON,
// or Slack's {"text": ...}.
func Body(format alerting.EndpointFormat, e alerting.Event) ([]byte, error) {
	if format == alerting.FormatSlack {
		return slackBody(e)
	}
	return alertjson.EncodeEvent(e)
}

// Sign returns the Standard Webhooks signature ("v1," + base64 HMAC-SHA256 of
// "id.timestamp.body") of body under secret (whsec_ + base64 key).
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := alerting.WebhookKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Signatures is the webhook-signature header's value: one signature per
// secret, space-separated.
func Signatures(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		var err error
		if sigs[i], err = Sign(secret, id, timestamp, body); err != nil {
			return "", err
		}
	}
	return strings.Join(sigs, " "), nil
}

// Errors of Verify.
var (
	ErrMissingHeaders = errors.New("webhook: the webhook-id, webhook-timestamp or webhook-signature header is missing")
	ErrTimestamp      = errors.New("webhook: the timestamp is not within the tolerance of now")
	ErrNoSignature    = errors.New("webhook: no signature matches")
)

// Verify checks a delivery as a receiver should: its timestamp lies within
// tolerance of now, and one of its v1 signatures is that of secret over the
// id, the timestamp and body. It compares in constant time.
func Verify(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeaders
	}
	seconds, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(seconds, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want, err := Sign(secret, id, seconds, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return ErrNoSignature
}

// Send makes one attempt to deliver d to e at time at.
func (s *Sender) Send(ctx context.Context, e alerting.Endpoint, d alerting.Delivery, at time.Time) (alerting.AttemptOutcome, string) {
	body, err := Body(e.Format, d.Event)
	if err == nil && len(body) > MaxBodyBytes {
		err = fmt.Errorf("the event's body is %d bytes, over the limit of %d", len(body), MaxBodyBytes)
	}
	if err != nil {
		return alerting.AttemptOutcome{Error: err.Error()}, ""
	}
	timestamp := at.Unix()
	signature, err := Signatures(e.SigningSecrets(at), d.Event.ID, timestamp, body)
	if err != nil {
		return alerting.AttemptOutcome{Error: "signing: " + err.Error()}, ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return alerting.AttemptOutcome{Error: "the endpoint's URL is not usable"}, ""
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "reqlog-webhooks/1")
	h[HeaderID] = []string{d.Event.ID}
	h[HeaderTimestamp] = []string{strconv.FormatInt(timestamp, 10)}
	h[HeaderSignature] = []string{signature}
	resp, err := s.client.Do(req)
	if err != nil {
		return alerting.AttemptOutcome{Error: transportError(err), TimedOut: timedOut(err)}, ""
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseRead))
	o := alerting.AttemptOutcome{StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), at)}
	if !o.Succeeded() {
		o.Error = "HTTP " + resp.Status
	}
	return o, logged(head)
}

// transportError says why no reply came, without the URL (which may hold a
// secret, as Slack's do).
func transportError(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	switch {
	case errors.Is(err, errRefusedAddress):
		return "refused: the endpoint's host " + errRefusedAddress.Error()
	case timedOut(err):
		return "no reply within the timeout"
	}
	return err.Error()
}

// timedOut reports an attempt cut by the timeout (not by the caller's
// cancellation).
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || isTimeout(err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) as a wait
// from at; 0 when absent or unreadable.
func retryAfter(v string, at time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && secs > 0 {
		return time.Duration(min(secs, int64(alerting.MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(at) {
		return min(t.Sub(at), alerting.MaxRetryAfter)
	}
	return 0
}

// logged is the start of a reply's body as the delivery log keeps it: at most
// domain.MaxLoggedResponse bytes of valid UTF-8.
func logged(body []byte) string {
	if len(body) > alerting.MaxLoggedResponse {
		body = body[:alerting.MaxLoggedResponse]
	}
	return strings.ToValidUTF8(strings.TrimRightFunc(string(body), func(r rune) bool { return r == utf8.RuneError }), "\uFFFD")
}
