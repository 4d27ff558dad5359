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
	waitFor(t, "the cut exchange to be counted as abandoned", func() bool { return r.server.Stats().Abandoned == 1 })
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
