// Command reqlogd is the reqlog service: it reads its configuration (flags,
// REQLOG_* environment, YAML file; the table in settings.go), wires the store
// chosen by REQLOG_STORE with the use cases and the HTTP API, each with its own
// Config (compose.go), and serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitConfig  = 2
)

// startTimeout bounds start-up, store connections included.
const startTimeout = 30 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == commandBackup || args[0] == commandRestore) {
		return runDataCommand(args[0], args[1:], lookupEnv, stdout, stderr)
	}
	cfg, err := loadConfig(args, lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, configUsage())
		return exitOK
	}
	if errors.Is(err, errVersionRequested) {
		fmt.Fprintln(stdout, buildVersion())
		return exitOK
	}
	if err != nil {
		return fail(stderr, err)
	}
	generateDevKey, unsaved, err := keepGenerated(&cfg)
	if err != nil {
		return fail(stderr, err)
	}
	var devKey string
	if len(cfg.Keyring.Keys) == 0 {
		if devKey, err = addDevKey(&cfg, generateDevKey); err != nil {
			return fail(stderr, err)
		}
		if cfg.Proxy.APIKey == "" && cfg.Proxy.ReqlogURL == "" {
			cfg.Proxy.APIKey = devKey // the proxy stores as the development account
		}
	}
	logger := newLogger(cfg)
	defer func() { _ = logger.Sync() }()
	warnShortKeys(logger, cfg.Keyring.Keys)
	warnDroppedDefaults(logger, cfg.App.Policy())

	graph, err := options(cfg, logger)
	if err != nil {
		return fail(stderr, err)
	}
	var server *httpapi.Server
	var site *portal.Portal
	var links *portalLinks
	svc := fx.New(graph, fx.Populate(&server, &site, &links))
	if err := svc.Err(); err != nil {
		return fail(stderr, err)
	}
	startCtx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := svc.Start(startCtx); err != nil {
		return fail(stderr, err)
	}
	if err := unsaved.save(); err != nil { // the store holds the data directory's lock now
		_ = svc.Stop(startCtx)
		return fail(stderr, fmt.Errorf("keep the generated secrets in the data directory: %w", err))
	}
	shutdown := svc.Wait() // handles SIGINT and SIGTERM from here on
	stopBackups := backupOnSignal(cfg, logger)
	defer stopBackups()
	links.listening(server.Addr())
	if devKey != "" {
		logger.Warn("REQLOG_API_KEYS is not set: generated a development key, printed on standard output",
			zap.String("account", devAccount), zap.String("domain", devDomain))
		link, err := devPortalLink(site, server.Addr())
		if err != nil {
			return fail(stderr, err)
		}
		printDevKey(stdout, devKey, server.Addr(), cfg.App.VisibilityDelay, link)
	}
	signal := <-shutdown
	logger.Info("shutting down", zap.String("signal", signal.Signal.String()))
	stopCtx, cancelStop := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancelStop()
	if err := svc.Stop(stopCtx); err != nil {
		return fail(stderr, err)
	}
	return signal.ExitCode
}

// fail reports err on stderr: exit code 2 for configuration errors, 1 otherwise.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "reqlogd:", err)
	if cfgErr := (*app.ConfigError)(nil); errors.As(err, &cfgErr) {
		return exitConfig
	}
	return exitFailure
}

// The generated development key's scope.
const (
	devAccount = "dev"
	devDomain  = "test"
)

// warnShortKeys names, by position only, the keys shorter than app.MinKeyLength:
// the account is left out, since a short "key" is often the account name typed in
// the key's place, and the account field then holds the real key.
func warnShortKeys(logger *zap.Logger, keys []app.APIKey) {
	for i, k := range keys {
		if k.Short {
			logger.Warn(fmt.Sprintf("an API key is short: use random keys of at least %d characters, and check "+
				"the entry's order (account:domain:key)", app.MinKeyLength), zap.Int("entry", i+1))
		}
	}
}

// warnDroppedDefaults names the default masked headers and redacted fields that
// the configured lists leave out: their values will be stored.
func warnDroppedDefaults(logger *zap.Logger, policy domain.Policy) {
	headers, fields := policy.DroppedDefaults()
	if len(headers) > 0 {
		logger.Warn("REQLOG_MASKED_HEADERS leaves out default masked headers: their values will be stored",
			zap.Strings("headers", headers))
	}
	switch {
	case len(policy.RedactedFields) == 0:
		logger.Warn("body redaction is off (REQLOG_REDACTED_FIELDS=none): passwords and tokens in bodies will be stored")
	case len(fields) > 0:
		logger.Warn("REQLOG_REDACTED_FIELDS leaves out default redacted fields: their values will be stored",
			zap.Strings("fields", fields))
	}
}

// addDevKey adds a test-domain key from generate when none is configured.
func addDevKey(cfg *config, generate func() (string, error)) (string, error) {
	key, err := generate()
	if err != nil {
		return "", err
	}
	entry, err := app.NewAPIKey(devAccount, devDomain, key)
	if err != nil {
		return "", err
	}
	cfg.Keyring.Keys = append(cfg.Keyring.Keys, entry)
	return key, nil
}

// devPortalTTL is how long the printed development portal link works.
const devPortalTTL = 24 * time.Hour

// devPortalLink is a portal link over the whole development account, so a
// newcomer sees the page right after submitting the printed example.
func devPortalLink(site *portal.Portal, addr net.Addr) (string, error) {
	r, err := http.NewRequest(http.MethodGet, "http://"+reachable(addr)+"/", nil)
	if err != nil {
		return "", err
	}
	principal := domain.Principal{Scope: domain.Scope{Account: devAccount, Domain: devDomain}}
	s, err := site.CreateSession(principal, portal.SessionRequest{ExpiresIn: devPortalTTL}, r)
	return s.URL, err
}

// printDevKey shows the generated key and a portal link once, on stdout rather
// than in the log.
func printDevKey(w io.Writer, key string, addr net.Addr, delay time.Duration, portalLink string) {
	base := "http://" + reachable(addr)
	fmt.Fprintf(w, `
================================================================================
reqlogd: REQLOG_API_KEYS is not set, so this key was generated for
DEVELOPMENT ONLY (account %q, domain %q); set REQLOG_API_KEYS in production.

    %s

Submit a message:

    curl -sS -X POST %s/v1/messages \
      -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
      -d '{"name":"demo","created_at":'$(date +%%s)',"method":"GET","path":"/hello","request":{"header":{"Accept":"*/*"}},"response":{"status_code":200,"body":"hi"}}'

List messages (visible %s after submission):

    curl -sS -H 'Authorization: Bearer %s' %s/v1/messages

See them in the portal (every application of the account, for %d hours):

    %s
================================================================================
`, devAccount, devDomain, key, base, key, delay, key, base, int(devPortalTTL.Hours()), portalLink)
}

// reachable turns a listening address into one a local client can dial.
func reachable(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
