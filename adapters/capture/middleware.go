package capture

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/felixge/httpsnoop"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// record is what the middleware collects for one exchange; the background goroutine
// turns it into a domain.Exchange, so the request path does the least work.
type record struct {
	name       string
	createdAt  time.Time
	ip         string
	method     string
	path       string
	route      string
	reqHeader  http.Header
	reqBody    *cappedBuffer
	reqLength  int64 // Content-Length, -1 when unknown
	status     int
	respHeader http.Header
	respBody   *cappedBuffer
	// duration is from the handler's start to its last write; hasDuration is false
	// when it cannot be told (see responseCapture.finish).
	duration    time.Duration
	hasDuration bool
}

// Middleware records every exchange of next that Options.Skip does not skip. A
// handler that panics is not recorded; the panic goes on up unchanged. One that
// aborts its reply with http.ErrAbortHandler (as httputil.ReverseProxy does when
// a stream breaks: an event stream the client closed) is recorded as far as it
// went, its body's size then unknown, and the panic goes on. Not recorded either
// is an exchange whose client went away while sending its request body (the body's
// read failed and the request's context ended): half a request is not stored as
// if it were whole; Stats.Abandoned counts them.
func (r *Recorder) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.opts.Skip != nil && r.opts.Skip(req) {
			next.ServeHTTP(w, req)
			return
		}
		started := r.opts.Clock.Now()
		rec := &record{
			name:      r.name(req),
			createdAt: started,
			ip:        r.clientIP(req),
			method:    req.Method,
			path:      req.URL.RequestURI(),
			reqHeader: requestHeader(req),
			reqBody:   &cappedBuffer{limit: r.readLimit},
			reqLength: req.ContentLength,
			respBody:  &cappedBuffer{limit: r.readLimit},
		}
		if req.Body != nil && req.Body != http.NoBody {
			tee := &teeBody{ReadCloser: req.Body, into: rec.reqBody, clock: r.opts.Clock, readFor: r.opts.MaxBodyReadTime}
			if tee.readFor > 0 {
				tee.until = started.Add(tee.readFor)
			}
			req.Body = tee
		}
		resp := &responseCapture{header: w.Header, rec: rec, clock: r.opts.Clock, started: started, readFor: r.opts.MaxBodyReadTime}
		resp.timeUp = func() { r.record(req, rec, resp, false) }
		defer resp.stopTimer()
		returned := false
		defer func() {
			if returned {
				return
			}
			// The reply was cut off: httputil.ReverseProxy aborts so when a
			// stream breaks (the client went away, or the upstream).
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // a sentinel value, compared as net/http does
					r.record(req, rec, resp, false)
				}
				panic(p)
			}
		}()
		next.ServeHTTP(httpsnoop.Wrap(w, resp.hooks()), req)
		returned = true
		r.record(req, rec, resp, true)
	})
}

// record queues rec once the handler is done, or its reply has been read for
// Options.MaxBodyReadTime, unless the client abandoned its request body. whole
// is false when the handler aborted its reply, or is still writing it. Only
// the first call records.
func (r *Recorder) record(req *http.Request, rec *record, resp *responseCapture, whole bool) {
	if !resp.claim() {
		return
	}
	if rec.reqBody.broken() && req.Context().Err() != nil {
		r.abandoned.Add(1)
		return
	}
	resp.finish(whole)
	if route := r.opts.Route(req); domain.ValidRoute(route) {
		rec.route = route
	}
	r.enqueue(rec)
}

func (r *Recorder) name(req *http.Request) string {
	if r.opts.Name != nil {
		if name := strings.TrimSpace(r.opts.Name(req)); name != "" {
			return name
		}
	}
	return DefaultName
}

// requestHeader copies the request's header, with Host, which net/http moves out
// of it, put back.
func requestHeader(req *http.Request) http.Header {
	h := req.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if req.Host != "" && h.Get("Host") == "" {
		h.Set("Host", req.Host)
	}
	return h
}

// responseCapture observes the wrapped ResponseWriter through httpsnoop hooks; every
// call still goes to the original.
//
// Its state is locked: the timer that records a reply which stalls past
// readFor runs on a goroutine of its own.
type responseCapture struct {
	mu        sync.Mutex
	header    func() http.Header
	rec       *record
	clock     ports.Clock
	started   time.Time
	committed bool
	hijacked  bool
	// answered is when the handler last handed the reply bytes (header, body,
	// flush) or handed the connection over; zero until then.
	answered time.Time
	// readFor bounds how long the reply's body is captured from its header
	// (Options.MaxBodyReadTime; 0: no bound), until readUntil; past it,
	// timeUp records the exchange as it is.
	readFor   time.Duration
	readUntil time.Time
	timeUp    func()
	// timer calls timeIsUp at readUntil, so that a reply which stalls (no
	// more writes, the stream left open) is recorded then, not when it ends.
	timer    *time.Timer
	recorded bool // the exchange is queued: the reply's rest is not captured
}

// claim marks the exchange recorded; false when it already was.
func (c *responseCapture) claim() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := !c.recorded
	c.recorded = true
	return first
}

func (c *responseCapture) stopTimer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// timeIsUp stops capturing the reply, and records the exchange, once it has
// been read for readFor; the bytes of the write that found it are not kept.
func (c *responseCapture) timeIsUp() bool {
	c.mu.Lock()
	up := c.readFor > 0 && c.committed && !c.recorded && !c.hijacked && c.clock.Now().After(c.readUntil)
	c.mu.Unlock()
	if !up {
		return false
	}
	c.rec.respBody.stop(c.readFor)
	c.timeUp()
	return true
}

// keep captures p, a part of the reply that went out, unless its time is up.
func (c *responseCapture) keep(p []byte) {
	if !c.timeIsUp() {
		c.rec.respBody.Write(p)
	}
}

// Write is keep as an io.Writer, for the tee of ReadFrom.
func (c *responseCapture) Write(p []byte) (int, error) {
	c.keep(p)
	return len(p), nil
}

// wrote notes that the reply moved on now, after the call to the original
// returned: a write blocked by a slow client counts until it is done.
func (c *responseCapture) wrote() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answered = c.clock.Now()
}

// commit notes the status and takes the header as the client gets it. The first
// call wins, as in net/http.
func (c *responseCapture) commit(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commitLocked(status)
}

func (c *responseCapture) commitLocked(status int) {
	if c.committed {
		return
	}
	c.committed = true
	c.rec.status = status
	c.rec.respHeader = c.header().Clone()
	if c.readFor > 0 && !c.recorded {
		c.readUntil = c.clock.Now().Add(c.readFor)
		// A millisecond on, so that the clock has passed readUntil when it fires.
		c.timer = time.AfterFunc(c.readFor+time.Millisecond, func() { c.timeIsUp() })
	}
}

func (c *responseCapture) hooks() httpsnoop.Hooks {
	return httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) {
				// Informational replies (103 Early Hints) precede the real one.
				final := code >= 200 || code == http.StatusSwitchingProtocols
				if final {
					c.commit(code)
				}
				next(code)
				if final {
					c.wrote()
				}
			}
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(b []byte) (int, error) {
				c.commit(http.StatusOK)
				n, err := next(b)
				c.wrote()
				c.keep(b[:n])
				return n, err
			}
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				c.commit(http.StatusOK)
				defer c.wrote()
				return c.rec.respBody.readFrom(next, src, c)
			}
		},
		Flush: func(next httpsnoop.FlushFunc) httpsnoop.FlushFunc {
			return func() {
				c.commit(http.StatusOK)
				next()
				c.wrote()
			}
		},
		Hijack: func(next httpsnoop.HijackFunc) httpsnoop.HijackFunc {
			return func() (net.Conn, *bufio.ReadWriter, error) {
				conn, rw, err := next()
				if err == nil {
					c.mu.Lock()
					if !c.hijacked {
						c.hijacked, c.answered = true, c.clock.Now()
					}
					c.mu.Unlock()
				}
				return conn, rw, err
			}
		},
	}
}

// finish settles the status of a handler that wrote nothing (net/http sends 200)
// or took over the connection, whose reply the recorder cannot see (recorded as
// 101 Switching Protocols, the usual reason to hijack).
//
// It also settles the duration: up to the handler's last write or flush, so that
// work after the reply (logging, cleanup) is not counted; up to its return when it
// committed no reply, since net/http writes it then; up to the hijack, the last
// the recorder sees of the reply. A duration over domain.MaxDuration (a stream
// left open for days) is left unknown rather than have the exchange refused.
func (c *responseCapture) finish(whole bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.committed && !c.hijacked {
		c.answered = c.clock.Now()
	}
	if c.hijacked {
		c.commitLocked(http.StatusSwitchingProtocols)
	}
	c.commitLocked(http.StatusOK)
	if whole {
		c.rec.respBody.sawEnd() // the handler has returned: its whole reply passed by
	}
	d := c.answered.Sub(c.started)
	c.rec.duration, c.rec.hasDuration = d, d >= 0 && d <= domain.MaxDuration
}

// teeBody copies what the handler reads from the request body, until it has
// been read for readFor (0: no bound).
type teeBody struct {
	io.ReadCloser
	into    *cappedBuffer
	clock   ports.Clock
	readFor time.Duration
	until   time.Time
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.readFor > 0 && n > 0 && t.clock.Now().After(t.until) {
		t.into.stop(t.readFor) // the bytes of the read that found it are not kept
	}
	t.into.Write(p[:n])
	switch {
	case err == io.EOF: //nolint:errorlint // io.EOF is returned unwrapped by contract
		t.into.sawEnd()
	case err != nil:
		t.into.sawError()
	}
	return n, err
}

// cappedBuffer keeps the first limit bytes written to it and counts them all. It is
// locked because a handler may read the body and write the reply from different
// goroutines.
type cappedBuffer struct {
	mu       sync.Mutex
	limit    int
	kept     []byte
	total    int64
	complete bool // the whole stream passed through (request bodies: EOF seen)
	failed   bool // reading the stream failed before its end
	// readFor, when not 0, is the time limit that stopped the capture
	// (Options.MaxBodyReadTime): later bytes are counted, not kept.
	readFor time.Duration
}

// stop keeps what b holds and no more: it was read for readFor.
func (b *cappedBuffer) stop(readFor time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.readFor == 0 {
		b.readFor, b.limit = readFor, len(b.kept)
	}
}

// stoppedShort is the time limit that stopped b before it had kept all it
// would have; 0 when none did.
func (b *cappedBuffer) stoppedShort() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.readFor == 0 || b.complete && b.total == int64(len(b.kept)) {
		return 0
	}
	return b.readFor
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if room := b.limit - len(b.kept); room > 0 {
		b.kept = append(b.kept, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *cappedBuffer) sawEnd() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.complete = true
}

func (b *cappedBuffer) sawError() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failed = true
}

// broken: reading the stream failed before its end was seen.
func (b *cappedBuffer) broken() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed && !b.complete
}

// readFrom passes src to the original ReadFrom. Only the part to keep goes through
// a tee, to keep (which also minds the time limit); the rest reaches the original
// untouched, so it may still use sendfile.
func (b *cappedBuffer) readFrom(next httpsnoop.ReadFromFunc, src io.Reader, keep io.Writer) (int64, error) {
	b.mu.Lock()
	room := int64(b.limit - len(b.kept))
	b.mu.Unlock()
	var teed int64
	if room > 0 {
		n, err := next(io.TeeReader(io.LimitReader(src, room), keep))
		if err != nil || n < room {
			return n, err
		}
		teed = n
	}
	n, err := next(src)
	b.mu.Lock()
	b.total += n
	b.mu.Unlock()
	return teed + n, err
}

// text is the captured body, with the truncation marker when bytes are missing.
// knownTotal, when at least 0, is the full size as announced (Content-Length).
func (b *cappedBuffer) text(knownTotal int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	total, exact := b.total, b.complete
	if !exact && knownTotal >= total {
		total, exact = knownTotal, true
	}
	if int64(len(b.kept)) >= total {
		return string(b.kept)
	}
	if exact {
		return string(cutAtRune(b.kept)) + fmt.Sprintf("…[truncated by reqlog capture: %d bytes total]", total)
	}
	return string(cutAtRune(b.kept)) + fmt.Sprintf("…[truncated by reqlog capture: at least %d bytes]", total)
}

// bodyText is what is recorded of a body: decoded when header names a
// content coding that decodes (decode.go), else as captured (text).
func (r *Recorder) bodyText(b *cappedBuffer, knownTotal int64, header http.Header) string {
	text := ""
	if coding, open := decoderOf(header, r.opts.Decoders); open != nil {
		if kept, whole := b.captured(knownTotal); len(kept) > 0 {
			text, _ = decodedText(coding, open, kept, whole, r.readLimit)
		}
	}
	if text == "" {
		text = b.text(knownTotal)
	}
	if readFor := b.stoppedShort(); readFor > 0 {
		return cutByTime(text, readFor)
	}
	return text
}

// cutByTime is the text of a body whose capture ran out of time, with its
// marker: less its last RulesLookahead bytes, so that a secret the time cut
// split (which no rule could read whole) is not kept in part.
func cutByTime(text string, readFor time.Duration) string {
	if i := strings.LastIndex(text, domain.CaptureMarker); i >= 0 {
		text = text[:i]
	}
	kept := cutAtRune([]byte(text[:max(0, len(text)-RulesLookahead)]))
	return fmt.Sprintf("%s%sthe body took longer than %s, %d bytes read]", kept, domain.CaptureMarker, readFor, len(text))
}

// captured is what b kept, and whether that is the whole body. knownTotal,
// when at least 0, is the full size as announced (Content-Length).
func (b *cappedBuffer) captured(knownTotal int64) (kept []byte, whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	total := b.total
	if !b.complete && knownTotal >= total {
		total = knownTotal
	}
	return b.kept, int64(len(b.kept)) >= total && (b.complete || knownTotal >= 0)
}

// cutAtRune drops a UTF-8 character cut in half at the end of b.
func cutAtRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// exchange turns a record into what gets submitted, masking secrets first.
func (r *Recorder) exchange(rec *record) domain.Exchange {
	r.mask(rec.reqHeader)
	r.mask(rec.respHeader)
	return domain.Exchange{
		Name:        rec.name,
		CreatedAt:   rec.createdAt,
		IPAddress:   rec.ip,
		Method:      rec.method,
		Path:        rec.path,
		Route:       rec.route,
		Request:     domain.ExchangeRequest{Header: rec.reqHeader, Body: r.bodyText(rec.reqBody, rec.reqLength, rec.reqHeader)},
		Response:    domain.ExchangeResponse{StatusCode: rec.status, Header: rec.respHeader, Body: r.bodyText(rec.respBody, -1, rec.respHeader)},
		Duration:    rec.duration,
		HasDuration: rec.hasDuration,
	}
}

// mask replaces the values of masked headers in h, a copy the recorder owns.
func (r *Recorder) mask(h http.Header) {
	for name, values := range h {
		if r.masked[domain.HeaderMaskKey(name)] {
			for i := range values {
				values[i] = domain.Mask
			}
		}
	}
}

// clientIP is the connection's peer address, or the client address a trusted proxy
// reported in Options.ClientIPHeader; "" when neither is an IP address.
func (r *Recorder) clientIP(req *http.Request) string {
	peer, peerOK := parseIP(req.RemoteAddr)
	if r.opts.ClientIPHeader != "" && (len(r.opts.TrustedProxies) == 0 || (peerOK && r.trusted(peer))) {
		if ip, ok := r.forwardedClient(req.Header.Values(r.opts.ClientIPHeader)); ok {
			return ip.String()
		}
	}
	if !peerOK {
		return ""
	}
	return peer.String()
}

// forwardedClient walks the comma-separated addresses of header lines from the
// nearest proxy back, skipping trusted proxies; when all are trusted, the first is
// the client. An entry that is not an address voids the header: nothing before it
// can be trusted.
func (r *Recorder) forwardedClient(lines []string) (netip.Addr, bool) {
	var entries []string
	for _, line := range lines {
		entries = append(entries, strings.Split(line, ",")...)
	}
	var client netip.Addr
	for i := len(entries) - 1; i >= 0; i-- {
		ip, ok := parseIP(strings.TrimSpace(entries[i]))
		if !ok {
			return netip.Addr{}, false
		}
		client = ip
		if len(r.opts.TrustedProxies) == 0 || !r.trusted(ip) {
			return ip, true
		}
	}
	return client, client.IsValid()
}

func (r *Recorder) trusted(ip netip.Addr) bool { return contains(r.opts.TrustedProxies, ip) }

// Trusts reports whether addr ("ip" or "ip:port", as http.Request.RemoteAddr) is
// in one of prefixes.
func Trusts(prefixes []netip.Prefix, addr string) bool {
	ip, ok := parseIP(addr)
	return ok && contains(prefixes, ip)
}

func contains(prefixes []netip.Prefix, ip netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// parseIP reads "ip" or "ip:port" ("[v6]:port"); IPv4-mapped IPv6 becomes IPv4.
func parseIP(s string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}
