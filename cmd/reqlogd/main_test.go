package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/app"
)

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// roundTrip submits one message with key and returns it as listed.
func roundTrip(t *testing.T, base, key string) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"name":"shop","created_at":%d,"method":"GET","path":"/orders","request":{},"response":{"status_code":200}}`,
		time.Now().Unix())
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	var submitted struct {
		Data struct{ ID string }
	}
	if status := call(t, req, &submitted); status != http.StatusOK || submitted.Data.ID == "" {
		t.Fatalf("POST: status %d, id %q", status, submitted.Data.ID)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/v1/messages/"+submitted.Data.ID, nil)
	req.Header.Set("Authorization", key)
	var fetched struct {
		Data map[string]any
	}
	if status := call(t, req, &fetched); status != http.StatusOK || fetched.Data["id"] != submitted.Data.ID {
		t.Fatalf("GET: status %d, %v", status, fetched.Data)
	}
	return fetched.Data
}

// roundTripList lists the ids of the messages credential reads.
func roundTripList(t *testing.T, base, credential string) []any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/messages", nil)
	req.Header.Set("Authorization", "Bearer "+credential)
	var listed struct {
		Messages []map[string]any
	}
	if status := call(t, req, &listed); status != http.StatusOK {
		t.Fatalf("GET /v1/messages: status %d", status)
	}
	var ids []any
	for _, m := range listed.Messages {
		ids = append(ids, m["id"])
	}
	return ids
}

func call(t *testing.T, req *http.Request, into any) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	return resp.StatusCode
}

func TestGraphServesOverHTTP(t *testing.T) {
	cfg := defaultConfig()
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.App.VisibilityDelay = 0
	cfg.SQLite.Dir = t.TempDir()
	key, err := app.NewAPIKey("acme", "live", "rk_graph_test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keyring.Keys = []app.APIKey{key}
	graph, err := options(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var server *httpapi.Server
	svc := fxtest.New(t, graph, fx.Populate(&server))
	svc.RequireStart()
	msg := roundTrip(t, "http://"+server.Addr().String(), "rk_graph_test")
	if msg["domain"] != "live" || msg["name"] != "shop" {
		t.Errorf("fetched %v", msg)
	}
	svc.RequireStop()
}

func TestStoreRegistry(t *testing.T) {
	if _, err := storeModule(storeMemory, storeRegistry); err != nil {
		t.Fatalf("memory store: %v", err)
	}
	_, err := storeModule(storeMongoDB, storeRegistry[:1])
	var cfgErr *app.ConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Setting != "REQLOG_STORE" || !strings.Contains(err.Error(), "not available in this build") {
		t.Fatalf("missing store: %v", err)
	}
}

func TestInvalidConfigurationExitsWith2(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		setting string
	}{
		{[]string{"-retention", "soon"}, nil, "REQLOG_RETENTION"},
		{nil, map[string]string{"REQLOG_API_KEYS": "acme:prod:rk_hidden"}, "REQLOG_API_KEYS"},
		{nil, map[string]string{"REQLOG_STORE": "cassandra"}, "REQLOG_STORE"},
		{nil, map[string]string{"REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES": "-1"}, "REQLOG_ELASTICSEARCH_MAX_REQUEST_BYTES"},
		{nil, map[string]string{"REQLOG_PORTAL_SECRET": "rk_hidden"}, "REQLOG_PORTAL_SECRET"},
	} {
		var stdout, stderr bytes.Buffer
		// Should the configuration be accepted, the service starts and run never
		// returns: the deadline turns that into a failure, on a port of its own.
		env := map[string]string{"REQLOG_ADDR": "127.0.0.1:0"}
		maps.Copy(env, tc.env)
		exited := make(chan int, 1)
		go func() { exited <- run(tc.args, envOf(env), &stdout, &stderr) }()
		select {
		case code := <-exited:
			if code != exitConfig {
				t.Errorf("%v %v: exit code %d, want %d", tc.args, tc.env, code, exitConfig)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%v %v: the configuration was accepted and the service started", tc.args, tc.env)
		}
		if !strings.Contains(stderr.String(), tc.setting) || strings.Contains(stderr.String(), "rk_hidden") {
			t.Errorf("stderr %q should name %s and no key", stderr.String(), tc.setting)
		}
		if stdout.Len() != 0 {
			t.Errorf("stdout %q", stdout.String())
		}
	}
	var stdout bytes.Buffer
	if code := run([]string{"-h"}, envOf(nil), &stdout, io.Discard); code != exitOK || !strings.Contains(stdout.String(), "REQLOG_ADDR") {
		t.Errorf("-h: exit %d, usage %q", code, stdout.String())
	}
}

// devRun is run in the background, up to its development key banner.
type devRun struct {
	text, key, base string
	link            []string // the portal link and its token
	done            chan int
}

// startDev runs reqlogd with env and no key until it prints its development
// key banner.
func startDev(t *testing.T, env map[string]string) devRun {
	t.Helper()
	out, stdout := io.Pipe()
	r := devRun{done: make(chan int, 1)}
	go func() {
		defer stdout.Close()
		r.done <- run([]string{"-addr", "127.0.0.1:0", "-visibility-delay", "0", "-log-level", "error"}, envOf(env), stdout, io.Discard)
	}()
	var printed strings.Builder
	lines := bufio.NewScanner(out)
	for lines.Scan() { // up to the portal link
		printed.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "/portal#token=") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	r.text = printed.String()
	r.key = regexp.MustCompile(`rk_dev_[A-Z2-7]+`).FindString(r.text)
	r.base = regexp.MustCompile(`http://[^ ]+:\d+`).FindString(r.text)
	if r.key == "" || r.base == "" || !strings.Contains(r.text, "set REQLOG_API_KEYS in production") {
		t.Fatalf("development key banner:\n%s", r.text)
	}
	r.link = regexp.MustCompile(`http://\S+/portal#token=(rlp_\S+)`).FindStringSubmatch(r.text)
	if r.link == nil || !strings.HasPrefix(r.link[0], r.base+"/portal#") {
		t.Fatalf("no portal link on %s in the banner:\n%s", r.base, r.text)
	}
	return r
}

// stop sends the process SIGTERM and waits for run to exit cleanly.
func (r devRun) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-r.done:
		if code != exitOK {
			t.Fatalf("exit code %d after SIGTERM", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
	}
}

// The whole command on its default store: a development key printed once, a
// real round trip, and a clean exit on SIGTERM.
func TestRunWithDevelopmentKeyUntilSIGTERM(t *testing.T) {
	r := startDev(t, map[string]string{"REQLOG_SQLITE_DIR": t.TempDir()})
	if n := strings.Count(r.text, r.key); n != 3 {
		t.Errorf("the key appears %d times, want once plus in the two curl examples", n)
	}
	msg := roundTrip(t, r.base, r.key)
	if msg["domain"] != "test" {
		t.Errorf("the development key is not a test key: %v", msg)
	}
	// The portal link reads the whole development account: the message just sent.
	if got := roundTripList(t, r.base, r.link[1]); len(got) != 1 || got[0] != msg["id"] {
		t.Errorf("the portal link's token lists %v, want the submitted message %v", got, msg["id"])
	}
	r.stop(t)
}

// On the default store a restart keeps the messages, the generated key and
// the portal secret: the first run's key and portal link still read what it
// stored. Both are files of mode 0600 in the data directory.
func TestRestartKeepsMessagesKeyAndPortalLinks(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"REQLOG_SQLITE_DIR": dir}
	first := startDev(t, env)
	msg := roundTrip(t, first.base, first.key)
	first.stop(t)

	second := startDev(t, env)
	defer second.stop(t)
	if second.key != first.key {
		t.Errorf("the restart generated another development key")
	}
	for _, credential := range []string{first.key, first.link[1]} {
		if got := roundTripList(t, second.base, credential); len(got) != 1 || got[0] != msg["id"] {
			t.Errorf("after the restart, the first run's credential lists %v, want %v", got, msg["id"])
		}
	}
	for _, name := range []string{keptDevKeyName, keptPortalSecretName, keptRulesHashKeyName} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want a file of mode 0600", name, err, info.Mode().Perm())
		}
	}
}

// A reqlogd refused by the data directory's lock writes nothing into it: the
// directory is another process's, which configured its own key and portal
// secret.
func TestASecondReqlogdLeavesTheLockedDirectoryAlone(t *testing.T) {
	dir := t.TempDir()
	first, err := sqlite.New(t.Context(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	before, _ := os.ReadDir(dir)

	var stderr bytes.Buffer
	code := run([]string{"-addr", "127.0.0.1:0", "-log-level", "error"}, envOf(map[string]string{"REQLOG_SQLITE_DIR": dir}), io.Discard, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "in use by another reqlog") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming the lock", code, stderr.String())
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		var names []string
		for _, e := range after {
			names = append(names, e.Name())
		}
		t.Errorf("the data directory holds %v after the refused start, want only the first process's %d files", names, len(before))
	}
}

// A key typed where the account belongs makes the real account a short "key":
// start-up warns, naming the entry by position and neither field.
func TestShortKeysAreWarnedAboutByPosition(t *testing.T) {
	const secret = "s3cr3t-key-value-long"
	keys, err := app.ParseAPIKeys("acme:live:" + strings.Repeat("k", app.MinKeyLength) + "," + secret + ":test:acme")
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	warnShortKeys(zap.New(core), keys)
	warnings := logs.All()
	if len(warnings) != 1 || warnings[0].ContextMap()["entry"] != int64(2) {
		t.Fatalf("warnings %v, want one about entry 2", warnings)
	}
	if line := warnings[0].Message + fmt.Sprint(warnings[0].ContextMap()); strings.Contains(line, secret) || strings.Contains(line, "acme") {
		t.Errorf("the warning %q names a field of the entry", line)
	}
}

// A configured list replaces the defaults: start-up names the default masked
// headers and redacted fields it leaves out, and says when redaction is off.
func TestDroppedDefaultsAreWarnedAbout(t *testing.T) {
	for _, c := range []struct {
		name, headers, fields string
		want                  []string // one per warning, each in its message and fields
	}{
		{"defaults", "", "", nil},
		{"defaults and more", "Authorization,Proxy-Authorization,cookie,SET-COOKIE,x_api_key,X-Tenant-Token", "password,passwd,secret,client_secret,private_key,api_key,access_token,refresh_token,id_token,token,authorization,card_number,cvv,cvc,ssn,pin", nil},
		{"own lists", "X-Tenant-Token,Authorization", "pin,PassWord", []string{
			"REQLOG_MASKED_HEADERS [Proxy-Authorization Cookie Set-Cookie X-Api-Key]",
			"REQLOG_REDACTED_FIELDS [passwd secret client_secret private_key api_key access_token refresh_token id_token token authorization card_number cvv cvc ssn]"}},
		{"redaction off", "", "none", []string{"redaction is off"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			if c.headers != "" {
				env["REQLOG_MASKED_HEADERS"] = c.headers
			}
			if c.fields != "" {
				env["REQLOG_REDACTED_FIELDS"] = c.fields
			}
			cfg, err := loadConfig(nil, envOf(env))
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			warnDroppedDefaults(zap.New(core), cfg.App.Policy())
			var got []string
			for _, e := range logs.All() {
				got = append(got, e.Message+" "+fmt.Sprint(e.ContextMap()))
			}
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %d", got, len(c.want))
			}
			for i, want := range c.want {
				for _, part := range strings.SplitN(want, " ", 2) {
					if !strings.Contains(got[i], part) {
						t.Errorf("warning %q lacks %q", got[i], part)
					}
				}
			}
		})
	}
}
