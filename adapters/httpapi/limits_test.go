package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

// socketBuffer keeps the kernel from buffering megabytes on loopback, so the bytes
// a client manages to send show how much the server read.
const socketBuffer = 16 << 10

// smallBufferListener gives every accepted connection a small receive buffer.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetReadBuffer(socketBuffer)
	}
	return c, err
}

// countingReader yields n bytes of b and counts how many were taken.
type countingReader struct {
	b    byte
	left int64
	read atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.left))
	for i := range p[:n] {
		p[i] = r.b
	}
	r.left -= int64(n)
	r.read.Add(int64(n))
	return n, nil
}

// exchange writes req on a fresh connection to addr while reading the reply, as a
// client that keeps sending until the server hangs up would. It returns the reply
// and how many body bytes the client got to send.
func exchange(t *testing.T, addr string, req *http.Request, body *countingReader) (*http.Response, []byte, int64) {
	t.Helper()
	resp, reply := exchangeRaw(t, addr, req.Write)
	sent := int64(0)
	if body != nil {
		sent = body.read.Load()
	}
	return resp, reply, sent
}

// exchangeRaw is exchange for a request that write puts on the wire, byte for byte.
func exchangeRaw(t *testing.T, addr string, write func(io.Writer) error) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).SetWriteBuffer(socketBuffer)
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = write(conn) // fails once the server hangs up
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	reply, _ := io.ReadAll(resp.Body)
	conn.Close()
	<-written
	return resp, reply
}

func TestHugeBodiesAreRefusedWhileReading(t *testing.T) {
	const limit = 1 << 20
	const huge = 100 << 20
	ts := httptest.NewUnstartedServer(apiHandler(httpapi.Options{MaxBodyBytes: limit}))
	ts.Listener = smallBufferListener{ts.Listener}
	ts.Start()
	defer ts.Close()

	for _, c := range []struct {
		name          string
		contentLength int64
	}{
		{"declared", huge},
		{"chunked", -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &countingReader{b: '[', left: huge}
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/messages", body)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = c.contentLength
			req.Header.Set("Authorization", "Bearer "+liveKey)
			req.Header.Set("Content-Type", "application/json")
			resp, reply, sent := exchange(t, ts.Listener.Addr().String(), req, body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413: %s", resp.StatusCode, reply)
			}
			var e errorJSON
			if err := json.Unmarshal(reply, &e); err != nil || e.Status || !strings.Contains(e.Message, "1048576") {
				t.Errorf("reply %s is not an error envelope stating the limit", reply)
			}
			t.Logf("sent %d bytes", sent)
			if sent >= 2*limit {
				t.Errorf("the client sent %d bytes before the refusal; the limit is %d", sent, limit)
			}
		})
	}
}

func TestDeepNestingOverHTTP(t *testing.T) {
	srv := serveAPI(t, httpapi.Options{})
	for name, body := range map[string]string{
		"arrays":  strings.Repeat("[", 5_000_000),
		"objects": strings.Repeat(`{"a":`, 1_000_000),
	} {
		t.Run(name, func(t *testing.T) {
			resp, reply := callAPI(t, http.MethodPost, srv.URL+"/v1/messages", liveKey, body)
			var e errorJSON
			if err := json.Unmarshal(reply, &e); err != nil || resp.StatusCode != http.StatusBadRequest ||
				!strings.Contains(e.Message, "64 levels") {
				t.Errorf("status %d, reply %+v (%v); want 400 naming the depth limit", resp.StatusCode, e, err)
			}
		})
	}
}

func TestHeaderFloodIsRefused(t *testing.T) {
	s := httpapi.NewServer("127.0.0.1:0", apiHandler(httpapi.Options{}), nil, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr().String()+"/v1/messages", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+liveKey)
	for i := range 4000 {
		req.Header.Add("X-Flood", strings.Repeat("f", 40)+string(rune('a'+i%26)))
	}
	resp, reply, _ := exchange(t, s.Addr().String(), req, nil)
	var e errorJSON
	if err := json.Unmarshal(reply, &e); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge ||
		!strings.Contains(e.Message, "65536 bytes") {
		t.Errorf("status %d, reply %q for 160 KiB of headers; want 431 and a JSON error stating the limit", resp.StatusCode, reply)
	}
	// The server is still there for well-behaved clients.
	if status, _ := get(t, "http://"+s.Addr().String(), liveKey); status != http.StatusOK {
		t.Errorf("after the flood: %d", status)
	}
}

// An overloaded service refuses a submission from its headers: the body is not
// read, so the refusal costs no more than the headers did.
func TestOverloadIsRefusedBeforeTheBodyIsRead(t *testing.T) {
	handler, ingest := apiAdmitting(httpapi.Options{}, app.AdmissionOptions{Decoders: 1})
	busy, err := ingest.Admit(domain.Principal{Scope: domain.Scope{Account: "acme", Domain: "live"}}, app.IdempotencyKey{}, -1)
	if err != nil {
		t.Fatal(err)
	}
	post := func() (*httptest.ResponseRecorder, *countingReader) {
		body := &countingReader{b: ' ', left: 1 << 20}
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", body)
		req.Header.Set("Authorization", "Bearer "+liveKey)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec, body
	}
	rec, body := post()
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q with the only decoder busy; want 429 with Retry-After: %s",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if n := body.read.Load(); n != 0 {
		t.Errorf("the refused request's body was read (%d bytes)", n)
	}
	busy.Release()
	if rec, body = post(); rec.Code != http.StatusBadRequest || body.read.Load() == 0 {
		t.Errorf("with the decoder free: status %d after reading %d bytes, want the blank body read and refused with 400",
			rec.Code, body.read.Load())
	}
}

// A body declared over the limit is 413 even while the service is overloaded: a
// 429 would tell the client to send it again.
func TestDeclaredOversizeIsRefusedBeforeLoad(t *testing.T) {
	handler, ingest := apiAdmitting(httpapi.Options{MaxBodyBytes: 1000}, app.AdmissionOptions{Decoders: 1})
	busy, err := ingest.Admit(domain.Principal{Scope: domain.Scope{Account: "acme", Domain: "live"}}, app.IdempotencyKey{}, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release()
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(strings.Repeat(" ", 1001)))
	req.Header.Set("Authorization", "Bearer "+liveKey)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d for 1001 declared bytes of 1000 with the only decoder busy, want 413: %s", rec.Code, rec.Body)
	}
}

// A client slow to send its body holds no decoder: with one decoder, another
// submission is decoded and stored while the first body is still arriving.
func TestSlowBodyHoldsNoDecoder(t *testing.T) {
	handler, _ := apiAdmitting(httpapi.Options{}, app.AdmissionOptions{Decoders: 1, MaxWaiting: 1})
	post := func(ctx context.Context, body io.Reader) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/messages", body)
		req.Header.Set("Authorization", "Bearer "+liveKey)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	// Deadlines and a closed pipe, so that a regression fails the test instead
	// of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slowBody, feed := io.Pipe()
	slow := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := post(ctx, slowBody)
		slowBody.CloseWithError(errors.New("answered"))
		slow <- rec
	}()
	if _, err := feed.Write([]byte("[")); err != nil { // returns once the handler read it
		t.Fatalf("the handler did not read the slow body: %v", err)
	}
	if rec := post(ctx, strings.NewReader(submission(start))); rec.Code != http.StatusOK {
		t.Errorf("a submission while another body arrives slowly: %d %s, want 200", rec.Code, rec.Body)
	}
	if _, err := io.WriteString(feed, submission(start)+"]"); err != nil {
		t.Fatal(err)
	}
	feed.Close()
	if rec := <-slow; rec.Code != http.StatusOK {
		t.Errorf("the slow submission: %d %s, want 200", rec.Code, rec.Body)
	}
}
