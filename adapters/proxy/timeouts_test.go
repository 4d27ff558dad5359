package proxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/conformance"
)

// silentUpstream accepts connections, reads what comes and never answers.
func silentUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// An upstream that accepts and never answers: the client gets a 504 once the
// response header timeout has passed, and the exchange is recorded as such.
func TestAnUpstreamThatNeverAnswersIs504AndRecorded(t *testing.T) {
	r := newRig(t, silentUpstream(t), proxy.Config{ResponseHeaderTimeout: 200 * time.Millisecond})
	resp, body := send(t, mustRequest(t, http.MethodPost, r.proxyURL+"/slow", "order"))
	if resp.StatusCode != http.StatusGatewayTimeout || body == "" {
		t.Fatalf("status %d %q, want a 504 saying why", resp.StatusCode, body)
	}
	if m := r.stored(t, 1)[0]; m.StatusCode != http.StatusGatewayTimeout || m.Path != "/slow" || m.Response.Body != body {
		t.Errorf("recorded %s %d %q, want /slow 504 with the reply's body", m.Path, m.StatusCode, m.Response.Body)
	}
}

// A client that opens a connection and sends its headers slower than the
// header timeout allows is cut; so is one that stops sending its body.
func TestSlowClientsAreCut(t *testing.T) {
	upstreamRead := make(chan error, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		upstreamRead <- err
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{ReadHeaderTimeout: 100 * time.Millisecond, BodyReadTimeout: 100 * time.Millisecond})
	addr := strings.TrimPrefix(r.proxyURL, "http://")

	headers, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer headers.Close()
	fmt.Fprint(headers, "GET / HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	if err := closedByPeer(headers); err != nil {
		t.Errorf("a client that never ends its headers: %v", err)
	}

	body, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	fmt.Fprint(body, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nfirst bytes")
	select {
	case err := <-upstreamRead:
		if err == nil {
			t.Error("the upstream read a cut body as whole")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream is still reading the body: the client was never cut")
	}
	if err := closedByPeer(body); err != nil {
		t.Errorf("a client that stops sending its body: %v", err)
	}
	conformance.WaitFor(t, "the cut exchange to be counted as abandoned", func() bool { return r.server.Stats().Abandoned == 1 })
}

// closedByPeer reads from c until the other side closes it, within a deadline
// far beyond the timeouts under test (a safety net, not the assertion).
func closedByPeer(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var timeout net.Error
	if errors.As(err, &timeout) && timeout.Timeout() {
		return errors.New("still open")
	}
	return nil
}

// Past MaxInFlight requests being proxied, a new one gets 503 with
// Retry-After at once, and is not sent upstream; when one ends, the next
// goes through.
func TestRequestsBeyondTheBoundAre503(t *testing.T) {
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/held" {
			arrived <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "ok")
	}))
	defer upstream.Close()
	r := newRig(t, upstream.URL, proxy.Config{MaxInFlight: 2})

	held := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(r.proxyURL + "/held")
			if err != nil {
				held <- 0
				return
			}
			resp.Body.Close()
			held <- resp.StatusCode
		}()
		<-arrived
	}
	resp, body := send(t, mustRequest(t, http.MethodGet, r.proxyURL+"/third", ""))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request: %d, Retry-After %q, %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if got := r.server.Refused(); got != 1 {
		t.Errorf("refused count %d, want 1", got)
	}
	close(release)
	for range 2 {
		if status := <-held; status != http.StatusOK {
			t.Errorf("a held request ended with %d", status)
		}
	}
	if resp, body := send(t, mustRequest(t, http.MethodGet, r.proxyURL+"/after", "")); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("after the held ones: %d %q", resp.StatusCode, body)
	}
	if n := len(r.stored(t, 3)); n != 3 {
		t.Errorf("stored %d exchanges, want the two held and the one after (the refused one is not recorded)", n)
	}
}

// A reply that trickles on, or stalls with the stream left open, is recorded
// once it has been read for MaxBodyReadTime, while it still streams, its body
// marked as cut; the client gets all of it.
func TestAReplyStreamingPastTheTimeLimitIsRecordedWhileItStreams(t *testing.T) {
	for _, c := range []struct {
		name  string
		every time.Duration // between two events; 0: one event, then nothing until the end
	}{{"trickles", 5 * time.Millisecond}, {"stalls", 0}} {
		t.Run(c.name, func(t *testing.T) { testAReplyStreamingPastTheTimeLimit(t, c.every) })
	}
}

func testAReplyStreamingPastTheTimeLimit(t *testing.T, every time.Duration) {
	stop := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		var tick <-chan time.Time
		if every > 0 {
			ticker := time.NewTicker(every)
			defer ticker.Stop()
			tick = ticker.C
		}
		for i := 0; ; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-stop:
				fmt.Fprint(w, "data: end\n\n")
				return
			case <-r.Context().Done():
				return
			case <-tick:
			}
		}
	}))
	t.Cleanup(upstream.Close)
	r := newRig(t, upstream.URL, proxy.Config{MaxBodyReadTime: 50 * time.Millisecond})
	var once sync.Once
	end := func() { once.Do(func() { close(stop) }) }
	t.Cleanup(end) // first: the proxy's Stop and the upstream's Close wait for the stream

	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(r.proxyURL + "/events")
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		got <- string(body)
	}()
	m := r.stored(t, 1)[0] // before the reply ends: stop is not closed yet
	end()
	if body := <-got; !strings.HasPrefix(body, "data: 0\n\n") || !strings.HasSuffix(body, "data: end\n\n") {
		t.Errorf("the client got %q, want the whole stream", tail(body))
	}
	if m.StatusCode != http.StatusOK || !strings.Contains(m.Response.Body, "…[truncated by reqlog capture: the body took longer than 50ms, ") {
		t.Errorf("recorded %d %q, want 200 with the body marked cut by time", m.StatusCode, tail(m.Response.Body))
	}
}

// A request body that trickles past MaxBodyReadTime reaches the upstream
// whole; its record keeps none of what came after, nor the last bytes
// before, where a secret split by the cut would be.
func TestATricklingRequestBodyIsRecordedCut(t *testing.T) {
	const first, second = "card=4111111111111111&", "token=tok_late_9f8e7d"
	firstRead, received := make(chan struct{}), make(chan string, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64)
		var body []byte
		for {
			n, err := r.Body.Read(buf)
			if len(body) == 0 && n > 0 {
				close(firstRead)
			}
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
		received <- string(body)
		fmt.Fprintf(w, "got %d bytes", len(body))
	}))
	defer upstream.Close()
	const limit = 50 * time.Millisecond
	r := newRig(t, upstream.URL, proxy.Config{MaxBodyReadTime: limit})

	pr, pw := io.Pipe()
	req := mustRequest(t, http.MethodPost, r.proxyURL+"/pay", "")
	req.Body = pr
	replied := make(chan int, 1)
	go func() {
		resp, _ := send(t, req)
		replied <- resp.StatusCode
	}()
	if _, err := io.WriteString(pw, first); err != nil {
		t.Fatal(err)
	}
	<-firstRead
	readSince := time.Now() // the proxy's capture started before: its time is up after limit
	conformance.WaitFor(t, "the body's read time to pass", func() bool { return time.Since(readSince) > limit })
	if _, err := io.WriteString(pw, second); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if status := <-replied; status != http.StatusOK {
		t.Fatalf("status %d, want 200", status)
	}
	if body := <-received; body != first+second {
		t.Errorf("the upstream got %q, want the whole body", body)
	}
	m := r.stored(t, 1)[0]
	want := fmt.Sprintf("…[truncated by reqlog capture: the body took longer than 50ms, %d bytes read]", len(first))
	if m.Request.Body != want {
		t.Errorf("recorded %q, want %q", m.Request.Body, want)
	}
}
