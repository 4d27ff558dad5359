// Package proxy is reqlogd's capturing reverse proxy: it forwards every request
// to one upstream with net/http/httputil.ReverseProxy and records each exchange
// through adapters/capture's middleware, into this process's store
// (app.LocalSubmitter) or a remote reqlogd (httpclient).
//
// Invariants, and why:
//   - The upstream's reply is never delayed for reqlog's storage: exchanges wait in
//     capture's bounded queue, and are dropped and counted when it is full.
//   - Nothing is buffered: bodies stream both ways, and only a bounded prefix of
//     each (Config.MaxBodyBytes) is kept, with a marker saying it was cut.
//     Server-sent events are flushed as they come; WebSocket and other upgrades
//     are handed over to a raw connection (recorded as their 101 exchange).
//   - X-Forwarded-For, -Host, -Proto, Forwarded and X-Real-IP (with the other
//     headers that name the client: True-Client-IP, CF-Connecting-IP...) are
//     believed only from Config.TrustedProxies; from anyone else they are
//     replaced or dropped, so a client cannot choose the address reqlog
//     records or the upstream sees.
//   - An upstream that cannot be reached gets the client a 502, one that does
//     not start its reply within Config.ResponseHeaderTimeout a 504, each
//     recorded like any exchange; a client that goes away while sending its
//     body leaves nothing stored (capture.Stats.Abandoned), and the upstream
//     sees the request cut, never a shortened body presented as whole.
//   - Slow or numerous clients are bounded as servers in front of applications
//     bound them: a request's head within Config.ReadHeaderTimeout, no pause
//     longer than Config.BodyReadTimeout while sending a body, idle
//     connections closed after idleTimeout, and at most Config.MaxInFlight
//     requests forwarded at once (503 with Retry-After beyond). Replies have no
//     time limit: downloads and event streams take as long as they take.
package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/reqlog/reqlog/adapters/capture"
)

// StatusClientClosedRequest is recorded when the client went away before the
// upstream answered (nginx's 499): the upstream was not at fault, so 502 would
// mislead whoever reads the log.
const StatusClientClosedRequest = 499

// forwardingHeaders are the request headers a proxy in front may set about the
// original request.
var forwardingHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"}

// clientAddressHeaders name the client as some proxies and CDNs set them,
// besides X-Forwarded-For. From an untrusted peer they are dropped, and
// X-Real-IP, which many applications read, is set to the peer's address.
var clientAddressHeaders = []string{"X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "Cf-Connecting-Ip", "Fastly-Client-Ip", "X-Cluster-Client-Ip"}

// NewReverseProxy returns the forwarding half of the proxy, without recording:
// requests to upstream over transport, with X-Forwarded-* set as the package
// documentation says. Handler wraps it with a recorder.
func NewReverseProxy(upstream *url.URL, trusted []netip.Prefix, transport http.RoundTripper, log *zap.Logger) *httputil.ReverseProxy {
	if log == nil {
		log = zap.NewNop()
	}
	errorLog, _ := zap.NewStdLogAt(log, zap.WarnLevel)
	failures := sampled(log)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			// Rewrite gets the outbound request without X-Forwarded-*; Forwarded
			// is ours to drop.
			pr.Out.Header.Del("Forwarded")
			fromTrusted := capture.Trusts(trusted, pr.In.RemoteAddr)
			if fromTrusted {
				for _, name := range forwardingHeaders {
					if v := pr.In.Header.Values(name); len(v) > 0 {
						pr.Out.Header[name] = v
					}
				}
			} else {
				for _, name := range clientAddressHeaders {
					pr.Out.Header.Del(name)
				}
				if peer, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
					pr.Out.Header.Set("X-Real-Ip", peer)
				}
			}
			host, proto := pr.Out.Header.Values("X-Forwarded-Host"), pr.Out.Header.Values("X-Forwarded-Proto")
			pr.SetXForwarded() // appends the peer to X-Forwarded-For, sets Host and Proto
			if fromTrusted && len(host) > 0 {
				pr.Out.Header["X-Forwarded-Host"] = host
			}
			if fromTrusted && len(proto) > 0 {
				pr.Out.Header["X-Forwarded-Proto"] = proto
			}
		},
		Transport: transport,
		ErrorLog:  errorLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				w.WriteHeader(StatusClientClosedRequest) // nobody reads it
				return
			}
			status, reason := upstreamFailure(err)
			if line := failures.Check(zap.WarnLevel, reason); line != nil {
				line.Write(zap.String("method", r.Method), zap.Int("status", status), zap.Error(err))
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, "%d %s: %s\n", status, http.StatusText(status), reason)
		},
	}
}

// upstreamFailure is the status and reason a client gets for err, the
// transport's failure to get a reply: 504 when time ran out (connecting,
// the TLS handshake, or the reply's headers past ResponseHeaderTimeout), 502
// otherwise (refused, reset, unresolvable, or a reply that is not HTTP).
func upstreamFailure(err error) (int, string) {
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return http.StatusGatewayTimeout, "the upstream did not answer in time"
	}
	return http.StatusBadGateway, "the upstream could not be reached or sent no valid reply"
}

// Handler is the capturing proxy: NewReverseProxy's forwarding, each exchange
// recorded by rec. CONNECT is refused (405): the proxy fronts one upstream, it
// is not a tunnel.
func Handler(forward http.Handler, rec *capture.Recorder) http.Handler {
	recorded := rec.Middleware(forward)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE")
			http.Error(w, "405 Method Not Allowed: this proxy fronts one upstream and opens no tunnels", http.StatusMethodNotAllowed)
			return
		}
		recorded.ServeHTTP(w, r)
	})
}

// NewTransport is the transport to the upstream: http.DefaultTransport's, with
// as many idle connections kept per host as the proxy may have requests in
// flight (the default keeps 2, so a busy proxy would dial anew for most
// requests).
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	return t
}

// sampled keeps a down upstream from flooding the log: each second the first
// 10 lines, then one in 100.
func sampled(log *zap.Logger) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, 10, 100)
	}))
}
