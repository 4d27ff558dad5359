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
//   - X-Forwarded-For, -Host, -Proto and Forwarded are believed only from
//     Config.TrustedProxies; from anyone else they are replaced, so a client
//     cannot choose the address reqlog records or the upstream sees.
//   - An upstream that does not answer gets the client a 502, recorded like any
//     exchange; a client that goes away while sending its body leaves nothing
//     stored (capture.Stats.Abandoned), and the upstream sees the request cut,
//     never a shortened body presented as whole.
package proxy

import (
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
			if line := failures.Check(zap.WarnLevel, "the upstream did not answer"); line != nil {
				line.Write(zap.String("method", r.Method), zap.Error(err))
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("502 Bad Gateway: the upstream did not answer\n"))
		},
	}
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
