package mongo

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/reqlog/reqlog/adapters/statsengine"
	"github.com/reqlog/reqlog/domain"
)

// Defaults of Config.
const (
	DefaultDatabase               = "reqlog"
	DefaultCollection             = "messages"
	DefaultConnectTimeout         = 5 * time.Second
	DefaultServerSelectionTimeout = 5 * time.Second
	DefaultOperationTimeout       = 30 * time.Second
	DefaultPingTimeout            = 2 * time.Second
)

// Config configures the MongoDB store. The zero value of every field but URI
// means its default.
type Config struct {
	// URI is the mongodb:// or mongodb+srv:// connection string (required).
	URI string
	// Database holds the collection; default "reqlog".
	Database string
	// Collection holds the messages; default "messages".
	Collection string
	// WriteConcern of every write; nil means w: majority, j: true, so that a nil
	// error from Append means durable. It must be acknowledged.
	WriteConcern *writeconcern.WriteConcern

	// ConnectTimeout bounds dialling one connection. Zero: the URI's
	// connectTimeoutMS, else DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ServerSelectionTimeout bounds waiting for a usable server, so an
	// unreachable server fails fast with ErrUnavailable instead of hanging. Zero:
	// the URI's serverSelectionTimeoutMS, else DefaultServerSelectionTimeout.
	ServerSelectionTimeout time.Duration
	// OperationTimeout bounds an operation whose context has no deadline. Zero:
	// the URI's timeoutMS, else DefaultOperationTimeout.
	OperationTimeout time.Duration
	// PingTimeout bounds a health check; default DefaultPingTimeout.
	PingTimeout time.Duration

	// TTLIndex has the server delete expired messages (a TTL index on
	// expireAt) where it can (not FerretDB v1). It deletes them unseen, so
	// their statistics go with them: false (the default) leaves deletion to
	// PurgeExpired, which keeps their rollups for the rollup retention
	// (ports.RollupKeeper), and drops a TTL index an earlier start made.
	TTLIndex bool
	// StreamStats computes statistics by streaming the matching messages'
	// needed fields even on a server that could run the aggregation pipeline
	// (MongoDB 7.0+): for tests of the fallback, or a server whose pipeline
	// misbehaves.
	StreamStats bool
	// Statistics configures the statistics engine: its plans' costs and the
	// memory of the hours it keeps; zero: the engine's defaults.
	Statistics statsengine.Config
}

// DefaultConfig returns the defaults of the fields that have one of their own;
// the timeouts are left zero, which reads the URI's own first.
func DefaultConfig() Config {
	return Config{Database: DefaultDatabase, Collection: DefaultCollection, PingTimeout: DefaultPingTimeout}
}

// Validate reports the first unusable field of a configuration with its defaults
// filled in (no zero is read as a default here) as a *domain.ValidationError
// naming the field. URI is left to the caller: the service requires it only of
// the store it runs on.
func (cfg Config) Validate() error {
	// MongoDB's own rules for names; refusing them here gives a clear start-up error.
	if cfg.Database == "" || strings.ContainsAny(cfg.Database, "/\\. \"$\x00") {
		return &domain.ValidationError{Message: "mongo: config", Fields: []domain.FieldError{
			{Field: "Database", Message: `must be a non-empty name without / \ . " $ or spaces`}}}
	}
	return nil
}

// withDefaults returns cfg with every unset field at its default, or an error
// naming the first unusable field.
func (cfg Config) withDefaults() (Config, error) {
	if strings.TrimSpace(cfg.URI) == "" {
		return cfg, errors.New("mongo: config: URI is required")
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.Collection == "" {
		cfg.Collection = DefaultCollection
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if strings.HasPrefix(cfg.Collection, "system.") || strings.ContainsAny(cfg.Collection, "$\x00") {
		return cfg, fmt.Errorf("mongo: config: collection name %q must not contain $ or NUL nor start with \"system.\"", cfg.Collection)
	}
	if cfg.WriteConcern == nil {
		journal := true
		cfg.WriteConcern = &writeconcern.WriteConcern{W: writeconcern.WCMajority, Journal: &journal}
	}
	if !cfg.WriteConcern.Acknowledged() {
		return cfg, errors.New("mongo: config: the write concern must be acknowledged: Append promises durability")
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"ConnectTimeout", cfg.ConnectTimeout},
		{"ServerSelectionTimeout", cfg.ServerSelectionTimeout},
		{"OperationTimeout", cfg.OperationTimeout},
		{"PingTimeout", cfg.PingTimeout},
	} {
		if d.value < 0 {
			return cfg, fmt.Errorf("mongo: config: %s must not be negative, got %s", d.name, d.value)
		}
	}
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	return cfg, nil
}

// clientOptions builds the driver's options: the URI first, then every timeout
// the configuration sets, then defaults for what neither sets.
func (cfg Config) clientOptions() (*options.ClientOptions, error) {
	opts := options.Client().ApplyURI(cfg.URI)
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("mongo: config: URI is not a valid MongoDB connection string: %s", withoutURIParts(cfg.URI, err))
	}
	timeout := func(configured time.Duration, fromURI *time.Duration, fallback time.Duration, set func(time.Duration) *options.ClientOptions) {
		switch {
		case configured > 0:
			set(configured)
		case fromURI == nil:
			set(fallback)
		}
	}
	timeout(cfg.ConnectTimeout, opts.ConnectTimeout, DefaultConnectTimeout, opts.SetConnectTimeout)
	timeout(cfg.ServerSelectionTimeout, opts.ServerSelectionTimeout, DefaultServerSelectionTimeout, opts.SetServerSelectionTimeout)
	timeout(cfg.OperationTimeout, opts.Timeout, DefaultOperationTimeout, opts.SetTimeout)
	return opts, nil
}

// minElided is the shortest part of a URI elided from an error: shorter ones
// would cut up the words around them, and give nothing away.
const minElided = 3

// quoted is a string as Go's %q writes it, escaped quotes included.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// withoutURIParts is err's text, about uri, without what it may repeat of uri's
// secrets: the user information, and every host when there is no '@' (a
// forgotten host leaves the password there), raw and percent-decoded as the
// driver decodes hosts; the address of a net.AddrError; and every quoted part
// but option names (quoted after "for"), since the driver quotes a bad escape
// in a password ("%Q7") and an option's bad value. The error reaches the logs.
func withoutURIParts(uri string, err error) string {
	reason := err.Error()
	var secrets []string
	if _, rest, found := strings.Cut(uri, "://"); found {
		authority := rest[:strings.IndexAny(rest+"/", "/?")]
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			secrets = append(secrets, authority[:at])
		} else {
			secrets = append(secrets, strings.Split(authority, ",")...)
		}
		for _, raw := range secrets {
			if decoded, err := url.QueryUnescape(raw); err == nil {
				secrets = append(secrets, decoded)
			}
		}
	}
	if addrErr := (*net.AddrError)(nil); errors.As(err, &addrErr) {
		secrets = append(secrets, addrErr.Addr)
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) }) // longest first: one may hold another
	for _, secret := range secrets {
		if len(secret) >= minElided {
			reason = strings.ReplaceAll(reason, secret, "…")
		}
	}
	var out strings.Builder
	copied := 0
	for _, at := range quoted.FindAllStringIndex(reason, -1) {
		if strings.HasSuffix(reason[:at[0]], "for ") {
			continue
		}
		out.WriteString(reason[copied:at[0]])
		out.WriteString(`"…"`)
		copied = at[1]
	}
	out.WriteString(reason[copied:])
	return out.String()
}
