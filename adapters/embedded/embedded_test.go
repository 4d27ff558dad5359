package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/reqlog/reqlog/adapters/capture"
	"github.com/reqlog/reqlog/adapters/embedded"
	"github.com/reqlog/reqlog/adapters/httpclient"
	"github.com/reqlog/reqlog/adapters/keyring"
	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/adapters/portal"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// holdDirEnv makes the test binary a process that holds a core on the data
// directory it names until its standard input closes.
const holdDirEnv = "EMBEDDED_TEST_HOLD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdDirEnv); dir != "" {
		os.Exit(holdDir(dir))
	}
	goleak.VerifyTestMain(m)
}

const key = "rk_shop_live_embedded_test_key"

var shop = domain.Scope{Account: "shop", Domain: domain.DomainLive}

// openCore opens a SQLite store in dir and a core on it, read-only under
// /logs with the portal, messages readable at once.
func openCore(ctx context.Context, dir string, edit func(*embedded.Options)) (*embedded.Core, error) {
	store, err := sqlite.New(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		return nil, err
	}
	cfg := app.DefaultConfig()
	cfg.VisibilityDelay = 0
	opts := embedded.Options{
		Store:    store,
		Keys:     keyring.New([]keyring.Entry{{Account: shop.Account, Domain: shop.Domain, Digest: keyring.Digest(key)}}),
		Scope:    shop,
		BasePath: "/logs",
		ReadOnly: true,
		Portal:   &portal.Config{},
		App:      &cfg,
		Capture:  capture.Options{Name: func(*http.Request) string { return "shop" }},
	}
	if edit != nil {
		edit(&opts)
	}
	core, err := embedded.New(ctx, opts)
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	return core, nil
}

// shopServer is an application's server with the core mounted at /logs and
// its own routes captured.
func shopServer(t *testing.T, core *embedded.Core) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{who}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.PathValue("who"))
	})
	mux.Handle("/logs/", core.Handler())
	srv := httptest.NewServer(core.Capture(mux))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// messagesOf lists what the API under base returns to key, polled until want
// arrive (captures are stored in the background).
func messagesOf(t *testing.T, base, key string, want int) []httpclient.Message {
	t.Helper()
	client, err := httpclient.New(base, key)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var got []httpclient.Message
		for m, err := range client.All(t.Context(), httpclient.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		if len(got) >= want {
			return got
		}
		select {
		case <-deadline:
			return got
		case <-tick.C:
		}
	}
}

func closeCore(t *testing.T, core *embedded.Core) {
	t.Helper()
	if err := core.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// The embedder's routes are captured, the API and the portal answer under
// /logs with /logs in their links, nothing of reqlog's own is captured, and a
// read-only mount takes no submission but still gives portal sessions.
func TestCaptureAndReadUnderTheBasePath(t *testing.T) {
	core, err := openCore(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := shopServer(t, core)
	if status, body := get(t, srv.URL+"/hello/gopher"); status != http.StatusOK || body != "hello, gopher" {
		t.Fatalf("GET /hello/gopher: %d %q", status, body)
	}
	got := messagesOf(t, srv.URL+"/logs", key, 1)
	if len(got) != 1 || got[0].Path != "/hello/gopher" || got[0].Name != "shop" || got[0].Route != "/hello/{who}" {
		t.Fatalf("messages %+v, want the one GET /hello/gopher of shop on route /hello/{who}", got)
	}

	client, err := httpclient.New(srv.URL+"/logs", key)
	if err != nil {
		t.Fatal(err)
	}
	session, err := client.CreatePortalSession(t.Context(), "shop", time.Hour)
	if err != nil || !strings.HasPrefix(session.URL, srv.URL+"/logs/portal#token=") {
		t.Fatalf("portal session %+v, %v; want a link under %s/logs/portal", session, err, srv.URL)
	}
	if status, body := get(t, srv.URL+"/logs/portal"); status != http.StatusOK || !strings.Contains(body, `src="portal/app.js"`) {
		t.Errorf("GET /logs/portal: %d %.100q", status, body)
	}
	if _, err := client.SubmitExchanges(t.Context(), []domain.Exchange{{Name: "shop", Method: "GET", Path: "/x",
		CreatedAt: time.Now(), Response: domain.ExchangeResponse{StatusCode: 200}}}); err == nil {
		t.Error("a read-only mount took a submission")
	}
	if status, _ := get(t, srv.URL+"/logs/metrics"); status != http.StatusNotFound {
		t.Errorf("GET /logs/metrics: %d, want 404 (metrics are off)", status)
	}
	if status, _ := get(t, srv.URL+"/logs/healthz"); status != http.StatusOK {
		t.Errorf("GET /logs/healthz: %d", status)
	}
	closeCore(t, core)
	if stats := core.CaptureStats(); stats.Captured != 1 || stats.Submitted != 1 {
		t.Errorf("capture stats %+v: want only GET /hello/gopher captured and stored", stats)
	}
}

// Two cores in one process, each on its own directory, with their metrics
// on one registry: neither sees the other's messages.
func TestTwoCoresOnTwoDirectories(t *testing.T) {
	reg := prometheus.NewRegistry()
	var servers [2]*httptest.Server
	var cores [2]*embedded.Core
	for i := range cores {
		core, err := openCore(t.Context(), t.TempDir(), func(o *embedded.Options) {
			o.Metrics = prometheus.WrapRegistererWith(prometheus.Labels{"core": strconv.Itoa(i)}, reg)
		})
		if err != nil {
			t.Fatalf("core %d: %v", i, err)
		}
		cores[i], servers[i] = core, shopServer(t, core)
	}
	get(t, servers[0].URL+"/hello/zero")
	get(t, servers[1].URL+"/hello/one")
	get(t, servers[1].URL+"/hello/two")
	for i, want := range [][]string{{"/hello/zero"}, {"/hello/two", "/hello/one"}} {
		got := messagesOf(t, servers[i].URL+"/logs", key, len(want))
		var paths []string
		for _, m := range got {
			paths = append(paths, m.Path)
		}
		if strings.Join(paths, " ") != strings.Join(want, " ") {
			t.Errorf("core %d holds %v, want %v", i, paths, want)
		}
	}
	for _, core := range cores {
		closeCore(t, core)
	}
	if families, _ := reg.Gather(); len(families) != 0 {
		t.Errorf("the closed cores left %d metric families on the registry", len(families))
	}
}

// A directory another process holds is refused with the lock's message, which
// names that process.
func TestADirectoryAnotherProcessHoldsIsRefused(t *testing.T) {
	dir := t.TempDir()
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), holdDirEnv+"="+dir)
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = holder.Wait() })
	ready := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		t.Fatalf("the holder did not open the directory: %q, %v", ready, err)
	}

	_, err = openCore(t.Context(), dir, nil)
	want := fmt.Sprintf("in use by another reqlog (pid %d)", holder.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a core on a held directory: %v; want an error saying %q", err, want)
	}
}

// holdDir is the other process of TestADirectoryAnotherProcessHoldsIsRefused.
func holdDir(dir string) int {
	ctx := context.Background()
	core, err := openCore(ctx, dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := core.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// After Close every door says so, and no goroutine of the core is left.
func TestUseAfterClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	dir := t.TempDir()
	core, err := openCore(t.Context(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeCore(t, core)
	if err := core.Close(t.Context()); !errors.Is(err, embedded.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}

	rec := httptest.NewRecorder()
	core.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/logs/v1/messages", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "reqlog is shut down") {
		t.Errorf("Handler after Close: %d %s", rec.Code, rec.Body)
	}
	_, err = core.Submitter().SubmitExchanges(t.Context(), []domain.Exchange{{Method: "GET", Path: "/"}})
	if !errors.Is(err, embedded.ErrClosed) || !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Submitter after Close: %v, want ErrClosed", err)
	}
	rec = httptest.NewRecorder()
	core.Capture(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hello", nil))
	if stats := core.CaptureStats(); rec.Body.String() != "ok" || stats.Dropped != 1 {
		t.Errorf("Capture after Close: served %q, stats %+v; want the reply and one dropped", rec.Body, stats)
	}
	goleak.VerifyNone(t, before)

	// The directory is free again.
	again, err := openCore(t.Context(), dir, nil)
	if err != nil {
		t.Fatalf("reopening after Close: %v", err)
	}
	closeCore(t, again)
}

// Bad options are refused by name before anything runs.
func TestNewRefusesBadOptions(t *testing.T) {
	store := sqliteStore(t)
	for name, opts := range map[string]embedded.Options{
		"no store":  {Scope: shop},
		"no scope":  {Store: store},
		"bad scope": {Store: store, Scope: domain.Scope{Account: "shop", Domain: "prod"}},
		"base path": {Store: store, Scope: shop, BasePath: "logs"},
		"config":    {Store: store, Scope: shop, App: &app.Config{}},
		"portal":    {Store: store, Scope: shop, Portal: &portal.Config{Secret: []byte("short")}},
	} {
		if core, err := embedded.New(t.Context(), opts); err == nil {
			t.Errorf("%s: accepted", name)
			closeCore(t, core)
		}
	}
}

func sqliteStore(t *testing.T) *sqlite.Store {
	t.Helper()
	store, err := sqlite.New(t.Context(), sqlite.Config{Dir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// The account's rule set, saved through the mounted API, rules what Capture
// stores at once.
func TestRuleSetsRuleCaptures(t *testing.T) {
	core, err := openCore(t.Context(), t.TempDir(), func(o *embedded.Options) { o.RuleSets = memory.NewRuleSetStore() })
	if err != nil {
		t.Fatal(err)
	}
	defer closeCore(t, core)
	srv := shopServer(t, core)
	client, err := httpclient.New(srv.URL+"/logs", key)
	if err != nil {
		t.Fatal(err)
	}
	drop := rules.RuleSet{Privacy: []rules.PrivacyRule{{ID: "token", Select: []string{"query.token"}, Action: rules.Action{Type: rules.ActionRemove}}}}
	if _, err := client.ReplaceRules(t.Context(), drop, 0, "no tokens in logs"); err != nil {
		t.Fatalf("a read-only mount still manages rule sets: %v", err)
	}
	get(t, srv.URL+"/hello/gopher?token=s3cret&page=2")
	got := messagesOf(t, srv.URL+"/logs", key, 1)
	if len(got) != 1 || got[0].Path != "/hello/gopher?page=2" {
		t.Fatalf("messages %+v, want /hello/gopher without its token", got)
	}
}
