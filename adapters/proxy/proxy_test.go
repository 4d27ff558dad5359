package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/conformance"
)

func TestRecordsEachExchangeWithItsBodies(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=secret")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"echo":%q,"path":%q}`, body, r.URL.RequestURI())
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL+"/api", proxy.Config{})

	req, _ := http.NewRequest(http.MethodPost, r.proxyURL+"/orders?page=2", strings.NewReader(`{"password":"hunter2","item":"book"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer app-secret")
	resp, body := send(t, req)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(body, `"path":"/api/orders?page=2"`) {
		t.Fatalf("reply %d %s: want the upstream's, under its path prefix", resp.StatusCode, body)
	}

	m := r.stored(t, 1)[0]
	if m.Name != "shop" || m.Method != http.MethodPost || m.Path != "/orders?page=2" || m.StatusCode != http.StatusCreated {
		t.Errorf("stored %s %s %s %d", m.Name, m.Method, m.Path, m.StatusCode)
	}
	if m.IPAddress != "127.0.0.1" {
		t.Errorf("ip_address %q, want the peer's", m.IPAddress)
	}
	if !strings.Contains(m.Request.Body, `"item":"book"`) || strings.Contains(m.Request.Body, "hunter2") {
		t.Errorf("request body %q: want it stored with the password redacted", m.Request.Body)
	}
	if m.Response.Body != body {
		t.Errorf("response body %q, want %q", m.Response.Body, body)
	}
	if got := m.Request.Header["Authorization"]; len(got) != 1 || strings.Contains(got[0], "app-secret") {
		t.Errorf("Authorization stored as %q, want it masked", got)
	}
	if got := m.Response.Header["Set-Cookie"]; len(got) != 1 || strings.Contains(got[0], "secret") {
		t.Errorf("Set-Cookie stored as %q, want it masked", got)
	}
	if !m.HasDuration {
		t.Error("no duration recorded")
	}
}

// forwardedSeen is an upstream that answers with the X-Forwarded-* headers it got.
func forwardedSeen() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "for=%s host=%s proto=%s forwarded=%s", r.Header.Get("X-Forwarded-For"),
			r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("Forwarded"))
	}))
}

func spoofed(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = "shop.example"
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Host", "evil.example")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Forwarded", "for=203.0.113.9")
	_, body := send(t, req)
	return body
}

func TestForwardedHeadersFromAnUntrustedPeerAreReplaced(t *testing.T) {
	upstream := forwardedSeen()
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{})
	if got, want := spoofed(t, r.proxyURL+"/"), "for=127.0.0.1 host=shop.example proto=http forwarded="; got != want {
		t.Errorf("upstream saw %q, want %q", got, want)
	}
	if m := r.stored(t, 1)[0]; m.IPAddress != "127.0.0.1" {
		t.Errorf("recorded client %q, want the peer, not the header", m.IPAddress)
	}
}

func TestForwardedHeadersFromATrustedPeerArePassedOn(t *testing.T) {
	upstream := forwardedSeen()
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if got, want := spoofed(t, r.proxyURL+"/"), "for=203.0.113.9, 127.0.0.1 host=evil.example proto=https forwarded=for=203.0.113.9"; got != want {
		t.Errorf("upstream saw %q, want %q", got, want)
	}
	if m := r.stored(t, 1)[0]; m.IPAddress != "203.0.113.9" {
		t.Errorf("recorded client %q, want the one the trusted peer named", m.IPAddress)
	}
}

// clientIPHeaders name the client as proxies and CDNs other than
// X-Forwarded-For's set them.
var clientIPHeaders = []string{"X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "Cf-Connecting-Ip", "Fastly-Client-Ip", "X-Cluster-Client-Ip"}

// clientIPSeen is an upstream that answers with the client address headers
// it got.
func clientIPSeen() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range clientIPHeaders {
			fmt.Fprintf(w, "%s=%s ", name, strings.Join(r.Header.Values(name), ","))
		}
	}))
}

func claimedIP(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for _, name := range clientIPHeaders {
		req.Header.Set(name, "203.0.113.9")
	}
	_, body := send(t, req)
	return body
}

// X-Real-IP and the other headers that name the client are the peer's, or
// gone, from an untrusted peer, as X-Forwarded-For is; a trusted one's pass.
func TestClientAddressHeadersFollowTheTrustedProxies(t *testing.T) {
	upstream := clientIPSeen()
	defer upstream.Close()
	untrusted := newRig(t, upstream.URL, proxy.Config{})
	if got, want := claimedIP(t, untrusted.proxyURL+"/"),
		"X-Real-Ip=127.0.0.1 True-Client-Ip= X-Client-Ip= Cf-Connecting-Ip= Fastly-Client-Ip= X-Cluster-Client-Ip= "; got != want {
		t.Errorf("from an untrusted peer the upstream saw %q, want %q", got, want)
	}
	trusted := newRig(t, upstream.URL, proxy.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if got, want := claimedIP(t, trusted.proxyURL+"/"),
		"X-Real-Ip=203.0.113.9 True-Client-Ip=203.0.113.9 X-Client-Ip=203.0.113.9 Cf-Connecting-Ip=203.0.113.9 "+
			"Fastly-Client-Ip=203.0.113.9 X-Cluster-Client-Ip=203.0.113.9 "; got != want {
		t.Errorf("from a trusted peer the upstream saw %q, want %q", got, want)
	}
}

func TestUpstreamDownIs502AndRecorded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	r := newRig(t, down, proxy.Config{})
	resp, _ := send(t, mustRequest(t, http.MethodGet, r.proxyURL+"/health", ""))
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	if m := r.stored(t, 1)[0]; m.StatusCode != http.StatusBadGateway || m.Path != "/health" {
		t.Errorf("recorded %s %d, want /health 502", m.Path, m.StatusCode)
	}
}

func TestWebSocketsPassThrough(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.proxyURL, "http")+"/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
			t.Fatal(err)
		}
		if _, got, err := c.Read(ctx); err != nil || string(got) != "echo: "+text {
			t.Fatalf("read %q, %v; want the upstream's echo", got, err)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	if m := r.stored(t, 1)[0]; m.StatusCode != http.StatusSwitchingProtocols || m.Path != "/live" {
		t.Errorf("recorded %s %d, want the upgrade as 101", m.Path, m.StatusCode)
	}
}

func TestServerSentEventsStreamAsTheyCome(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release // the second event waits until the client has the first
		fmt.Fprint(w, "data: second\n\n")
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{})

	resp, err := http.Get(r.proxyURL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if line, err := lines.ReadString('\n'); err != nil || line != "data: first\n" {
		close(release)
		t.Fatalf("first line %q, %v: want it before the stream ends", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(lines)
	if string(rest) != "\ndata: second\n\n" {
		t.Errorf("rest %q", rest)
	}
	if m := r.stored(t, 1)[0]; m.Response.Body != "data: first\n\ndata: second\n\n" {
		t.Errorf("recorded body %q", m.Response.Body)
	}
}

// Large bodies stream through whole both ways; reqlog keeps a prefix of each
// and says they were cut.
func TestLargeBodiesStreamAndARecordedPrefixSaysItWasCut(t *testing.T) {
	const size = 8 << 20
	big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.New()
		n, err := io.Copy(sum, r.Body)
		if err != nil || n != size || !bytes.Equal(sum.Sum(nil), sha(big)) {
			http.Error(w, "upload damaged", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(big) // no Content-Length: chunked
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{MaxBodyBytes: 1024})

	req := mustRequest(t, http.MethodPut, r.proxyURL+"/files/big", "")
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(big)), size
	resp, body := send(t, req)
	if resp.StatusCode != http.StatusOK || !bytes.Equal([]byte(body), big) {
		t.Fatalf("status %d, %d bytes back: want the whole download", resp.StatusCode, len(body))
	}
	m := r.stored(t, 1)[0]
	wantReq := string(big[:1024]) + fmt.Sprintf("…[truncated by reqlog capture: %d bytes total]", size)
	if m.Request.Body != wantReq {
		t.Errorf("request body recorded as %d bytes ending %q", len(m.Request.Body), tail(m.Request.Body))
	}
	wantResp := string(big[:1024]) + fmt.Sprintf("…[truncated by reqlog capture: %d bytes total]", size)
	if m.Response.Body != wantResp {
		t.Errorf("response body recorded as %d bytes ending %q", len(m.Response.Body), tail(m.Response.Body))
	}
}

// A client that hangs up halfway through its upload: the upstream sees the
// request cut (never a shorter body presented as whole), nothing is stored, and
// the next request goes through.
func TestAClientThatHangsUpMidBodyLeavesNothingStored(t *testing.T) {
	upstreamReading, upstreamRead := make(chan struct{}), make(chan error, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upload" {
			first := make([]byte, 1)
			_, _ = io.ReadFull(r.Body, first)
			close(upstreamReading)
			_, err := io.ReadAll(r.Body)
			upstreamRead <- err
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %d bytes", len(body))
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{})

	conn, err := net.Dial("tcp", strings.TrimPrefix(r.proxyURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n%s", strings.Repeat("a", 5000))
	<-upstreamReading
	conn.Close()
	if err := <-upstreamRead; err == nil {
		t.Error("the upstream read a cut body as whole")
	}
	conformance.WaitFor(t, "the abandoned exchange to be counted", func() bool { return r.server.Stats().Abandoned == 1 })

	resp, body := send(t, mustRequest(t, http.MethodPost, r.proxyURL+"/after", "whole"))
	if resp.StatusCode != http.StatusOK || body != "got 5 bytes" {
		t.Fatalf("after: %d %q", resp.StatusCode, body)
	}
	msgs := r.stored(t, 1)
	if msgs[0].Path != "/after" {
		t.Errorf("stored %s, want only the whole request", msgs[0].Path)
	}
}

func TestMalformedRequestsNeverReachTheUpstream(t *testing.T) {
	reached := make(chan string, 10)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- r.Method + " " + r.Host + " " + r.URL.RequestURI()
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{})
	addr := strings.TrimPrefix(r.proxyURL, "http://")

	for _, raw := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12, 13\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
		"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT internal.example:22 HTTP/1.1\r\nHost: internal.example:22\r\n\r\n",
	} {
		status := rawStatus(t, addr, raw)
		if status < 400 || status >= 500 {
			t.Errorf("%q: status %d, want a 4xx", raw, status)
		}
	}
	// An absolute URL naming another host still goes to the upstream: the
	// proxy is no open proxy.
	if status := rawStatus(t, addr, "GET http://internal.example/secret HTTP/1.1\r\nHost: internal.example\r\n\r\n"); status != http.StatusOK {
		t.Errorf("absolute-form request: status %d", status)
	}
	if got := <-reached; !strings.HasSuffix(got, " /secret") || strings.Contains(got, "internal.example") {
		t.Errorf("upstream got %q, want the path on its own host", got)
	}
	select {
	case got := <-reached:
		t.Errorf("the upstream got a malformed request: %q", got)
	default:
	}
}

// The upstream's replies never wait for reqlog: with its storage stuck, the
// batch in hand and the queue fill, and exchanges beyond them are dropped and
// counted.
func TestRepliesNeverWaitForStorage(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer upstream.Close()
	stuck := stuckSubmitter(make(chan struct{}))
	defer close(stuck)
	cfg := proxy.Config{Addr: "127.0.0.1:0", Upstream: upstream.URL, Name: "shop", BufferSize: 2}
	s, err := proxy.NewServer(cfg, stuck, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // give up on the stuck submissions at once
		if err := s.Stop(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("stop: %v", err)
		}
	}()
	const n = 300
	for i := range n {
		resp, body := send(t, mustRequest(t, http.MethodGet, fmt.Sprintf("http://%s/%d", s.Addr(), i), ""))
		if resp.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	// The recorder's goroutine holds a batch of up to capture.DefaultBatchSize
	// while the submission is stuck; the queue holds BufferSize more.
	if st := s.Stats(); st.Captured != n || st.Dropped < n-capture.DefaultBatchSize-2 {
		t.Errorf("stats %+v, want %d captured and all but a batch and the queue dropped", st, n)
	}
}

// An event stream ends when its client goes away: the exchange is recorded as
// far as it went.
func TestAnEventStreamTheClientClosesIsRecorded(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // streams until the client leaves
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{})

	resp, err := http.Get(r.proxyURL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	resp.Body.Close() // the client leaves mid-stream
	m := r.stored(t, 1)[0]
	if m.StatusCode != http.StatusOK || m.Response.Body != "data: first\n\n" || m.Path != "/events" {
		t.Errorf("recorded %s %d %q", m.Path, m.StatusCode, m.Response.Body)
	}
}

// A card number and a token that straddle the body cap are read whole by the
// rules, which run before the cut: no part of either is stored, on either
// side, and the upstream and the client get the bodies untouched.
func TestASecretStraddlingTheCapIsNotKeptInPart(t *testing.T) {
	const limit = 256
	const card, token = "4111111111111111", "tok_Zq8Xv2LmN4pR7sT1"
	straddling := func(secret string) string { // the cap falls in its middle
		return strings.Repeat("a", limit-len(secret)/2) + " " + secret[:] + " tail"
	}
	reqBody := straddling(card)[1:] // one byte less: the space takes it
	respBody := straddling(token)[1:]
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, respBody)
	}))
	defer upstream.Close()
	r := newRigWithRules(t, upstream.URL, proxy.Config{MaxBodyBytes: limit}, `{"privacy": [
		{"id": "cards", "select": ["body.**"], "match": {"detector": "card_number"}, "action": {"type": "mask"}},
		{"id": "tokens", "select": ["body.**"], "match": {"pattern": "tok_[A-Za-z0-9]+"}, "action": {"type": "mask"}}]}`)
	if i := strings.Index(reqBody, card); i >= limit || i+len(card) <= limit {
		t.Fatalf("the card spans bytes %d to %d: it does not straddle %d", i, i+len(card), limit)
	}

	resp, body := send(t, mustRequest(t, http.MethodPost, r.proxyURL+"/pay", reqBody))
	if resp.StatusCode != http.StatusOK || body != respBody {
		t.Fatalf("status %d, body %q: want the upstream's reply untouched", resp.StatusCode, body)
	}
	m := r.stored(t, 1)[0]
	for _, stored := range []string{m.Request.Body, m.Response.Body} {
		for _, part := range []string{card[:6], card[len(card)-6:], token[:8], token[len(token)-6:]} {
			if strings.Contains(stored, part) {
				t.Errorf("stored body holds %q of a secret: %q", part, tail(stored))
			}
		}
		if len(stored) > limit+len("…[truncated by reqlog capture: 999 bytes total]") || !strings.Contains(stored, "…[truncated by reqlog capture: ") {
			t.Errorf("stored body is %d bytes ending %q: want it cut at %d with the marker", len(stored), tail(stored), limit)
		}
	}
}
