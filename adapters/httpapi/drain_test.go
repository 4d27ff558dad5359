package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
)

// writeAllThenRead is a client as simple as Python's urllib: it writes the whole
// request, body included, and only then reads the reply. A server that refuses
// the body without reading it resets such a client's connection, and the client
// sees no reply at all.
func writeAllThenRead(t *testing.T, addr string, request []byte) (*http.Response, []byte, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetWriteBuffer(socketBuffer)
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	if _, err := conn.Write(request); err != nil {
		return nil, nil, fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the reply: %w", err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	return resp, reply, err
}

func TestOversizedBodyRefusalIsReadByAClientThatWritesFirst(t *testing.T) {
	const limit = 64 << 10
	ts := httptest.NewServer(apiHandler(httpapi.Options{MaxBodyBytes: limit}))
	defer ts.Close()

	// Past what net/http discards by itself (256 KiB). The server's socket may
	// buffer it all (no small buffers here: they make loopback slow): closing the
	// connection with those bytes unread resets it all the same.
	body := bytes.Repeat([]byte("["), 4<<20)
	for _, c := range []struct {
		name   string
		header string
	}{
		{"declared", fmt.Sprintf("Content-Length: %d\r\n", len(body))},
		{"chunked", "Transfer-Encoding: chunked\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var req bytes.Buffer
			fmt.Fprintf(&req, "POST /v1/messages HTTP/1.1\r\nHost: reqlog\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\n%s\r\n", liveKey, c.header)
			if c.name == "chunked" {
				// Just past the limit: a client that overshoots a little is answered too.
				chunk := body[:limit+(limit/2)]
				fmt.Fprintf(&req, "%x\r\n%s\r\n0\r\n\r\n", len(chunk), chunk)
			} else {
				req.Write(body)
			}
			resp, reply, err := writeAllThenRead(t, ts.Listener.Addr().String(), req.Bytes())
			if err != nil {
				t.Fatalf("the client did not get the refusal: %v", err)
			}
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413: %s", resp.StatusCode, reply)
			}
		})
	}
}

// A client that stops sending does not hold the connection: after the 413,
// what it sends is read for a bounded time only.
func TestOversizedBodyIsDrainedForABoundedTime(t *testing.T) {
	httpapi.SetDrainTimeoutForTest(t.Cleanup, 200*time.Millisecond)
	const limit = 64 << 10
	ts := httptest.NewServer(apiHandler(httpapi.Options{MaxBodyBytes: limit}))
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	// Declares 1 MiB, sends a tenth of it, then stalls without closing.
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: reqlog\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", liveKey, 1<<20)
	if _, err := conn.Write(bytes.Repeat([]byte("["), 100<<10)); err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("status %d, closing %v; want 413 and the connection closed", resp.StatusCode, resp.Close)
	}
	// The server hangs up once the drain's time is out, long before the guard.
	began := time.Now()
	if _, err := reader.ReadByte(); err == nil {
		t.Fatal("the server sent more after the 413")
	}
	if waited := time.Since(began); waited > 30*time.Second {
		t.Errorf("the server held the stalled connection for %v", waited)
	}
}
