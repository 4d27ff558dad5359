package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/domain"
)

// Defaults of Config.
const (
	DefaultAddr = ":8081"
	DefaultName = "default"
	// DefaultResponseHeaderTimeout is how long the upstream may take to start
	// its reply once it has the whole request.
	DefaultResponseHeaderTimeout = 60 * time.Second
	// DefaultReadHeaderTimeout and DefaultBodyReadTimeout bound slow clients:
	// the whole request head, and each pause while sending a body.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyReadTimeout   = 60 * time.Second
	// DefaultMaxInFlight is how many requests the proxy forwards at once.
	DefaultMaxInFlight = 1024
)

// Config is the proxy's own configuration; cmd/reqlogd fills it from the
// REQLOG_PROXY_* settings. The zero Upstream turns the proxy off.
type Config struct {
	// Addr is where the proxy listens (host:port; port 0 picks one).
	Addr string
	// Upstream is the base URL every request is forwarded to (http or https,
	// optionally with a path prefix); "" turns the proxy off.
	Upstream string
	// Name is the application every recorded exchange belongs to.
	Name string
	// TrustedProxies are the peers (load balancers in front of the proxy) whose
	// X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto, Forwarded and
	// X-Real-IP headers (clientAddressHeaders) are passed on and whose
	// X-Forwarded-For names the client. From any other peer those headers are
	// replaced or dropped: a client could write anything in them.
	TrustedProxies []netip.Prefix
	// MaxBodyBytes caps each recorded body, request and response (0:
	// capture.DefaultMaxBodyBytes); the rest streams through unrecorded and the
	// stored body says it was cut. capture.RulesLookahead bytes more are read
	// for the privacy rules, and cut after them.
	MaxBodyBytes int
	// ResponseHeaderTimeout bounds how long the upstream may take to send its
	// reply's headers once it has the whole request (0:
	// DefaultResponseHeaderTimeout); after it the client gets a 504, recorded.
	ResponseHeaderTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send a request's
	// head (0: DefaultReadHeaderTimeout); BodyReadTimeout how long it may pause
	// while sending a body (0: DefaultBodyReadTimeout). Past either its
	// connection is closed.
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	// MaxBodyReadTime bounds how long each body is recorded (0:
	// capture.DefaultMaxBodyReadTime; negative: no bound): a request's from
	// its start, a reply's from its header. Past it the body goes on
	// streaming, unrecorded, and the exchange is recorded with the body marked
	// as cut (capture.Options.MaxBodyReadTime): a body that trickles does not
	// hold its record for as long as it lasts.
	MaxBodyReadTime time.Duration
	// MaxInFlight bounds the requests being forwarded at once, an upgraded
	// connection (WebSocket) counting until it closes (0: DefaultMaxInFlight);
	// beyond it a request gets 503 with Retry-After, unrecorded.
	MaxInFlight int
	// BufferSize is how many exchanges may wait to be stored (0:
	// capture.DefaultBufferSize); beyond it they are dropped and counted, never
	// waited for.
	BufferSize int
	// ReqlogURL, when set, is a remote reqlogd the exchanges are submitted to
	// with APIKey; when empty they are stored by this process, as the account and
	// domain of APIKey.
	ReqlogURL string
	APIKey    string
}

// DefaultConfig returns the defaults of every field.
func DefaultConfig() Config {
	return Config{Addr: DefaultAddr, Name: DefaultName, ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		ReadHeaderTimeout: DefaultReadHeaderTimeout, BodyReadTimeout: DefaultBodyReadTimeout,
		MaxBodyReadTime: capture.DefaultMaxBodyReadTime, MaxInFlight: DefaultMaxInFlight}
}

// withDefaults is c with each zero bound at its default.
func (c Config) withDefaults() Config {
	def := DefaultConfig()
	if c.ResponseHeaderTimeout == 0 {
		c.ResponseHeaderTimeout = def.ResponseHeaderTimeout
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = def.ReadHeaderTimeout
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = def.BodyReadTimeout
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = def.MaxInFlight
	}
	return c
}

// Enabled reports whether the proxy runs.
func (c Config) Enabled() bool { return c.Upstream != "" }

// Validate reports the first unusable field as a *domain.ValidationError naming
// it. A disabled proxy is valid whatever its other fields hold.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	bad := func(field, reason string) error {
		return &domain.ValidationError{Message: "proxy: config", Fields: []domain.FieldError{{Field: field, Message: reason}}}
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return bad("Addr", "must be host:port or :port, e.g. :8081")
	}
	if _, err := parseUpstream(c.Upstream); err != nil {
		return bad("Upstream", err.Error())
	}
	if name := strings.TrimSpace(c.Name); name == "" || len([]rune(name)) > 200 {
		return bad("Name", "must be 1 to 200 characters")
	}
	switch {
	case c.MaxBodyBytes < 0:
		return bad("MaxBodyBytes", "must not be negative (0: the default)")
	case c.BufferSize < 0:
		return bad("BufferSize", "must not be negative (0: the default)")
	case c.ResponseHeaderTimeout < 0:
		return bad("ResponseHeaderTimeout", "must not be negative (0: the default)")
	case c.ReadHeaderTimeout < 0:
		return bad("ReadHeaderTimeout", "must not be negative (0: the default)")
	case c.BodyReadTimeout < 0:
		return bad("BodyReadTimeout", "must not be negative (0: the default)")
	case c.MaxInFlight < 0:
		return bad("MaxInFlight", "must not be negative (0: the default)")
	case c.ReqlogURL != "" && c.APIKey == "":
		return bad("APIKey", "is required to submit to a remote reqlogd")
	}
	if c.ReqlogURL != "" {
		if u, err := url.Parse(c.ReqlogURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("ReqlogURL", "must be an absolute http or https URL")
		}
	}
	return nil
}

func parseUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("must be an absolute http or https URL, e.g. http://127.0.0.1:3000")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("must not have a query or fragment")
	}
	return u, nil
}

// recorderOptions are the capture options of the proxy's recorder.
func (c Config) recorderOptions() capture.Options {
	name := strings.TrimSpace(c.Name)
	decoders := capture.StandardDecoders()
	decoders["br"] = func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }
	opts := capture.Options{
		Name:            func(*http.Request) string { return name },
		MaxBodyBytes:    c.MaxBodyBytes,
		MaxBodyReadTime: c.MaxBodyReadTime,
		BufferSize:      c.BufferSize,
		Decoders:        decoders, // the proxy's bodies are decoded before the rules
		// The default masked headers are masked here already, so secrets never
		// wait in the queue nor travel to a remote reqlogd; the service masks
		// again with its own list, and redacts bodies.
	}
	if len(c.TrustedProxies) > 0 {
		opts.ClientIPHeader = "X-Forwarded-For"
		opts.TrustedProxies = c.TrustedProxies
	}
	return opts
}

// ParsePrefixes reads addresses ("10.0.0.1", "::1") and CIDR ranges
// ("10.0.0.0/8"), as TrustedProxies takes them.
func ParsePrefixes(entries []string) ([]netip.Prefix, error) {
	prefixes := make([]netip.Prefix, 0, len(entries))
	for i, entry := range entries {
		if p, err := netip.ParsePrefix(entry); err == nil {
			prefixes = append(prefixes, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(entry)
		if err != nil {
			return nil, fmt.Errorf("entry %d is neither an IP address nor a CIDR range such as 10.0.0.0/8", i+1)
		}
		prefixes = append(prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return prefixes, nil
}

// FormatPrefixes is the comma-separated list ParsePrefixes reads back.
func FormatPrefixes(prefixes []netip.Prefix) string {
	entries := make([]string, len(prefixes))
	for i, p := range prefixes {
		entries[i] = p.String()
	}
	return strings.Join(entries, ",")
}
