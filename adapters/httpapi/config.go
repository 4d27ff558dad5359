package httpapi

import (
	"fmt"
	"net"

	"github.com/reqlog/reqlog/domain"
)

// Defaults of Config.
const (
	DefaultAddr         = ":8080"
	DefaultMaxBodyBytes = 5 << 20 // 5 MiB
	// The default rate limit of each API key is generous for clients that batch
	// (a request carries up to 1,000 messages), yet it stops a client stuck in a
	// loop.
	DefaultRateLimit = 100 // requests per second
	DefaultRateBurst = 200
	// MaxRateBurst is the largest RateBurst Validate accepts.
	MaxRateBurst = 1_000_000
)

// Config is the HTTP API's own configuration, which its fx modules read;
// cmd/reqlogd fills it from the REQLOG_* settings.
type Config struct {
	// Addr is where Module's server listens (host:port; port 0 picks one).
	Addr string
	// MaxBodyBytes limits a POST body (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// RateLimit is the requests per second each principal may make on average,
	// RateBurst how many at once beyond it; a RateLimit of 0 turns limiting off.
	RateLimit float64
	RateBurst int
	// Exports bounds the exports running at once and how slowly they may be
	// read.
	Exports ExportLimits
}

// DefaultConfig returns the defaults of every field.
func DefaultConfig() Config {
	return Config{Addr: DefaultAddr, MaxBodyBytes: DefaultMaxBodyBytes, RateLimit: DefaultRateLimit, RateBurst: DefaultRateBurst,
		Exports: DefaultExportLimits()}
}

// Validate reports the first unusable field of a configuration with its defaults
// filled in (no zero is read as a default here) as a *domain.ValidationError
// naming the field.
func (c Config) Validate() error {
	bad := func(field, reason string) error {
		return &domain.ValidationError{Message: "httpapi: config", Fields: []domain.FieldError{{Field: field, Message: reason}}}
	}
	switch {
	case !validAddr(c.Addr):
		return bad("Addr", "must be host:port or :port, e.g. :8080")
	case c.MaxBodyBytes < 1:
		return bad("MaxBodyBytes", "must be at least 1")
	case c.RateLimit < 0:
		return bad("RateLimit", "must not be negative (0 turns rate limiting off)")
	case c.RateBurst < 1 || c.RateBurst > MaxRateBurst:
		return bad("RateBurst", fmt.Sprintf("must be from 1 to %d", MaxRateBurst))
	}
	if field, reason := c.Exports.validate(); field != "" {
		return bad("Exports."+field, reason)
	}
	return nil
}

func validAddr(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	return err == nil
}
