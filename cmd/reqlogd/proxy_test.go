package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap/zaptest"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/proxy"
	"github.com/reqlog/reqlog/app"
)

// reqlogd fronting an application: its exchanges are stored as the proxy key's
// account and read back through the API, bodies included.
func TestProxyStoresThroughTheService(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ordered":%s}`, body)
	}))
	defer upstream.Close()

	var server *httpapi.Server
	var front *proxy.Server
	startGraph(t, map[string]string{
		"REQLOG_API_KEYS":       "acme:live:rk_proxy_test_key_1",
		"REQLOG_PROXY_UPSTREAM": upstream.URL,
		"REQLOG_PROXY_ADDR":     "127.0.0.1:0",
		"REQLOG_PROXY_NAME":     "shop",
		"REQLOG_PROXY_API_KEY":  "rk_proxy_test_key_1",
	}, &server, &front)

	resp, err := http.Post("http://"+front.Addr().String()+"/orders", "application/json", strings.NewReader(`{"sku":"b-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(reply) != `{"ordered":{"sku":"b-1"}}` {
		t.Fatalf("through the proxy: %d %s", resp.StatusCode, reply)
	}

	var listed struct{ Messages []map[string]any }
	deadline := time.After(10 * time.Second)
	poll := time.NewTicker(50 * time.Millisecond) // under the API's rate limit
	defer poll.Stop()
	for len(listed.Messages) == 0 {
		select {
		case <-deadline:
			t.Fatal("the exchange through the proxy never showed up")
		case <-poll.C:
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+server.Addr().String()+"/v1/messages?name=shop", nil)
		req.Header.Set("Authorization", "Bearer rk_proxy_test_key_1")
		if status := call(t, req, &listed); status != http.StatusOK {
			t.Fatalf("list: %d", status)
		}
	}
	if len(listed.Messages) != 1 {
		t.Fatalf("listed %d messages, want the one through the proxy", len(listed.Messages))
	}
	m := listed.Messages[0]
	if m["path"] != "/orders" || m["status_code"] != float64(200) || m["domain"] != "live" {
		t.Errorf("stored %v", m)
	}
	if req := m["request"].(map[string]any); req["body"] != `{"sku":"b-1"}` {
		t.Errorf("request body %v", req["body"])
	}
	if resp := m["response"].(map[string]any); resp["body"] != `{"ordered":{"sku":"b-1"}}` {
		t.Errorf("response body %v", resp["body"])
	}
}

// Without REQLOG_PROXY_UPSTREAM there is no proxy; with it and no usable key,
// start-up fails.
func TestProxyNeedsAKeyToStoreAs(t *testing.T) {
	cfg := defaultConfig()
	cfg.HTTP.Addr = "127.0.0.1:0"
	key, err := app.NewAPIKey("acme", "live", "rk_proxy_test_key_2")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keyring.Keys = []app.APIKey{key}
	graph, err := options(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var front *proxy.Server
	if err := fx.New(fx.NopLogger, graph, fx.Populate(&front)).Err(); err != nil || front != nil {
		t.Fatalf("no upstream: err %v, proxy %v; want no proxy", err, front)
	}
	cfg.Proxy.Upstream = "http://127.0.0.1:1"
	for _, apiKey := range []string{"", "rk_unknown_key_here"} {
		cfg.Proxy.APIKey = apiKey
		graph, err := options(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := fx.New(fx.NopLogger, graph, fx.Populate(&front)).Err(); err == nil || strings.Contains(err.Error(), "rk_unknown") {
			t.Errorf("key %q: err %v, want a refusal that does not echo the key", apiKey, err)
		}
	}
}

// startGraph starts reqlogd's graph on the settings of env, the API on a free
// port with no visibility delay and the default store in a temporary directory
// (never the package's own), fills targets (pointers, as fx.Populate) and stops
// it when the test ends.
func startGraph(t *testing.T, env map[string]string, targets ...any) {
	t.Helper()
	env = maps.Clone(env)
	env["REQLOG_ADDR"], env["REQLOG_VISIBILITY_DELAY"] = "127.0.0.1:0", "0"
	if _, ok := env["REQLOG_SQLITE_DIR"]; !ok {
		env["REQLOG_SQLITE_DIR"] = t.TempDir()
	}
	cfg, err := loadConfig(nil, envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	graph, err := options(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	svc := fxtest.New(t, graph, fx.Populate(targets...))
	svc.RequireStart()
	t.Cleanup(svc.RequireStop)
}
