// Package portal is reqlog's customer portal: read-only sessions that show one
// application's messages to that application's owner (or, without an
// application, every application of the account and domain to the account's own
// support team), and the page that shows them.
//
// A session is a signed token (TokenPrefix + an HS256 JWT carrying account,
// domain, application or the whole-account claim, and expiry). It is stateless, so every replica that shares
// the secret accepts it, and it cannot be revoked except by changing the secret.
// KeyStore decorates the API-key store so that the API's ordinary read endpoints
// accept such tokens as read-only principals; the page (served at /portal, assets
// embedded in the binary) takes its token from the URL fragment, which browsers
// never send to a server, and calls those endpoints with it.
package portal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// Config sets up a Portal; cmd/reqlogd fills it from REQLOG_PORTAL_SECRET,
// REQLOG_PUBLIC_URL and REQLOG_PORTAL_FRAME_ANCESTORS.
type Config struct {
	// Secret signs and verifies session tokens; at least MinSecretBytes.
	Secret []byte
	// PublicURL is the base URL of portal links, e.g. https://logs.example.com
	// ("": the scheme and Host of each session request, which is wrong behind a
	// proxy that terminates TLS or rewrites Host).
	PublicURL string
	// BasePath is the path the API and the page are mounted under, e.g. /logs
	// in a server that embeds reqlog (CleanBasePath's rules; "": the root).
	// Links are PublicURL (or the request's origin), then BasePath, then
	// PagePath.
	BasePath string
	// FrameAncestors are the Content-Security-Policy sources allowed to embed the
	// page in a frame (nil: 'self').
	FrameAncestors []string
}

// DefaultConfig returns the defaults of the fields that have one: no secret (New
// refuses that; FromConfig makes a random one) and the page framed by its own
// origin only.
func DefaultConfig() Config {
	return Config{FrameAncestors: []string{"'self'"}}
}

// Portal issues sessions and serves the page.
type Portal struct {
	signer    *Signer
	clock     ports.Clock
	publicURL string // without a trailing slash; "" when derived per request
	basePath  string // CleanBasePath's
	csp       string
}

// New returns a portal. An invalid configuration is refused as Validate does;
// an empty Secret too.
func New(cfg Config, clock ports.Clock) (*Portal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	signer, err := NewSigner(cfg.Secret, clock)
	if err != nil {
		return nil, invalidField("Secret", err.Error())
	}
	publicURL, _ := parsePublicURL(cfg.PublicURL)
	basePath, _ := CleanBasePath(cfg.BasePath)
	csp, _ := contentSecurityPolicy(cfg.FrameAncestors)
	return &Portal{signer: signer, clock: clock, publicURL: publicURL, basePath: basePath, csp: csp}, nil
}

// Validate reports the first unusable field of cfg as a *domain.ValidationError
// naming it. An empty Secret passes: FromConfig makes a random one (New refuses
// it). The secret is never repeated.
func (cfg Config) Validate() error {
	if len(cfg.Secret) > 0 && len(cfg.Secret) < MinSecretBytes {
		return invalidField("Secret", fmt.Sprintf("the portal secret must be at least %d bytes, got %d", MinSecretBytes, len(cfg.Secret)))
	}
	if _, err := parsePublicURL(cfg.PublicURL); err != nil {
		return invalidField("PublicURL", err.Error())
	}
	if _, err := CleanBasePath(cfg.BasePath); err != nil {
		return invalidField("BasePath", err.Error())
	}
	if _, err := contentSecurityPolicy(cfg.FrameAncestors); err != nil {
		return invalidField("FrameAncestors", err.Error())
	}
	return nil
}

func invalidField(field, reason string) error {
	return &domain.ValidationError{Message: "portal: config", Fields: []domain.FieldError{{Field: field, Message: reason}}}
}

// FromConfig returns the portal of cfg. Without a secret it makes a random one and
// warns on log (nil: no logs): sessions then end with the process and other
// replicas refuse them.
func FromConfig(cfg Config, clock ports.Clock, log *zap.Logger) (*Portal, error) {
	if len(cfg.Secret) == 0 {
		cfg.Secret = RandomSecret()
		if log != nil {
			log.Warn("REQLOG_PORTAL_SECRET (portal.Config.Secret) is not set: portal sessions are signed with a random " +
				"secret, so they end when the process restarts and other replicas refuse them")
		}
	}
	return New(cfg, clock)
}

// RandomSecret returns a fresh secret, for a service that has none configured:
// its sessions then end when it stops, and other replicas refuse them.
func RandomSecret() []byte {
	secret := make([]byte, MinSecretBytes)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	return secret
}

// KeyStore returns keys decorated to accept this portal's session tokens.
func (p *Portal) KeyStore(keys ports.KeyStore) *KeyStore { return NewKeyStore(keys, p.signer) }

// Authorize reports ports.ErrForbidden for principals that may not create
// sessions (portal sessions themselves), so callers can refuse before reading a
// body.
func (p *Portal) Authorize(principal domain.Principal) error {
	if principal.ReadOnly || principal.Name != "" {
		return fmt.Errorf("a portal session cannot create sessions, only an API key can: %w", ports.ErrForbidden)
	}
	return nil
}

// CreateSession issues a session on req.Name's messages in principal's scope (on
// every application's when req.Name is ""). Only
// an API key may: a portal session (a read-only principal) gets ports.ErrForbidden.
// Invalid requests get a *domain.ValidationError. r is the HTTP request asking,
// whose scheme and Host make the link when no public URL is configured.
func (p *Portal) CreateSession(principal domain.Principal, req SessionRequest, r *http.Request) (Session, error) {
	if err := p.Authorize(principal); err != nil {
		return Session{}, err
	}
	if err := req.validate(); err != nil {
		return Session{}, err
	}
	ttl := req.ExpiresIn
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	token, expiresAt, err := p.signer.Issue(principal.Scope, strings.TrimSpace(req.Name), p.clock.Now().Add(ttl))
	if err != nil {
		return Session{}, err
	}
	return Session{Token: token, URL: p.pageURL(p.origin(r)) + "#token=" + token, ExpiresAt: expiresAt}, nil
}

// origin is the request's own scheme and Host. Forwarded headers are not
// trusted: any client could set them.
func (p *Portal) origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// pageURL is the page's address: on the configured public URL, or else on
// origin (scheme and host); "" when there is neither.
func (p *Portal) pageURL(origin string) string {
	if p.publicURL != "" {
		origin = p.publicURL
	}
	if origin == "" {
		return ""
	}
	return origin + p.basePath + PagePath
}

// basePathSegments are the segments of a base path: characters a URL path
// carries as they are (RFC 3986 pchar without percent-escapes).
var basePathSegments = regexp.MustCompile(`^(?:/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$`)

// CleanBasePath checks a mount path such as /logs and returns it without a
// trailing slash ("" for "" and "/"): it must start with a slash and be a
// clean path of characters a URL carries unescaped, with no query, fragment,
// dot segment or double slash.
func CleanBasePath(s string) (string, error) {
	trimmed := strings.TrimSuffix(s, "/")
	if trimmed == "" {
		return "", nil
	}
	if !basePathSegments.MatchString(trimmed) || path.Clean(trimmed) != trimmed {
		return "", errors.New("must be a clean path starting with a slash, such as /logs: letters, digits and -._~!$&'()*+,;=:@ " +
			"between slashes, no . or .. segment, no query or fragment")
	}
	return trimmed, nil
}

// parsePublicURL accepts "" or an absolute http(s) URL without query or fragment.
func parsePublicURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", errors.New("must be an absolute http or https URL such as https://logs.example.com")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("must not have a query or a fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}
