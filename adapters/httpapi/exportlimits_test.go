package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// API keys of three accounts, for the export bounds.
const (
	globexKey  = "rk_live_GlobexKeyValue"
	initechKey = "rk_live_InitechKeyValue"
)

func threeAccounts() ports.KeyStore {
	return keyring.New([]keyring.Entry{
		{Account: "acme", Domain: "live", Digest: keyring.Digest(liveKey)},
		{Account: "globex", Domain: "live", Digest: keyring.Digest(globexKey)},
		{Account: "initech", Domain: "live", Digest: keyring.Digest(initechKey)},
	})
}

// exportStore serves endless exports of 256 KiB messages, a message a page; a
// query for the name "stall" instead waits until its caller's context ends,
// saying on held that it does. pages counts the pages served.
type exportStore struct {
	ports.MessageStore
	held  chan struct{}
	pages atomic.Int64
}

func newExportStore() *exportStore {
	return &exportStore{MessageStore: memory.New(), held: make(chan struct{}, 16)}
}

func (s *exportStore) List(ctx context.Context, q domain.Query, _ time.Time) (domain.Page, error) {
	if q.Filter.Name == "stall" {
		s.held <- struct{}{}
		<-ctx.Done()
		return domain.Page{}, fmt.Errorf("export store: %w", ctx.Err())
	}
	n := s.pages.Add(1)
	at := start.Add(-time.Duration(n) * time.Second)
	m := domain.Message{ID: fmt.Sprintf("01959000-0000-7000-8000-%012d", n), Reference: "msg_AAAAAAAAAAAA", Account: q.Scope.Account,
		Domain: q.Scope.Domain, Name: "shop", Method: "GET", Path: "/p", StatusCode: 200, CreatedAt: at, UpdatedAt: at,
		Response: domain.Content{Body: strings.Repeat("b", 256<<10)}}
	return domain.Page{Messages: []domain.Message{m}, HasMore: true}, nil
}

// getExport sends GET target with key on srv and returns the status and the reply,
// read to its end.
func getExport(t *testing.T, ctx context.Context, srv *httptest.Server, key, target string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}

// holdExport starts an export with key that waits in the store, and returns
// once it holds its slot; the function it returns makes its client go away.
func holdExport(t *testing.T, srv *httptest.Server, store *exportStore, key string) (leave func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = getExport(t, ctx, srv, key, "/v1/messages/export?name=stall")
	}()
	<-store.held
	return func() { cancel(); <-done }
}

// wantBusy fails unless an export with key is refused with 429 and Retry-After.
func wantBusy(t *testing.T, srv *httptest.Server, key, why string) {
	t.Helper()
	resp, err := getExport(t, context.Background(), srv, key, "/v1/messages/export?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("%s: %d, Retry-After %q; want 429 with Retry-After", why, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// awaitExport polls until an export with key is answered 200.
func awaitExport(t *testing.T, srv *httptest.Server, key, why string) {
	t.Helper()
	var resp *http.Response
	var err error
	await(t, func() bool {
		resp, err = getExport(t, context.Background(), srv, key, "/v1/messages/export?limit=1")
		return err == nil && resp.StatusCode == http.StatusOK
	}, func() string { return fmt.Sprintf("%s: exports are still refused (%v, %v)", why, resp, err) })
}

// The N+1th concurrent export of a key is a 429 with Retry-After while other
// keys still export; past the process's bound every key is refused; a slot
// returns when its client goes away.
func TestExportsAreBoundedPerKeyAndInAll(t *testing.T) {
	store := newExportStore()
	// The store holds each export inside its page's read, a walk: with walk
	// turns off only the export limits bound them (app.WalkLimits would let
	// acme's second export wait for its turn instead).
	f := newFixture(t, setup{store: store, keys: threeAccounts(), walks: &app.WalkLimits{},
		exports: httpapi.ExportLimits{PerKey: 2, Total: 3, MinRate: 1 << 10, Stall: time.Minute}})
	srv := httptest.NewServer(f.handler)
	defer srv.Close()

	leaveAcme1 := holdExport(t, srv, store, liveKey)
	leaveAcme2 := holdExport(t, srv, store, liveKey)
	wantBusy(t, srv, liveKey, "acme's third export")
	newOpenAPIChecker(t, srv).check(t, openAPICase{method: http.MethodGet, target: "/v1/messages/export?limit=1", status: http.StatusTooManyRequests, requestValid: true})
	if resp, err := getExport(t, context.Background(), srv, globexKey, "/v1/messages/export?limit=3"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another key, while acme is at its bound: %v, %v", resp, err)
	}
	leaveGlobex := holdExport(t, srv, store, globexKey)
	wantBusy(t, srv, initechKey, "a third key with the process at its bound")
	wantBusy(t, srv, liveKey, "acme, still at its bound")

	leaveAcme1() // its client goes away: the slot returns, to acme and to the process
	awaitExport(t, srv, liveKey, "after one of acme's clients went away")
	if resp, err := getExport(t, context.Background(), srv, initechKey, "/v1/messages/export?limit=1"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a third key, with the process below its bound again: %v, %v", resp, err)
	}
	leaveGlobex()
	leaveAcme2()
}

// sendBufferListener gives every accepted connection a small send buffer, so a
// stalled reader blocks the server's writes after kilobytes, not megabytes.
type sendBufferListener struct{ net.Listener }

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(socketBuffer)
	}
	return c, err
}

// A reader that stops reading is cut once its writes stall past the bound, its
// slot returns, and what it got lacks the reply's end, so it cannot take it for
// a whole export.
func TestStalledExportReaderIsCut(t *testing.T) {
	store := newExportStore()
	f := newFixture(t, setup{store: store, keys: threeAccounts(),
		exports: httpapi.ExportLimits{PerKey: 1, Total: 4, MinRate: 1 << 20, Stall: time.Second}})
	srv := httptest.NewUnstartedServer(f.handler)
	srv.Listener = sendBufferListener{srv.Listener}
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(socketBuffer)
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	if _, err := fmt.Fprintf(conn, "GET /v1/messages/export?limit=1000 HTTP/1.1\r\nHost: reqlog\r\nAuthorization: Bearer %s\r\n\r\n", liveKey); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing now. Once the export has started its slot is
	// taken; it returns when the stalled writes are cut, a second later.
	await(t, func() bool { return store.pages.Load() > 0 }, func() string { return "the export did not start" })
	wantBusy(t, srv, liveKey, "a second export while the first one runs")
	awaitExport(t, srv, liveKey, "after the stalled reader was cut")
	if n := f.logs.FilterMessageSnippet("export cut: its client read more slowly").Len(); n != 1 {
		t.Errorf("%d log lines of a cut export, want 1: %v", n, f.logs.All())
	}
	if pages := store.pages.Load(); pages > 200 {
		t.Errorf("the stalled export read %d pages of 256 KiB from the store", pages)
	}

	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the stalled client could not read the reply's start: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("the stalled client read %d, %d bytes, %v; want 200 and an unexpected EOF", resp.StatusCode, len(body), err)
	}
}
