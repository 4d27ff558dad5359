package httpapi

// Config is the HTTP API's own configuration, which its fx modules read;
// cmd/reqlogd fills it from the REQLOG_* settings.
type Config struct {
	// Addr is where Module's server listens (host:port; port 0 picks one).
	Addr string
	// MaxBodyBytes limits a POST body (0: app.DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// RateLimit is the requests per second each principal may make on average,
	// RateBurst how many at once beyond it; a RateLimit of 0 turns limiting off.
	RateLimit float64
	RateBurst int
}
