package portal

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// TokenPrefix starts every portal session token, so a KeyStore can tell a token
// from an API key without trying to verify it.
const TokenPrefix = "rlp_"

// MinSecretBytes is the shortest signing secret accepted: HS256 keys shorter than
// the hash output weaken it.
const MinSecretBytes = 32

// Claims of a token. The issuer and audience keep a reqlog portal token from being
// confused with any other JWT signed with the same secret.
const (
	tokenIssuer   = "reqlog"
	tokenAudience = "reqlog-portal"
)

var signingMethod = jwt.SigningMethodHS256

// sessionClaims is what a token carries: whose messages it reads, and until when.
// A whole-account session says so with AllApplications rather than by an empty
// application, so a token that merely lacks "app" never reads more than meant.
type sessionClaims struct {
	Account         string `json:"acc"`
	Domain          string `json:"dom"`
	Application     string `json:"app,omitempty"`
	AllApplications bool   `json:"all,omitempty"`
	jwt.RegisteredClaims
}

// Signer issues and verifies portal session tokens: HS256 JWTs, stateless, so any
// replica that shares the secret accepts them.
type Signer struct {
	secret []byte
	clock  ports.Clock
	parser *jwt.Parser
}

// NewSigner returns a signer with secret (at least MinSecretBytes) that reads the
// time from clock.
func NewSigner(secret []byte, clock ports.Clock) (*Signer, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("the portal secret must be at least %d bytes, got %d", MinSecretBytes, len(secret))
	}
	return &Signer{
		secret: append([]byte(nil), secret...),
		clock:  clock,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{signingMethod.Alg()}),
			jwt.WithIssuer(tokenIssuer),
			jwt.WithAudience(tokenAudience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithTimeFunc(clock.Now),
			jwt.WithStrictDecoding(),
		),
	}, nil
}

// Issue returns a token that reads scope's messages of application (of every
// application when it is "") until expiresAt, which it rounds down to whole
// seconds (the token's precision).
func (s *Signer) Issue(scope domain.Scope, application string, expiresAt time.Time) (string, time.Time, error) {
	expiresAt = expiresAt.UTC().Truncate(time.Second)
	claims := sessionClaims{
		Account:         scope.Account,
		Domain:          scope.Domain,
		Application:     application,
		AllApplications: application == "",
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Audience:  jwt.ClaimStrings{tokenAudience},
			IssuedAt:  jwt.NewNumericDate(s.clock.Now()),
			ExpiresAt: jwt.NewNumericDate(expiresAt),
		},
	}
	signed, err := jwt.NewWithClaims(signingMethod, claims).SignedString(s.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign a portal token: %w", err)
	}
	return TokenPrefix + signed, expiresAt, nil
}

// Why a token was refused. Verify's errors wrap one of them and
// ports.ErrUnauthenticated; a reply may repeat their text, which says nothing of
// the token but whether it was ours.
var (
	// ErrSessionExpired: a token this service signed, past its expiry. The
	// signature is checked before the expiry, so a forged token never gets it.
	ErrSessionExpired = errors.New("the portal session has expired")
	// ErrSessionInvalid: any other token (forged, signed with another secret,
	// malformed, or not a reqlog portal token).
	ErrSessionInvalid = errors.New("the portal session token is not valid")
)

// Verify returns the read-only principal of a valid, unexpired token (Name "" for
// a whole-account session), or an error wrapping ports.ErrUnauthenticated and
// ErrSessionExpired or ErrSessionInvalid (and the jwt package's own error).
func (s *Signer) Verify(token string) (domain.Principal, error) {
	raw, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return domain.Principal{}, fmt.Errorf("not a portal token: %w: %w", ports.ErrUnauthenticated, ErrSessionInvalid)
	}
	var claims sessionClaims
	if _, err := s.parser.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return s.secret, nil }); err != nil {
		why := ErrSessionInvalid
		// jwt/v5 checks the signature before the claims: an expired token
		// that reaches here was signed with our secret.
		if errors.Is(err, jwt.ErrTokenExpired) && !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			why = ErrSessionExpired
		}
		return domain.Principal{}, fmt.Errorf("portal token: %w: %w: %w", ports.ErrUnauthenticated, why, err)
	}
	if claims.Account == "" || !domain.ValidDomain(claims.Domain) || (claims.Application == "") != claims.AllApplications {
		return domain.Principal{}, fmt.Errorf("portal token: %w: %w: %w", ports.ErrUnauthenticated, ErrSessionInvalid, errIncompleteClaims)
	}
	return domain.Principal{
		Scope:    domain.Scope{Account: claims.Account, Domain: claims.Domain},
		Name:     claims.Application,
		ReadOnly: true,
	}, nil
}

// errIncompleteClaims: a correctly signed token without a scope, or without
// exactly one of an application and the whole-account claim (never issued by
// Issue), reads nothing.
var errIncompleteClaims = errors.New("the token does not name an account, a domain and either an application or all of them")
